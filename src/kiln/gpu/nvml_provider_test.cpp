#include "kiln/gpu/nvml_provider.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

TEST(Nvml, AMissingLibraryIsAnErrorNotACrash) {
  NvmlProvider provider("libnvidia-ml-does-not-exist.so.1");
  EXPECT_EQ(provider.name(), "nvml");
  auto inv = provider.inventory(5s);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().code, ErrorCode::unsupported);
  EXPECT_NE(inv.error().message.find("NVML is not available: libnvidia-ml-does-not-exist.so.1"),
            std::string::npos)
      << inv.error().message;
}

TEST(Nvml, ALibraryWithoutTheSymbolsIsRejected) {
  auto api = load_nvml("libm.so.6");
  ASSERT_FALSE(api);
  EXPECT_EQ(api.error().code, ErrorCode::unsupported);
  EXPECT_EQ(api.error().message, "NVML is not available: libm.so.6 has no symbol nvmlInit_v2");
}

class FakeNvml : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("FAKE_NVML_INIT_RC");
    unsetenv("FAKE_NVML_HANG_MS");
    // One directory per test process: ctest runs these tests in parallel.
    std::string pattern = (fs::temp_directory_path() / "kiln-gpu-nvml-sysfs-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = pattern;
    fs::create_directories(root_ / "sys/bus/pci/devices/0000:28:00.0");
    std::ofstream(root_ / "sys/bus/pci/devices/0000:28:00.0/numa_node") << "1\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(FakeNvml, ReadsEveryGpu) {
  NvmlProvider provider(KILN_FAKE_NVML, root_);
  auto inv = provider.inventory(5s);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_EQ(inv->provider, "nvml");
  ASSERT_EQ(inv->gpus.size(), 4u);
  const auto& first = inv->gpus[0];
  EXPECT_EQ(first.vendor, "nvidia");
  EXPECT_EQ(first.model, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(first.uuid, "GPU-fa4e0000-0000-0000-0000-000000000000");
  EXPECT_EQ(first.arch, "sm_90");
  EXPECT_EQ(first.memory_total_mib, 81559u);
  EXPECT_EQ(first.memory_used_mib, 0u);
  EXPECT_EQ(first.pci_bus_id, "00000000:18:00.0");
  EXPECT_EQ(first.numa_node, -1);  // no sysfs entry for it
  EXPECT_EQ(first.driver_version, "550.54.15");
  EXPECT_EQ(first.device_nodes, std::vector<std::string>{"/dev/nvidia0"});
  EXPECT_EQ(inv->gpus[1].numa_node, 1);  // /sys/bus/pci/devices/0000:28:00.0/numa_node
  EXPECT_EQ(inv->gpus[1].memory_used_mib, 1024u);
  EXPECT_EQ(inv->gpus[2].arch, "sm_89");
  EXPECT_EQ(inv->gpus[3].device_nodes, std::vector<std::string>{"/dev/nvidia3"});
}

TEST_F(FakeNvml, ProcessesAndFaults) {
  NvmlProvider provider(KILN_FAKE_NVML, root_);
  auto inv = provider.inventory(5s);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_TRUE(inv->gpus[0].processes.empty());
  EXPECT_EQ(inv->gpus[1].processes, (std::vector<GpuProcess>{{getpid(), 2048}}));
  EXPECT_TRUE(inv->gpus[0].faults.empty());
  EXPECT_EQ(inv->gpus[3].faults,
            std::vector<std::string>{"2 uncorrected ECC errors since the driver loaded"});
}

TEST_F(FakeNvml, AnXidEventIsAFaultForTheProvidersLife) {
  NvmlProvider provider(KILN_FAKE_NVML, root_);
  auto before = provider.inventory(5s);  // registers for events; none yet
  ASSERT_TRUE(before) << before.error().to_string();
  EXPECT_TRUE(before->gpus[2].faults.empty());
  setenv("FAKE_NVML_XID", "2:79", 1);
  auto after = provider.inventory(5s);
  auto again = provider.inventory(5s);  // the event was read once; the fault stays
  unsetenv("FAKE_NVML_XID");
  ASSERT_TRUE(after && again);
  const std::vector<std::string> xid{"Xid 79 (a critical error the driver reported)"};
  EXPECT_EQ(after->gpus[2].faults, xid);
  EXPECT_EQ(again->gpus[2].faults, xid);
  EXPECT_TRUE(after->gpus[0].faults.empty());
}

TEST_F(FakeNvml, LinksFromNvLinkThenTheCommonAncestor) {
  NvmlProvider provider(KILN_FAKE_NVML, root_);
  auto inv = provider.inventory(5s);
  ASSERT_TRUE(inv) << inv.error().to_string();
  const auto* nvlink = inv->find_link(0, 1);
  ASSERT_NE(nvlink, nullptr);
  EXPECT_EQ(nvlink->kind, LinkKind::nvlink);
  EXPECT_EQ(nvlink->width, 4);  // four active links reach GPU 1
  EXPECT_EQ(inv->connection(2, 3), LinkKind::pcie_switch);
  EXPECT_EQ(inv->connection(0, 2), LinkKind::sys);
  EXPECT_EQ(inv->links.size(), 6u);
}

TEST_F(FakeNvml, ADriverErrorIsReportedWithNvmlsText) {
  setenv("FAKE_NVML_INIT_RC", "9", 1);
  NvmlProvider provider(KILN_FAKE_NVML, root_);
  auto inv = provider.inventory(5s);
  unsetenv("FAKE_NVML_INIT_RC");
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().code, ErrorCode::unsupported);
  EXPECT_EQ(inv.error().message, "NVML cannot start: Driver Not Loaded (NVML error 9)");
}

TEST_F(FakeNvml, AWedgedDriverTimesOut) {
  setenv("FAKE_NVML_HANG_MS", "300", 1);
  NvmlProvider provider(KILN_FAKE_NVML, root_);
  auto inv = provider.inventory(30ms);
  ASSERT_FALSE(inv);
  EXPECT_EQ(inv.error().code, ErrorCode::timeout);
  EXPECT_EQ(inv.error().message, "NVML did not answer within 30 ms (the query was abandoned)");
  // Let the abandoned query finish before the environment changes under it.
  std::this_thread::sleep_for(400ms);
  unsetenv("FAKE_NVML_HANG_MS");
}

}  // namespace
}  // namespace kiln::gpu
