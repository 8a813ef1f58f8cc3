// Per-process VRAM of amdgpu from /proc/PID/fdinfo: the parser on the kernel's formats (old and
// new keys, units, junk), the /proc walk over the fixture tree (dup()ed fds once, other drivers
// and non-DRM files ignored), the scanner that walks /proc only every few seconds, and the amdgpu
// sampler reporting the processes per GPU.

#include "kiln/gpu/amd_fdinfo.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "kiln/gpu/telemetry.h"

namespace kiln::gpu {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

fs::path mi250() { return fs::path(KILN_SOURCE_DIR) / "tests/data/gpu/amd-mi250"; }

TEST(DrmFdinfo, ParsesTheLegacyAmdgpuKeys) {
  auto client = parse_drm_fdinfo(
      "pos:\t0\nflags:\t02100002\nmnt_id:\t26\nino:\t1005\ndrm-driver:\tamdgpu\n"
      "drm-pdev:\t0000:C3:00.0\ndrm-client-id:\t7\ndrm-engine-gfx:\t123456 ns\n"
      "drm-memory-vram:\t2097152 KiB\ndrm-memory-gtt:\t4096 KiB\n");
  ASSERT_TRUE(client);
  EXPECT_EQ(client->driver, "amdgpu");
  EXPECT_EQ(client->pdev, "0000:c3:00.0");
  EXPECT_EQ(client->client_id, 7u);
  EXPECT_EQ(client->vram_bytes, 2097152ULL * 1024);
}

TEST(DrmFdinfo, PrefersResidentOverTotalAndReadsUnits) {
  auto client = parse_drm_fdinfo(
      "drm-driver:\tamdgpu\ndrm-total-vram:\t1 GiB\ndrm-resident-vram:\t512 MiB\n");
  ASSERT_TRUE(client);
  EXPECT_EQ(client->vram_bytes, 512ULL << 20);
  EXPECT_EQ(parse_drm_fdinfo("drm-driver: amdgpu\ndrm-total-vram: 4096\n")->vram_bytes, 4096u)
      << "no unit: bytes";
  EXPECT_EQ(parse_drm_fdinfo("drm-driver:\tamdgpu\ndrm-memory-vram:\t3 KiB\n"
                             "drm-total-vram:\t9 KiB\n")
                ->vram_bytes,
            3072u)
      << "amdgpu's own key before the common total";
}

TEST(DrmFdinfo, JunkIsSkippedNotFatal) {
  EXPECT_FALSE(parse_drm_fdinfo("pos:\t0\nflags:\t0100002\n")) << "not a DRM file";
  EXPECT_FALSE(parse_drm_fdinfo(""));
  auto client = parse_drm_fdinfo(
      "drm-driver:\tamdgpu\ndrm-client-id:\tseven\ndrm-memory-vram:\t12 PiB\nno colon\n"
      "drm-total-vram:\t99999999999999999999 KiB\n");
  ASSERT_TRUE(client);
  EXPECT_FALSE(client->client_id);
  EXPECT_FALSE(client->vram_bytes) << "an unknown unit and an overflow are no readings";
  EXPECT_FALSE(parse_drm_fdinfo("drm-driver:\t\n")) << "an empty driver is no client";
}

TEST(AmdgpuProcessMemory, WalksProcLikeTheKernelLaysItOut) {
  auto memory = read_amdgpu_process_memory(mi250());
  ASSERT_EQ(memory.size(), 2u) << "GCD0 and GCD2; the i915 client and /dev/null do not count";
  EXPECT_EQ(memory["0000:03:00.0"], (std::vector<GpuProcess>{{4242, 2048}, {5151, 3072}}))
      << "pid 4242's two fds of one client count once";
  EXPECT_EQ(memory["0000:83:00.0"], (std::vector<GpuProcess>{{4242, 512}}))
      << "resident VRAM, not total";
  EXPECT_TRUE(read_amdgpu_process_memory(mi250() / "no-such-root").empty());
}

TEST(AmdgpuProcessMemory, TheSamplerGivesEachGpuItsProcesses) {
  auto sampler = make_amd_sysfs_sampler(mi250());
  auto samples = sampler->sample({0, 1, 2, 3}, 5s);
  ASSERT_TRUE(samples) << samples.error().message;
  ASSERT_EQ(samples->size(), 4u);
  EXPECT_EQ((*samples)[0].processes, (std::vector<GpuProcess>{{4242, 2048}, {5151, 3072}}));
  EXPECT_TRUE((*samples)[1].processes.empty());
  EXPECT_EQ((*samples)[2].processes, (std::vector<GpuProcess>{{4242, 512}}));
  EXPECT_TRUE((*samples)[3].processes.empty());
}

// A /proc tree in a temporary directory that a test changes between reads.
class ScannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kiln-fdinfo-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(root_);
  }
  void client(int pid, int fd, std::uint64_t kib) {
    fs::path process = root_ / "proc" / std::to_string(pid);
    fs::create_directories(process / "fd");
    fs::create_directories(process / "fdinfo");
    std::error_code ec;
    fs::create_symlink("/dev/dri/renderD128", process / "fd" / std::to_string(fd), ec);
    std::ofstream(process / "fdinfo" / std::to_string(fd))
        << "pos:\t0\ndrm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t" << pid
        << "\ndrm-memory-vram:\t" << kib << " KiB\n";
  }
  std::vector<GpuProcess> on_gpu(AmdgpuProcessScanner& scanner) {
    auto memory = scanner.read();
    return memory["0000:03:00.0"];
  }
  fs::path root_;
};

TEST_F(ScannerTest, ReReadsKnownClientsAndWalksAgainOnlyAfterTheInterval) {
  client(100, 3, 1024);
  AmdgpuProcessScanner scanner(root_, std::chrono::hours(1));
  EXPECT_EQ(on_gpu(scanner), (std::vector<GpuProcess>{{100, 1}}));
  client(100, 3, 4096);  // the known client's memory changes: seen at once
  client(200, 5, 2048);  // a new client: not until the next walk
  EXPECT_EQ(on_gpu(scanner), (std::vector<GpuProcess>{{100, 4}}));
  fs::remove_all(root_ / "proc" / "100");  // an exited process drops out at once
  EXPECT_TRUE(on_gpu(scanner).empty());

  AmdgpuProcessScanner walking(root_, std::chrono::milliseconds(0));
  EXPECT_EQ(on_gpu(walking), (std::vector<GpuProcess>{{200, 2}})) << "a walk finds the new one";
}

}  // namespace
}  // namespace kiln::gpu
