#include "kiln/gpu/amd_sysfs_provider.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kiln/gpu/allocator.h"

namespace kiln::gpu {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path fixture(const char* name) { return fs::path(KILN_SOURCE_DIR) / "tests/data/gpu" / name; }

TEST(GfxTarget, DecodesTheKfdVersionNumber) {
  EXPECT_EQ(gfx_target_name(90010), "gfx90a");
  EXPECT_EQ(gfx_target_name(90402), "gfx942");
  EXPECT_EQ(gfx_target_name(90008), "gfx908");
  EXPECT_EQ(gfx_target_name(110000), "gfx1100");
  EXPECT_EQ(gfx_target_name(100300), "gfx1030");
  EXPECT_EQ(gfx_target_name(0), "");
}

TEST(AmdSysfs, Mi250HostHasFourGcdsInPciOrder) {
  AmdSysfsProvider provider(fixture("amd-mi250"));
  EXPECT_EQ(provider.name(), "amdgpu-sysfs");
  auto inv = provider.inventory(5s);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_EQ(inv->provider, "amdgpu-sysfs");
  ASSERT_EQ(inv->gpus.size(), 4u);  // card0, the BMC's VGA, is not an amdgpu device
  const auto& first = inv->gpus[0];
  EXPECT_EQ(first.index, 0);
  EXPECT_EQ(first.vendor, "amd");
  EXPECT_EQ(first.model, "AMD Instinct MI250X");
  EXPECT_EQ(first.arch, "gfx90a");
  EXPECT_EQ(first.pci_bus_id, "0000:03:00.0");
  EXPECT_EQ(first.uuid, "GPU-3a5e8b6c0f1d2e47");
  EXPECT_EQ(first.numa_node, 0);
  EXPECT_EQ(first.memory_total_mib, 65520u);  // 68702699520 bytes
  EXPECT_EQ(first.memory_used_mib, 15u);
  EXPECT_EQ(first.driver_version, "6.7.0");
  EXPECT_EQ(first.device_nodes,
            (std::vector<std::string>{"/dev/dri/card1", "/dev/dri/renderD128"}));
  EXPECT_EQ(inv->gpus[2].pci_bus_id, "0000:83:00.0");
  EXPECT_EQ(inv->gpus[2].numa_node, 1);
  EXPECT_EQ(inv->gpus[2].memory_used_mib, 8192u);
  EXPECT_EQ(inv->gpus[3].device_nodes,
            (std::vector<std::string>{"/dev/dri/card4", "/dev/dri/renderD131"}));
}

TEST(AmdSysfs, Mi250LinksComeFromKfdIoLinksAndPciPaths) {
  auto inv = read_amd_sysfs(fixture("amd-mi250"));
  ASSERT_TRUE(inv) << inv.error().to_string();
  // XGMI inside each package and between GCD0-GCD2, GCD1-GCD3 (kfd io_links of type 11).
  EXPECT_EQ(inv->connection(0, 1), LinkKind::xgmi);
  EXPECT_EQ(inv->connection(2, 3), LinkKind::xgmi);
  EXPECT_EQ(inv->connection(0, 2), LinkKind::xgmi);
  EXPECT_EQ(inv->connection(1, 3), LinkKind::xgmi);
  // No direct XGMI, different host bridges and NUMA nodes.
  EXPECT_EQ(inv->connection(0, 3), LinkKind::sys);
  EXPECT_EQ(inv->connection(1, 2), LinkKind::sys);
  EXPECT_EQ(inv->links.size(), 6u);  // every pair once
}

TEST(AmdSysfs, Mi300xHostHasEightGfx942GpusWithRenderNodes) {
  AmdSysfsProvider provider(fixture("amd-mi300x"));
  auto inv = provider.inventory(5s);
  ASSERT_TRUE(inv) << inv.error().to_string();
  ASSERT_EQ(inv->gpus.size(), 8u);  // card0 is the BMC's VGA
  const char* buses[] = {"0000:0c:00.0", "0000:15:00.0", "0000:1e:00.0", "0000:69:00.0",
                         "0000:9f:00.0", "0000:af:00.0", "0000:bf:00.0", "0000:df:00.0"};
  std::set<std::string> uuids;
  for (int i = 0; i < 8; ++i) {
    const auto& gpu = inv->gpus[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(gpu.index, i);
    EXPECT_EQ(gpu.vendor, "amd");
    EXPECT_EQ(gpu.model, "AMD Instinct MI300X");
    EXPECT_EQ(gpu.arch, "gfx942");  // gfx_target_version 90402
    EXPECT_EQ(gpu.pci_bus_id, buses[i]);
    EXPECT_EQ(gpu.numa_node, i < 4 ? 0 : 1);
    EXPECT_EQ(gpu.memory_total_mib, 196288u);  // 205822885888 bytes: 192 GiB less reserved
    EXPECT_EQ(gpu.memory_used_mib, i == 5 ? 65536u : 285u);
    EXPECT_EQ(gpu.driver_version, "6.10.5");
    // card1..card8 and renderD128..renderD135, tied through the kfd node's location_id.
    EXPECT_EQ(gpu.device_nodes,
              (std::vector<std::string>{fmt::format("/dev/dri/card{}", i + 1),
                                        fmt::format("/dev/dri/renderD{}", 128 + i)}));
    EXPECT_TRUE(gpu.uuid.starts_with("GPU-")) << gpu.uuid;
    uuids.insert(gpu.uuid);
  }
  EXPECT_EQ(uuids.size(), 8u);
  EXPECT_EQ(inv->gpus[0].uuid, "GPU-4c1e0a7b93d2f600");
}

TEST(AmdSysfs, Mi300xGpusAreAllToAllXgmi) {
  auto inv = read_amd_sysfs(fixture("amd-mi300x"));
  ASSERT_TRUE(inv) << inv.error().to_string();
  ASSERT_EQ(inv->links.size(), 28u);  // every pair once, from the kfd io_links of type 11
  for (const auto& link : inv->links)
    EXPECT_EQ(link.kind, LinkKind::xgmi) << link.a << "-" << link.b;
  // Across the sockets too: XGMI, not the PCIe path through the CPUs.
  EXPECT_EQ(inv->connection(0, 7), LinkKind::xgmi);
  // One fabric island that is a clique: any four GPUs are as good as any other four, so the
  // allocator takes the lowest free ones, and skips GPU 5 when its held memory is too much.
  Topology topology(*inv);
  EXPECT_EQ(topology.island_count(), 1);
  EXPECT_TRUE(topology.uniform());
  GpuRequest four;
  four.count = 4;
  EXPECT_EQ(choose_gpus(topology, {0, 2}, four).gpus, (std::vector<int>{1, 3, 4, 5}));
  four.min_free_mib = 150 * 1024;
  EXPECT_EQ(choose_gpus(topology, {0, 2}, four).gpus, (std::vector<int>{1, 3, 4, 6}));
  four.arch = "gfx90a";
  EXPECT_EQ(choose_gpus(topology, {}, four).verdict, Verdict::never);
}

TEST(AmdSysfs, CardsWithoutFruOrUniqueIdFallBack) {
  auto inv = read_amd_sysfs(fixture("amd-w7900"));
  ASSERT_TRUE(inv) << inv.error().to_string();
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].model, "AMD GPU 0x7448");       // no product_name
  EXPECT_EQ(inv->gpus[0].uuid, "GPU-1a2b3c4d5e6f7081");  // from the kfd node's unique_id
  EXPECT_EQ(inv->gpus[0].arch, "gfx1100");
  EXPECT_EQ(inv->gpus[0].numa_node, -1);
  EXPECT_EQ(inv->gpus[0].driver_version, "");  // in-tree driver: no module version
  EXPECT_EQ(inv->gpus[1].memory_total_mib, 49136u);
  EXPECT_EQ(inv->connection(0, 1), LinkKind::pcie_switch);  // both below one PCIe switch
}

TEST(AmdSysfs, NoCardsIsAnEmptyInventory) {
  auto dir = fs::temp_directory_path() / ("kiln-gpu-empty-sysfs-" + std::to_string(::getpid()));
  fs::create_directories(dir / "sys/class/drm");
  EXPECT_FALSE(amd_gpus_present(dir));
  auto inv = read_amd_sysfs(dir);
  ASSERT_TRUE(inv);
  EXPECT_TRUE(inv->gpus.empty());
  EXPECT_TRUE(amd_gpus_present(fixture("amd-mi250")));
  fs::remove_all(dir);
}

TEST(AmdSysfs, WithoutKfdTheRenderNodeComesFromTheCard) {
  // A copy of the MI250 tree without /sys/class/kfd (amdkfd not loaded).
  auto dir = fs::temp_directory_path() / ("kiln-gpu-no-kfd-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fixture("amd-mi250"), dir,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::remove_all(dir / "sys/class/kfd");
  auto inv = read_amd_sysfs(dir);
  ASSERT_TRUE(inv) << inv.error().to_string();
  ASSERT_EQ(inv->gpus.size(), 4u);
  EXPECT_EQ(inv->gpus[1].arch, "");
  EXPECT_EQ(inv->gpus[1].device_nodes,
            (std::vector<std::string>{"/dev/dri/card2", "/dev/dri/renderD129"}));
  EXPECT_EQ(inv->connection(0, 1), LinkKind::pcie_switch);  // no XGMI known: the PCIe level
  fs::remove_all(dir);
}

TEST(AmdSysfs, UncorrectableRasErrorsAreFaults) {
  auto dir = fs::temp_directory_path() / ("kiln-gpu-ras-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fixture("amd-mi250"), dir,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  auto before = read_amd_sysfs(dir);
  ASSERT_TRUE(before) << before.error().to_string();
  // The device directory of the second GCD, through the card's symlink as the driver lays it out.
  auto device = fs::canonical(dir / "sys/class/drm/card2/device");
  fs::create_directories(device / "ras");
  std::ofstream(device / "ras/umc_err_count") << "ue: 3\nce: 7\n";
  std::ofstream(device / "ras/gfx_err_count") << "ue: 0\nce: 1\n";
  auto inv = read_amd_sysfs(dir);
  ASSERT_TRUE(inv) << inv.error().to_string();
  EXPECT_TRUE(inv->gpus[0].faults.empty());
  EXPECT_EQ(inv->gpus[1].faults,
            std::vector<std::string>{"3 uncorrectable umc errors (amdgpu RAS)"});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln::gpu
