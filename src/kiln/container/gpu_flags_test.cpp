#include "kiln/container/gpu_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kiln/gpu/amd_sysfs_provider.h"

namespace kiln::container {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

gpu::GpuInfo nvidia(int index) {
  gpu::GpuInfo info;
  info.index = index;
  info.vendor = "nvidia";
  info.uuid = "GPU-" + std::to_string(index) + "aaa";
  info.device_nodes = {"/dev/nvidia" + std::to_string(index)};
  return info;
}

gpu::GpuInfo amd(int index) {
  gpu::GpuInfo info;
  info.index = index;
  info.vendor = "amd";
  info.uuid = "GPU-amd" + std::to_string(index);
  info.device_nodes = {"/dev/dri/card" + std::to_string(index + 1),
                       "/dev/dri/renderD" + std::to_string(128 + index)};
  return info;
}

const GroupIds k_groups{{"video", 44}, {"render", 105}, {"root", 0}};

TEST(GpuDeviceFlags, NoGrantNoFlags) {
  EXPECT_THAT(gpu_device_flags(EngineKind::podman, {}, k_groups), IsEmpty());
  EXPECT_THAT(gpu_device_flags(EngineKind::docker, {}, k_groups), IsEmpty());
}

TEST(GpuDeviceFlags, NvidiaOnDockerIsOneGpusFlagWithTheUuids) {
  EXPECT_THAT(gpu_device_flags(EngineKind::docker, {nvidia(1), nvidia(3)}, k_groups),
              ElementsAre("--gpus", "\"device=GPU-1aaa,GPU-3aaa\""));
}

TEST(GpuDeviceFlags, NvidiaOnPodmanIsOneCdiDevicePerGpu) {
  EXPECT_THAT(
      gpu_device_flags(EngineKind::podman, {nvidia(1), nvidia(3)}, k_groups),
      ElementsAre("--device", "nvidia.com/gpu=GPU-1aaa", "--device", "nvidia.com/gpu=GPU-3aaa"));
}

TEST(GpuDeviceFlags, AmdIsKfdPlusExactlyTheGrantedNodesAndTheGroups) {
  for (auto engine : {EngineKind::podman, EngineKind::docker}) {
    EXPECT_THAT(gpu_device_flags(engine, {amd(2)}, k_groups),
                ElementsAre("--device", "/dev/kfd", "--device", "/dev/dri/card3", "--device",
                            "/dev/dri/renderD130", "--group-add", "44", "--group-add", "105"));
  }
  // A host without a render group (older distributions) gets video only.
  EXPECT_THAT(gpu_device_flags(EngineKind::podman, {amd(0)}, GroupIds{{"video", 44}}),
              ElementsAre("--device", "/dev/kfd", "--device", "/dev/dri/card1", "--device",
                          "/dev/dri/renderD128", "--group-add", "44"));
}

TEST(GpuDeviceFlags, FromARecordedMi250Host) {
  // The inventory of a 4-GCD MI250X host (the sysfs fixture of the GPU module), two GCDs granted.
  auto inventory =
      gpu::read_amd_sysfs(std::filesystem::path(KILN_SOURCE_DIR) / "tests/data/gpu/amd-mi250");
  ASSERT_TRUE(inventory) << inventory.error().to_string();
  ASSERT_EQ(inventory->gpus.size(), 4u);
  std::vector<gpu::GpuInfo> granted{inventory->gpus.at(1), inventory->gpus.at(2)};
  auto flags = gpu_device_flags(EngineKind::podman, granted, k_groups);
  std::vector<std::string> devices;
  for (std::size_t i = 0; i + 1 < flags.size(); ++i)
    if (flags[i] == "--device") devices.push_back(flags[i + 1]);
  EXPECT_EQ(devices, (std::vector<std::string>{"/dev/kfd", "/dev/dri/card2", "/dev/dri/renderD129",
                                               "/dev/dri/card3", "/dev/dri/renderD130"}));
  // Nodes of the GPUs not granted never appear.
  for (int other : {0, 3})
    for (const auto& node : inventory->gpus.at(static_cast<std::size_t>(other)).device_nodes)
      EXPECT_THAT(flags, ::testing::Not(::testing::Contains(node)));
}

TEST(GpuRequestFromOptions, WhatGpuPipelinesWrite) {
  auto request = [](std::string_view options) { return gpu_request_from_options(options); };
  EXPECT_FALSE(request("--shm-size 1g"));
  EXPECT_FALSE(request("--privileged"));  // refused options request nothing
  auto all = request("--gpus all --ipc=host");
  ASSERT_TRUE(all);
  EXPECT_TRUE(all->all);
  EXPECT_EQ(all->vendor, "nvidia");
  EXPECT_EQ(request("--gpus 2")->count, 2);
  EXPECT_EQ(request("--gpus \"device=0,1,3\"")->count, 3);
  EXPECT_EQ(request("--gpus device=GPU-abc")->count, 1);
  EXPECT_EQ(request("--device nvidia.com/gpu=0 --device nvidia.com/gpu=1")->count, 2);
  EXPECT_TRUE(request("--device nvidia.com/gpu=all")->all);
  auto rocm = request("--device /dev/kfd --device /dev/dri --group-add video");
  ASSERT_TRUE(rocm);
  EXPECT_TRUE(rocm->all);
  EXPECT_EQ(rocm->vendor, "amd");
  // /dev/dri without /dev/kfd is not AMD's alone (Intel GPUs use it): no request.
  EXPECT_FALSE(request("--device /dev/dri --group-add video"));
  EXPECT_FALSE(request("--device /dev/dri/renderD128"));
  EXPECT_TRUE(request("--device /dev/kfd")->all);
  auto two = request("--device=/dev/kfd --device /dev/dri/renderD128 --device /dev/dri/renderD129");
  ASSERT_TRUE(two);
  EXPECT_FALSE(two->all);
  EXPECT_EQ(two->count, 2);
  EXPECT_EQ(two->vendor, "amd");
}

TEST(HostGroupIds, ReadsEtcGroup) {
  auto ids = host_group_ids();
  ASSERT_TRUE(ids.contains("root"));
  EXPECT_EQ(ids["root"], 0);
}

}  // namespace
}  // namespace kiln::container
