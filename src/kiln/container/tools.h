#pragma once
// Kiln's own commands inside a job container (`kiln hipcheck src/`, `kiln bench ingest FILE`),
// without the image containing Kiln, as GitHub's runner mounts its externals: the running kiln
// binary, the shared libraries `ldd` lists for it and its dynamic loader are bind-mounted
// read-only under /.kiln/tools, and /.kiln/tools/bin/kiln, a /bin/sh wrapper, starts the binary
// through that loader with --library-path /.kiln/tools/lib. So the binary runs on its own libc,
// whatever the image's, and the image's own libraries are never replaced.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/core/result.h"

namespace kiln::container {

inline constexpr std::string_view k_tools_in_container = "/.kiln/tools";
inline constexpr std::string_view k_tools_bin_in_container = "/.kiln/tools/bin";

struct SharedLibrary {
  std::string name;            // as the binary asks for it: "libstdc++.so.6"
  std::filesystem::path path;  // on the host
  bool loader = false;         // the dynamic loader (ld-linux-x86-64.so.2)
};

// The libraries of `ldd BINARY`'s output; an empty list for a static binary ("not a dynamic
// executable", "statically linked"). Lines without a path (linux-vdso.so.1) are left out. An
// unresolved library ("libfoo.so => not found") is invalid_input naming it.
Result<std::vector<SharedLibrary>> parse_ldd(std::string_view output);

// The -v specs that put `binary` (with `libraries`) in the container, and the wrapper's text.
// `wrapper` is the host file that becomes /.kiln/tools/bin/kiln.
struct ToolMounts {
  std::vector<std::string> volumes;
  std::string wrapper_script;
};
ToolMounts tool_mounts(const std::filesystem::path& binary,
                       const std::vector<SharedLibrary>& libraries,
                       const std::filesystem::path& wrapper);

// tool_mounts for the running kiln (/proc/self/exe, its libraries from `ldd`), with the wrapper
// written (mode 0755) at `wrapper`. Errors say why kiln cannot be offered to the container.
Result<ToolMounts> kiln_tool_mounts(const std::filesystem::path& wrapper);

}  // namespace kiln::container
