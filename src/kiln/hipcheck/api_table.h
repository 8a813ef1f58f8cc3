#pragma once
// The CUDA → HIP mapping table. It is generated at build time by tablegen/hipify_tablegen.cpp
// from HIPIFY's Markdown tables in third_party/hipify/ (MIT licence, notice kept there), so the
// data is never edited by hand and an update is a copy of new tables.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

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
  // Kiln's own rows (kiln_table.cpp): libraries and device forms HIPIFY's tables do not list.
  npp,
  nvjpeg,
  wmma,
  libcudacxx,
  cudla,
  nvsci,
  nvvm,
  nvml,
  nvtx,
  cooperative_groups,
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
  // The HIP/ROCm version that added the HIP name ("6.1.0"; "" when the table does not say).
  const char* hip_added = "";
  // Kiln's own rows: the ROCm header or release note that says so (nullptr for HIPIFY's rows).
  const char* source = nullptr;
};

// The generated rows, sorted by cuda_name (api_table_generated.cpp in the build tree).
extern const ApiEntry k_api_entries[];
extern const std::size_t k_api_entry_count;
// Kiln's reviewed rows (kiln_table.cpp), sorted by cuda_name. Where a name is in both, this row
// is the one that counts: it says what a later ROCm added, or what the tables miss.
extern const ApiEntry k_kiln_entries[];
extern const std::size_t k_kiln_entry_count;

// A hash index over the generated rows, built once. lookup() is on the scanner's hot path: it
// is called for every identifier, so it first rejects names by length and a 64-bit hash.
class ApiTable {
 public:
  static const ApiTable& instance();  // HIPIFY's rows
  static const ApiTable& kiln();      // Kiln's rows

  // The entry for an exact CUDA name, or nullptr.
  const ApiEntry* lookup(std::string_view name) const;
  std::span<const ApiEntry> entries() const { return rows_; }

  static std::uint64_t hash(std::string_view name);

 private:
  explicit ApiTable(std::span<const ApiEntry> rows);
  std::span<const ApiEntry> rows_;
  struct Slot {
    std::uint64_t hash = 0;
    const ApiEntry* entry = nullptr;
  };
  // One bit per (first byte, second byte) of every name: most identifiers stop here.
  std::uint64_t first_two_[1024] = {};
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t max_length_ = 0;
};

}  // namespace kiln::hipcheck
