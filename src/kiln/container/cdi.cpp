#include "kiln/container/cdi.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace kiln::container {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr std::array k_library_dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib64",
                                       "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                                       "/usr/lib"};
// Where a library or program found elsewhere is also mounted in the container.
constexpr std::string_view k_container_lib_dir = "/usr/lib/x86_64-linux-gnu";
constexpr std::string_view k_container_bin_dir = "/usr/bin";

bool standard_library_dir(const fs::path& dir) {
  return std::ranges::any_of(k_library_dirs, [&](const char* d) { return dir == d; });
}
// The driver's user-space libraries (what nvidia-ctk mounts for compute and utility).
constexpr std::array k_libraries = {
    "libcuda",          "libnvidia-ml",      "libnvidia-ptxjitcompiler", "libnvidia-nvvm",
    "libcudadebugger",  "libnvidia-gpucomp", "libnvidia-allocator",      "libnvidia-cfg",
    "libnvidia-opencl", "libnvidia-pkcs11",  "libnvidia-pkcs11-openssl3"};
constexpr std::array k_programs = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced",
                                   "nvidia-cuda-mps-control", "nvidia-cuda-mps-server"};

class RootedFiles final : public HostDriverFiles {
 public:
  explicit RootedFiles(fs::path root) : root_(std::move(root)) {}
  std::vector<fs::path> library_dirs() const override {
    auto dirs = HostDriverFiles::library_dirs();
    auto add = [&](const fs::path& dir) {
      if (dir.is_absolute() && std::ranges::find(dirs, dir) == dirs.end()) dirs.push_back(dir);
    };
    // The dynamic linker's configuration: one directory a line, '#' comments, "include" lines
    // (ld.so.conf itself includes ld.so.conf.d/*.conf, read here directly).
    std::vector<std::string> confs;
    for (const auto& name : list("/etc/ld.so.conf.d"))
      if (name.ends_with(".conf")) confs.push_back("/etc/ld.so.conf.d/" + name);
    confs.push_back("/etc/ld.so.conf");
    for (const auto& conf : confs) {
      std::ifstream in(inside(conf));
      for (std::string line; std::getline(in, line);) {
        line = line.substr(0, line.find('#'));
        auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        line = line.substr(first, line.find_last_not_of(" \t") - first + 1);
        if (!line.starts_with("include")) add(line);
      }
    }
    return dirs;
  }
  bool exists(const fs::path& path) const override {
    std::error_code ec;
    return fs::exists(inside(path), ec);
  }
  std::vector<std::string> list(const fs::path& dir) const override {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(inside(dir), ec))
      names.push_back(entry.path().filename().string());
    std::ranges::sort(names);
    return names;
  }
  fs::path resolve(const fs::path& path) const override {
    // Relative links resolve in their directory; absolute ones under the root.
    fs::path current = path;
    for (int depth = 0; depth < 16; ++depth) {
      std::error_code ec;
      if (!fs::is_symlink(inside(current), ec)) return current.lexically_normal();
      fs::path target = fs::read_symlink(inside(current), ec);
      if (ec) return current;
      current = target.is_absolute() ? target : current.parent_path() / target;
    }
    return current;
  }

 private:
  fs::path inside(const fs::path& path) const { return root_ / path.relative_path(); }
  fs::path root_;
};

// The version suffix of "libcuda.so.550.54.15" ("550.54.15"), or "".
std::string version_of(std::string_view name, std::string_view library) {
  std::string prefix = std::string(library) + ".so.";
  if (!name.starts_with(prefix)) return "";
  std::string_view version = name.substr(prefix.size());
  // A driver version has at least one dot (550.54.15); "1" is a soname.
  return version.find('.') == std::string_view::npos ? "" : std::string(version);
}

json mount(const fs::path& host, const fs::path& container) {
  return {{"hostPath", host.string()},
          {"containerPath", container.string()},
          {"options", {"ro", "nosuid", "nodev", "bind"}}};
}

}  // namespace

std::vector<fs::path> HostDriverFiles::library_dirs() const {
  return {k_library_dirs.begin(), k_library_dirs.end()};
}

std::vector<fs::path> HostDriverFiles::program_dirs() const {
  std::vector<fs::path> dirs = {"/usr/bin"};
  for (const auto& dir : library_dirs())
    if (!standard_library_dir(dir) &&
        std::ranges::find(dirs, dir.parent_path() / "bin") == dirs.end())
      dirs.push_back(dir.parent_path() / "bin");
  return dirs;
}

std::unique_ptr<HostDriverFiles> host_driver_files(std::filesystem::path root) {
  return std::make_unique<RootedFiles>(std::move(root));
}

Result<CdiSpec> nvidia_cdi_spec(const std::vector<gpu::GpuInfo>& gpus,
                                const HostDriverFiles& files) {
  CdiSpec spec;
  std::vector<const gpu::GpuInfo*> nvidia;
  for (const auto& info : gpus)
    if (info.vendor == "nvidia") nvidia.push_back(&info);
  if (nvidia.empty()) return fail(ErrorCode::not_found, "there is no NVIDIA GPU to describe");

  // The driver version: NVML's, else the one libcuda.so.VERSION of the host.
  std::string version = nvidia.front()->driver_version;
  if (version.empty() || version == "simulated") {
    std::vector<std::string> found;
    for (const auto& dir : files.library_dirs())
      for (const auto& name : files.list(dir))
        if (auto v = version_of(name, "libcuda"); !v.empty()) found.push_back(v);
    std::ranges::sort(found);
    found.erase(std::unique(found.begin(), found.end()), found.end());
    if (found.size() != 1)
      return fail(ErrorCode::not_found,
                  "the NVIDIA driver version is unknown and {} (libcuda.so.VERSION) were found",
                  found.empty() ? std::string("no driver libraries")
                                : fmt::format("several: {}", fmt::join(found, ", ")));
    version = found.front();
  }

  json devices = json::array();
  for (const auto* info : nvidia) {
    std::string node = info->device_nodes.empty() ? "" : info->device_nodes.front();
    if (node.empty()) {
      node = fmt::format("/dev/nvidia{}", info->index);
      spec.notes.push_back(fmt::format("GPU {} has no NVML minor number: {} (its index) is used",
                                       info->index, node));
    }
    if (!files.exists(node))
      return fail(ErrorCode::not_found, "GPU {} ({}): its device node {} is not on this host",
                  info->index, info->uuid, node);
    json edits = {{"deviceNodes", {{{"path", node}}}}};
    for (const std::string& name : {info->uuid, std::to_string(info->index)})
      devices.push_back({{"name", name}, {"containerEdits", edits}});
  }

  json nodes = json::array();
  if (!files.exists("/dev/nvidiactl"))
    return fail(ErrorCode::not_found, "/dev/nvidiactl is not on this host (is the driver loaded?)");
  nodes.push_back({{"path", "/dev/nvidiactl"}});
  for (const char* node : {"/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}) {
    if (files.exists(node))
      nodes.push_back({{"path", node}});
    else
      spec.notes.push_back(fmt::format("{} is not on this host: left out", node));
  }

  json mounts = json::array();
  const auto library_dirs = files.library_dirs();
  for (const char* library : k_libraries) {
    bool found = false;
    for (const auto& dir : library_dirs) {
      std::string file = fmt::format("{}.so.{}", library, version);
      fs::path path = dir / file;
      if (!files.exists(path)) continue;
      found = true;
      // At the host's path, and where the image's loader looks when that path is not one.
      auto add = [&](const fs::path& name) {
        mounts.push_back(mount(path, dir / name));
        if (!standard_library_dir(dir))
          mounts.push_back(mount(path, fs::path(k_container_lib_dir) / name));
      };
      add(file);
      // The sonames the host links to it (libcuda.so.1), so the image finds it by name.
      for (const auto& name : files.list(dir)) {
        if (name == file || !name.starts_with(std::string(library) + ".so")) continue;
        if (files.resolve(dir / name) == path) add(name);
      }
      break;
    }
    bool required =
        std::string_view(library) == "libcuda" || std::string_view(library) == "libnvidia-ml";
    if (!found && required)
      return fail(ErrorCode::not_found, "{}.so.{} (the NVIDIA driver's) is not on this host",
                  library, version);
    if (!found) spec.notes.push_back(fmt::format("{}.so.{} not found: left out", library, version));
  }
  const auto program_dirs = files.program_dirs();
  // Every copy at its host path (a host's /usr/bin/nvidia-smi may be a script that runs
  // /usr/local/nvidia/bin/nvidia-smi, seen on the H200 machine), and one in /usr/bin.
  for (const char* program : k_programs) {
    std::optional<fs::path> first;
    bool in_bin = false;
    for (const auto& dir : program_dirs) {
      fs::path path = dir / program;
      if (!files.exists(path)) continue;
      mounts.push_back(mount(path, path));
      if (!first) first = path;
      in_bin = in_bin || dir == k_container_bin_dir;
    }
    if (first && !in_bin) mounts.push_back(mount(*first, fs::path(k_container_bin_dir) / program));
  }

  spec.document = {
      {"cdiVersion", "0.5.0"},
      {"kind", "nvidia.com/gpu"},
      {"devices", devices},
      {"containerEdits",
       {{"env", {"NVIDIA_VISIBLE_DEVICES=void"}}, {"deviceNodes", nodes}, {"mounts", mounts}}}};
  return spec;
}

}  // namespace kiln::container
