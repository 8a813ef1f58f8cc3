#include "kiln/gpu/amd_sysfs_provider.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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
