#pragma once
// What hipcheck reports: one Finding per CUDA use or warp-size hazard, with its rule, its
// category (which decides --fail-on) and, for a convertible use, what HIP calls it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::hipcheck {

// The three kinds a finding can be; --fail-on and the summary count by these.
enum class Category : std::uint8_t {
  convertible,  // a CUDA use with a HIP equivalent (hipify can convert it)
  unsupported,  // a CUDA use with no HIP equivalent: the port is blocked here
  hazard,       // code that compiles for HIP but assumes 32-lane warps or CUDA-only behaviour
};
std::string_view category_name(Category category);

enum class Rule : std::uint8_t {
  cuda_api,            // a name from the HIPIFY tables (runtime, driver, device, libraries)
  cuda_header,         // #include of a CUDA header
  kernel_launch,       // kernel<<<grid, block>>>(...)
  inline_ptx,          // asm("...") with PTX
  cuda_macro,          // expansion of a macro whose definition uses CUDA
  warp_size_literal,   // 16/31/32 hard-coded next to a warp operation
  warp_mask_32bit,     // 0xffffffff as a warp mask (wavefronts are 64 lanes)
  lane_id_32,          // lane = threadIdx.x & 31 (or % 32)
  warp_id_32,          // warp = tid >> 5 (or / 32)
  warp_size_constant,  // #define WARP_SIZE 32, constexpr int kWarpSize = 32
  activemask,          // __activemask()
  syncwarp,            // __syncwarp()
  cooperative_groups,  // a cooperative-groups feature HIP lacks
};

struct RuleInfo {
  Rule rule;
  std::string_view id;           // stable: baselines and SARIF ruleId use it
  std::string_view description;  // one line
  std::string_view help;         // what to do about it
};
std::span<const RuleInfo> rules();
const RuleInfo& rule_info(Rule rule);

// How the HIPIFY tables classify a CUDA name (cuda_api findings only).
// newer_rocm: HIP has the name, but only from a later ROCm than the one judged for.
enum class ApiStatus : std::uint8_t {
  none,
  convertible,
  unsupported,
  deprecated,
  removed,
  newer_rocm
};
std::string_view api_status_name(ApiStatus status);

struct ApiEntry;  // api_table.h

// Owns the text of one file's findings (names, the few pre-built messages) in a few large
// blocks, so that a finding costs no allocation of its own. Views into it stay valid as long as
// the arena lives; FileScan shares it with its copies.
class TextArena {
 public:
  std::string_view store(std::string_view text);

 private:
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  std::size_t left_ = 0;
};

// One finding. The file it is in is the FileScan that holds it (scanner.h); its views point
// into the static tables or into that FileScan's TextArena, so keep the FileScan (or a copy)
// while using them.
struct Finding {
  int line = 0;
  int column = 0;      // 1-based, Unicode code points
  int end_column = 0;  // one past the reported token
  Rule rule = Rule::cuda_api;
  Category category = Category::convertible;
  ApiStatus status = ApiStatus::none;
  std::string_view name;         // the CUDA name, header, macro or literal the finding is about
  std::string_view replacement;  // the HIP name or header, when there is one
  std::string_view library;      // "CUDA Runtime", "cuBLAS", ... for cuda_api (static text)
  // Stable across line moves: a hash of the rule, the name and the text of the finding's line
  // with blanks collapsed. Shown as 16 hex digits (fingerprint_hex).
  std::uint64_t fingerprint = 0;
  bool baselined = false;  // accepted by --baseline
  // In a branch only a CUDA build compiles (`#ifndef USE_ROCM`, the #else of
  // `#ifdef __HIP_PLATFORM_AMD__`): dual-platform code, never a port blocker. `guard` is the HIP
  // macro the branch depends on (static text or the scan's arena).
  bool guarded = false;
  std::string_view guard;

  // The message is built only when it is shown (most runs print a fraction of the findings or
  // none): from the table entry for a cuda_api finding, from name and replacement for most
  // other rules, else it is the pre-built `text`.
  const ApiEntry* entry = nullptr;  // the table row of a cuda_api finding
  std::string_view text;            // the whole message, when it could not be rebuilt
  std::string message() const;
  void append_message(std::string& out) const;  // the same, written at the end of `out`
};

// The line's part of a fingerprint (computed once per line), then the finding's.
std::uint64_t line_fingerprint(std::string_view line);
std::uint64_t compute_fingerprint(Rule rule, std::string_view name, std::uint64_t line_hash);
std::string fingerprint_hex(std::uint64_t fingerprint);  // json_text.h has append_hex16
// Parses 16 hex digits; nothing for anything else.
std::optional<std::uint64_t> parse_fingerprint(std::string_view hex);

}  // namespace kiln::hipcheck
