#pragma once
// Which ROCm release support is judged for (`--rocm-version X.Y`, kiln.yml
// `hipcheck.rocm_version`). HIPIFY's tables give, for each HIP name, the HIP version that added
// it (HIP's version has followed ROCm's since 3.5); Kiln's own table (kiln_table.cpp) adds what
// later ROCm releases provide that the tables still call unsupported, each row citing the ROCm
// header or release note it comes from.

#include <compare>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::hipcheck {

struct ApiEntry;  // api_table.h

struct RocmVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const RocmVersion&) const = default;
  std::string to_string() const;
};

// "6.2" (a third component, "6.2.0", is accepted and ignored). Nothing for anything else.
std::optional<RocmVersion> parse_rocm_version(std::string_view text);

// The newest ROCm whose additions Kiln's tables know: the default.
RocmVersion newest_known_rocm();

// Whether `entry`'s HIP name exists in `rocm` (always false when it has none).
bool available_in(const ApiEntry& entry, RocmVersion rocm);

// A --rocm-version / hipcheck.rocm_version value: a version Kiln knows, or an error message.
struct RocmChoice {
  std::optional<RocmVersion> version;
  std::string error;
};
RocmChoice choose_rocm_version(std::string_view text);

}  // namespace kiln::hipcheck
