#include "kiln/container/cdi.h"

#include <unistd.h>

#include <fstream>
#include <map>
#include <set>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kiln::container {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// A host as a set of files and symlinks.
class FakeFiles final : public HostDriverFiles {
 public:
  std::vector<fs::path> extra_library_dirs;  // as the host's ld.so.conf.d would add them
  std::vector<fs::path> library_dirs() const override {
    auto dirs = HostDriverFiles::library_dirs();
    dirs.insert(dirs.end(), extra_library_dirs.begin(), extra_library_dirs.end());
    return dirs;
  }
  std::set<std::string> files;
  std::map<std::string, std::string> links;  // path -> target (absolute)
  bool exists(const fs::path& path) const override {
    return files.contains(path.string()) || links.contains(path.string());
  }
  std::vector<std::string> list(const fs::path& dir) const override {
    std::vector<std::string> names;
    auto add = [&](const std::string& path) {
      if (fs::path(path).parent_path() == dir) names.push_back(fs::path(path).filename().string());
    };
    for (const auto& f : files) add(f);
    for (const auto& [l, t] : links) add(l);
    return names;
  }
  fs::path resolve(const fs::path& path) const override {
    auto it = links.find(path.string());
    return it == links.end() ? path : resolve(it->second);
  }
};

gpu::GpuInfo h200(int index, int minor) {
  gpu::GpuInfo info;
  info.index = index;
  info.vendor = "nvidia";
  info.uuid = "GPU-" + std::to_string(index) + "abc";
  info.driver_version = "550.54.15";
  info.device_nodes = {"/dev/nvidia" + std::to_string(minor)};
  return info;
}

FakeFiles driver_host() {
  FakeFiles host;
  const std::string lib = "/usr/lib/x86_64-linux-gnu/";
  host.files = {"/dev/nvidiactl",
                "/dev/nvidia-uvm",
                "/dev/nvidia0",
                "/dev/nvidia3",
                lib + "libcuda.so.550.54.15",
                lib + "libnvidia-ml.so.550.54.15",
                lib + "libnvidia-ptxjitcompiler.so.550.54.15",
                "/usr/bin/nvidia-smi",
                lib + "libcuda.so.535.1.1"};
  host.links = {{lib + "libcuda.so.1", lib + "libcuda.so.550.54.15"},
                {lib + "libcuda.so", lib + "libcuda.so.1"},
                {lib + "libnvidia-ml.so.1", lib + "libnvidia-ml.so.550.54.15"}};
  return host;
}

std::vector<std::string> container_paths(const nlohmann::json& mounts) {
  std::vector<std::string> paths;
  for (const auto& m : mounts) paths.push_back(m["containerPath"].get<std::string>());
  return paths;
}

TEST(NvidiaCdiSpec, TheGrantedGpusTheirNodesAndTheDriversLibraries) {
  auto host = driver_host();
  auto spec = nvidia_cdi_spec({h200(0, 0), h200(1, 3)}, host);
  ASSERT_TRUE(spec) << spec.error().to_string();
  const auto& doc = spec->document;
  EXPECT_EQ(doc["cdiVersion"], "0.5.0");
  EXPECT_EQ(doc["kind"], "nvidia.com/gpu");
  ASSERT_EQ(doc["devices"].size(), 4u);  // by UUID and by index
  EXPECT_EQ(doc["devices"][0]["name"], "GPU-0abc");
  EXPECT_EQ(doc["devices"][1]["name"], "0");
  EXPECT_EQ(doc["devices"][2]["name"], "GPU-1abc");
  EXPECT_EQ(doc["devices"][2]["containerEdits"]["deviceNodes"][0]["path"], "/dev/nvidia3");
  const auto& edits = doc["containerEdits"];
  EXPECT_EQ(edits["deviceNodes"].size(), 2u);  // nvidiactl, nvidia-uvm (no uvm-tools, modeset)
  auto paths = container_paths(edits["mounts"]);
  const std::string lib = "/usr/lib/x86_64-linux-gnu/";
  EXPECT_THAT(paths, ::testing::IsSupersetOf({lib + "libcuda.so.550.54.15", lib + "libcuda.so.1",
                                              lib + "libcuda.so", lib + "libnvidia-ml.so.1",
                                              lib + "libnvidia-ptxjitcompiler.so.550.54.15",
                                              std::string("/usr/bin/nvidia-smi")}));
  // Another driver version's library on the same host is not mounted.
  EXPECT_THAT(paths, ::testing::Not(::testing::Contains(lib + "libcuda.so.535.1.1")));
  EXPECT_EQ(edits["mounts"][1]["hostPath"], lib + "libcuda.so.550.54.15");
  EXPECT_THAT(spec->notes, ::testing::Contains(HasSubstr("/dev/nvidia-uvm-tools")));
}

TEST(NvidiaCdiSpec, WhatIsMissingIsSaid) {
  auto host = driver_host();
  EXPECT_THAT(nvidia_cdi_spec({}, host).error().message, HasSubstr("no NVIDIA GPU"));
  EXPECT_THAT(nvidia_cdi_spec({h200(0, 7)}, host).error().message,
              HasSubstr("/dev/nvidia7 is not on this host"));
  auto no_ctl = host;
  no_ctl.files.erase("/dev/nvidiactl");
  EXPECT_THAT(nvidia_cdi_spec({h200(0, 0)}, no_ctl).error().message, HasSubstr("/dev/nvidiactl"));
  auto other_driver = h200(0, 0);
  other_driver.driver_version = "560.1.2";
  EXPECT_THAT(nvidia_cdi_spec({other_driver}, host).error().message,
              HasSubstr("libcuda.so.560.1.2"));
  // Unknown version with two libcuda versions on the host: which one is not guessed.
  auto unknown = h200(0, 0);
  unknown.driver_version = "simulated";
  EXPECT_THAT(nvidia_cdi_spec({unknown}, host).error().message, HasSubstr("several"));
}

TEST(HostDriverFiles, ReadsATreeUnderItsRoot) {
  auto root = fs::temp_directory_path() / ("kiln-cdi-" + std::to_string(::getpid()));
  fs::create_directories(root / "usr/lib/x86_64-linux-gnu");
  fs::create_directories(root / "dev");
  std::ofstream(root / "dev/nvidiactl") << "";
  std::ofstream(root / "usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15") << "";
  fs::create_symlink("libcuda.so.550.54.15", root / "usr/lib/x86_64-linux-gnu/libcuda.so.1");
  auto files = host_driver_files(root);
  EXPECT_TRUE(files->exists("/dev/nvidiactl"));
  EXPECT_FALSE(files->exists("/dev/nvidia0"));
  EXPECT_THAT(files->list("/usr/lib/x86_64-linux-gnu"),
              ::testing::ElementsAre("libcuda.so.1", "libcuda.so.550.54.15"));
  EXPECT_EQ(files->resolve("/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15");
  fs::remove_all(root);
}

// Cloud GPU images keep the driver under /usr/local/nvidia (seen on the H200 machine): found
// through the dynamic linker's configuration, and mounted where an image looks too.
TEST(NvidiaCdiSpec, ADriverOutsideTheStandardDirectoriesIsFoundAndMountedWhereImagesLook) {
  FakeFiles host;
  const std::string lib = "/usr/local/nvidia/lib64/";
  host.extra_library_dirs = {"/usr/local/nvidia/lib64"};
  host.files = {"/dev/nvidiactl",
                "/dev/nvidia0",
                lib + "libcuda.so.580.159.04",
                lib + "libnvidia-ml.so.580.159.04",
                "/usr/local/nvidia/bin/nvidia-smi",
                "/usr/bin/nvidia-smi"};  // there a script that runs the other
  host.links = {{lib + "libnvidia-ml.so.1", lib + "libnvidia-ml.so.580.159.04"}};
  auto gpu = h200(0, 0);
  gpu.driver_version = "580.159.04";
  auto spec = nvidia_cdi_spec({gpu}, host);
  ASSERT_TRUE(spec) << spec.error().to_string();
  auto paths = container_paths(spec->document["containerEdits"]["mounts"]);
  std::vector<std::string> wanted = {lib + "libnvidia-ml.so.1",
                                     "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                                     "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04",
                                     "/usr/local/nvidia/bin/nvidia-smi", "/usr/bin/nvidia-smi"};
  EXPECT_THAT(paths, ::testing::IsSupersetOf(wanted));
}

}  // namespace
}  // namespace kiln::container
