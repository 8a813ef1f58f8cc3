#pragma once
// The CUDA → HIP mapping table. It is generated at build time by tablegen/hipify_tablegen.cpp
// from HIPIFY's Markdown tables in third_party/hipify/ (MIT licence, notice kept there), so the
// data is never edited by hand and an update is a copy of new tables.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace kiln::hipcheck {

// Which CUDA library a name belongs to (one HIPIFY table each).
enum class Library : std::uint8_t {
  runtime,
  driver,
  device,
  rtc,
  cublas,
  cudnn,
  cufft,
  curand,
  cusolver,
  cusparse,
  cub,
  cucomplex,
};
std::string_view library_name(Library library);

struct ApiEntry {
  const char* cuda_name;
  const char* hip_name;  // "" when HIP has no equivalent
  Library library;
  const char* deprecated;  // CUDA version that deprecated it, "?" if only the section says so
  const char* removed;     // CUDA version that removed it, same convention
  bool hip_deprecated;     // the HIP name is itself deprecated
  bool hip_experimental;   // the HIP name is experimental
};

// The generated rows, sorted by cuda_name (api_table_generated.cpp in the build tree).
extern const ApiEntry k_api_entries[];
extern const std::size_t k_api_entry_count;

// A hash index over the generated rows, built once. lookup() is on the scanner's hot path: it
// is called for every identifier, so it first rejects names by length and a 64-bit hash.
class ApiTable {
 public:
  static const ApiTable& instance();

  // The entry for an exact CUDA name, or nullptr.
  const ApiEntry* lookup(std::string_view name) const;
  std::span<const ApiEntry> entries() const { return {k_api_entries, k_api_entry_count}; }

  static std::uint64_t hash(std::string_view name);

 private:
  ApiTable();
  struct Slot {
    std::uint64_t hash = 0;
    const ApiEntry* entry = nullptr;
  };
  // One bit per (first byte, second byte) of every name: most identifiers stop here.
  std::uint64_t first_two_[1024] = {};
  Slot* slots_ = nullptr;
  std::size_t mask_ = 0;
  std::size_t max_length_ = 0;
};

}  // namespace kiln::hipcheck
