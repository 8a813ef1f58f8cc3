#include "kiln/container/tools.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kiln/core/subprocess.h"

namespace kiln::container {

Result<std::vector<SharedLibrary>> parse_ldd(std::string_view output) {
  std::vector<SharedLibrary> libraries;
  std::istringstream lines{std::string(output)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find("not a dynamic executable") != std::string::npos ||
        line.find("statically linked") != std::string::npos)
      return std::vector<SharedLibrary>{};
    std::istringstream words(line);
    std::string first, arrow, path;
    words >> first >> arrow >> path;
    if (first.empty()) continue;
    if (arrow == "=>") {
      if (path == "not")
        return fail(ErrorCode::invalid_input, "ldd: the library {} of kiln is not found", first);
      if (path.empty() || path.front() != '/') continue;  // linux-vdso.so.1 => (0x...)
      libraries.push_back({first, path, false});
    } else if (first.front() == '/') {
      // "/lib64/ld-linux-x86-64.so.2 (0x...)": the loader.
      libraries.push_back({std::filesystem::path(first).filename().string(), first, true});
    }
  }
  return libraries;
}

ToolMounts tool_mounts(const std::filesystem::path& binary,
                       const std::vector<SharedLibrary>& libraries,
                       const std::filesystem::path& wrapper) {
  ToolMounts mounts;
  const std::string root(k_tools_in_container);
  auto mount = [&](const std::filesystem::path& host, const std::string& inside) {
    std::error_code ec;
    auto real = std::filesystem::canonical(host, ec);  // a bind mount of a symlink is refused
    mounts.volumes.push_back(fmt::format("{}:{}:ro", (ec ? host : real).string(), inside));
  };
  mount(binary, root + "/libexec/kiln");
  std::string loader;
  for (const auto& library : libraries) {
    mount(library.path, root + "/lib/" + library.name);
    if (library.loader) loader = root + "/lib/" + library.name;
  }
  mount(wrapper, root + "/bin/kiln");
  mounts.wrapper_script =
      "#!/bin/sh\n# Kiln, mounted by the kiln that runs this job (docs/containers.md)\n";
  if (loader.empty())
    mounts.wrapper_script += fmt::format("exec {}/libexec/kiln \"$@\"\n", root);
  else
    mounts.wrapper_script +=
        fmt::format("exec {} --library-path {}/lib {}/libexec/kiln \"$@\"\n", loader, root, root);
  return mounts;
}

Result<ToolMounts> kiln_tool_mounts(const std::filesystem::path& wrapper) {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return fail(ErrorCode::io_error, "cannot find the kiln binary: {}", ec.message());
  auto ldd = core::find_executable("ldd", "/usr/bin:/bin:/usr/sbin:/sbin");
  if (!ldd) return fail(ErrorCode::not_found, "ldd is not installed (Debian package libc-bin)");
  KILN_TRY(auto ran, core::run_command({ldd->string(), self.string()}, {}, std::nullopt,
                                       std::chrono::seconds(30)));
  // ldd exits 1 for a static binary, with its message on stdout or stderr.
  KILN_TRY(auto libraries, parse_ldd(ran.out + ran.err));
  auto mounts = tool_mounts(self, libraries, wrapper);
  {
    std::ofstream out(wrapper, std::ios::trunc);
    out << mounts.wrapper_script;
    if (!out) return fail(ErrorCode::io_error, "cannot write {}", wrapper.string());
  }
  if (::chmod(wrapper.c_str(), 0755) != 0)
    return fail(ErrorCode::io_error, "cannot make {} executable", wrapper.string());
  return mounts;
}

}  // namespace kiln::container
