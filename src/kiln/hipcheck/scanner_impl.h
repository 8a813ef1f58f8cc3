#pragma once
// Internal to scanner.cpp and warp_rules.cpp: the state of one file's scan.

#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "kiln/hipcheck/api_table.h"
#include "kiln/hipcheck/scanner.h"

namespace kiln::hipcheck::detail {

// `text == literal`, with the length known at compile time so that the compare is a few
// instructions inline (a string_view compare may end up as a call to memcmp on the hot path).
template <std::size_t N>
[[gnu::always_inline]] inline bool is(std::string_view text, const char (&literal)[N]) {
  return text.size() == N - 1 && __builtin_memcmp(text.data(), literal, N - 1) == 0;
}

// Integer literal value, or nothing for floats and malformed numbers.
std::optional<std::uint64_t> integer_value(std::string_view text);
// "lane" or "warp" in a name (lane, laneId, warp_id, kWarpLanes), or wid: it holds a lane or
// warp index.
bool is_lane_name(std::string_view name);
// "warp" in a name (WARP_SIZE, kWarpSize).
bool is_warp_name(std::string_view name);

class Scanner {
 public:
  Scanner(std::string_view path, std::string_view source, const MacroMap* external,
          std::vector<Token>& tokens, const ScanOptions& options,
          const std::vector<std::string>* shims);
  FileScan run();

 private:
  // A literal (or a named constant) that may assume 32 lanes, found in the current statement.
  struct Candidate {
    std::uint32_t token;
    std::uint64_t value;
    enum Kind : std::uint8_t { literal, mask, lane_and, lane_mod, warp_shift, warp_div } kind;
    std::string_view constant;  // the constant's name when the value came through one
  };
  struct Statement {
    std::int64_t first = -1;              // first token index
    std::int64_t last = -1;               // last token index seen
    std::vector<std::uint32_t> warp_ops;  // warp operations in it
    bool is_loop = false;                 // starts with `for` or `while`
    bool thread_idx = false;              // mentions threadIdx
    std::vector<Candidate> candidates;
  };
  struct Block {
    bool is_loop = false;
    std::int64_t warp_op = -1;      // first warp operation in the loop's body
    std::vector<Candidate> header;  // the loop header's candidates
  };
  struct WarpState {
    Statement statement;
    std::vector<Block> blocks;
    int paren_depth = 0;
    std::vector<int> saved_depths;
    // Device code: the body of a __global__/__device__ function (or lambda).
    bool pending_device = false;     // __device__ seen; its body has not opened yet
    std::int64_t device_depth = -1;  // blocks.size() outside the device body, -1: host code
    std::string_view device_function;
  };
  struct MacroRecord {
    std::string_view name;
    std::uint32_t line = 0;
    bool function_like = false;
    Category category = Category::convertible;
    std::vector<std::string> uses;
  };

  const Token& tok(std::size_t i) const { return tokens_[i]; }
  std::string_view text(std::size_t i) const { return tokens_[i].text(source_); }
  // Hot: called for neighbours of most tokens, so compared by hand, not through memcmp.
  [[gnu::always_inline]] bool is_punct(std::size_t i, std::string_view p) const {
    if (i >= tokens_.size()) return false;
    const Token& t = tokens_[i];
    if (t.kind != TokenKind::punct || t.length != p.size()) return false;
    for (std::size_t k = 0; k < p.size(); ++k)
      if (source_[t.offset + k] != p[k]) return false;
    return true;
  }
  [[gnu::always_inline]] bool is_ident(std::size_t i) const {
    return i < tokens_.size() && tokens_[i].kind == TokenKind::identifier;
  }

  // `name` and `message` must outlive the scan's result: static text, or kept by keep() or
  // format(). An empty message is built from the finding when shown (Finding::message).
  Finding& add(Rule rule, Category category, std::size_t token, std::string_view name,
               std::string_view message = {});
  std::string_view keep(std::string_view text) { return out_.strings->store(text); }
  template <typename... Args>
  std::string_view format(fmt::format_string<Args...> format, Args&&... args) {
    fmt::memory_buffer buffer;
    fmt::format_to(std::back_inserter(buffer), format, std::forward<Args>(args)...);
    return keep({buffer.data(), buffer.size()});
  }

  std::size_t directive(std::size_t hash);
  // Conditional groups on the HIP macros (dual_platform.cpp).
  struct Condition {
    bool hip_implies = false;  // a HIP build makes the condition true: later branches are CUDA's
    bool cuda_only = false;    // the condition is true only in a CUDA build
    std::string_view guard;    // the HIP macro it tests
  };
  Condition condition(std::size_t begin, std::size_t end) const;
  bool is_hip_macro(std::string_view name) const;
  void conditional(std::string_view directive, std::size_t begin, std::size_t end);
  // typedef/using that names a CUDA type as a HIP one: `typedef __hip_bfloat16 __nv_bfloat16;`
  bool shim_declaration(std::size_t i);
  void define(std::size_t begin, std::size_t end);
  void code_token(std::size_t i, bool in_condition);
  void identifier(std::size_t i, bool in_condition);
  void api_use(std::size_t i, const ApiEntry& entry);
  void cub_use(std::size_t i);
  // libraries.cpp: NPP, nvJPEG, NVML, NVTX, cuDLA, NvSci, libNVVM by prefix; wmma::, cuda::.
  bool library_family(std::size_t i, std::string_view name);
  static bool library_family_name(std::string_view name);
  void qualified_library(std::size_t i, std::string_view space);
  void macro_use(std::size_t i, const CudaMacro& macro);
  void record_use(std::string_view name, Category category);
  void inline_asm(std::size_t i);
  void kernel_launch(std::size_t i);
  void cooperative_member(std::size_t i, std::string_view name);
  const CudaMacro* find_macro(std::string_view name, std::uint64_t hash) const;

  // Statement and block tracking for the warp rules; runs for every token, so it is inline and
  // leaves the rare work to warp_rules.cpp.
  void warp_token(std::size_t i) {
    const Token& t = tokens_[i];
    if (t.kind == TokenKind::punct && t.length == 1) {
      switch (source_[t.offset]) {
        case '(':
          ++warp_.paren_depth;
          break;
        case ')':
          if (warp_.paren_depth > 0) --warp_.paren_depth;
          break;
        case ';':
          if (warp_.paren_depth == 0) {
            end_statement();
            warp_.pending_device = false;  // a declaration, not a definition
            return;
          }
          break;
        case '{':
          open_block();
          return;
        case '}':
          close_block();
          return;
        default:
          break;
      }
    }
    if (warp_.statement.first < 0) start_statement(i);
    warp_.statement.last = static_cast<std::int64_t>(i);
  }

  // warp_rules.cpp
  void open_block();
  void close_block();
  void start_statement(std::size_t i);
  void warp_op(std::size_t i);
  // `unsigned mask = ...`: mask is 32-bit. False when token i is not a 32-bit type name.
  bool declaration(std::size_t i);
  void number(std::size_t i);
  void constant_use(std::size_t i, std::uint64_t value, std::string_view name);
  void end_statement() {
    if (!warp_.statement.candidates.empty() || !warp_.statement.warp_ops.empty()) {
      evaluate_statement();
    } else {
      if (warp_.statement.thread_idx) derive_from_thread_index();
      warp_.statement.first = -1;
      warp_.statement.last = -1;
      warp_.statement.is_loop = false;
      warp_.statement.thread_idx = false;
    }
  }
  // `int tid = threadIdx.x + ...;`: tid holds a thread index from here on (in this function).
  void derive_from_thread_index();
  // The variable the value at token `at` is assigned to (`lane` in `int lane = x & 31;`), the
  // device function's name for a `return`, or "".
  std::string_view assigned_to(std::uint32_t at) const;
  bool thread_derived(const Statement& s) const;
  void evaluate_statement();  // applies the rules to the statement's candidates, then resets
  void emit_candidate(const Candidate& c, Rule rule, std::string_view op);
  // The statement's warp operation nearest to token `at` ("" when there is none).
  std::string_view nearest_warp_op(std::uint32_t at) const;

  std::string path_;
  std::string_view source_;
  const MacroMap* external_;
  std::vector<Token>& tokens_;
  bool cuda_file_;
  const ScanOptions& options_;
  const ApiTable& table_;  // HIPIFY's rows
  const ApiTable& kiln_;   // Kiln's rows, which take precedence
  FileScan out_;

  std::unordered_map<std::string_view, CudaMacro> local_macros_;
  std::unordered_set<std::string_view> shadowed_;  // defined or #undef'd here without CUDA
  // Names #defined here (until #undef): `#define cudaMalloc hipMalloc` is a porting shim, and
  // later uses of cudaMalloc in this file compile to HIP.
  std::unordered_set<std::string_view> defined_names_;
  std::uint64_t macro_filter_[16] = {};  // 1024-bit filter of CUDA macro names
  bool have_macros_ = false;
  std::optional<MacroRecord> defining_;  // inside a #define body with CUDA uses
  std::unordered_map<std::string_view, std::pair<std::uint64_t, std::uint32_t>> constants_;
  std::unordered_set<std::string_view> thread_derived_;  // names holding a thread index
  std::unordered_set<std::string_view> narrow_;          // names declared 32-bit
  std::vector<std::string_view> cg_aliases_{"cooperative_groups"};
  bool using_cg_ = false;
  std::unordered_set<std::uint32_t> reported_literals_;
  std::uint32_t column_line_start_ = 0;  // the line, offset and column of the last finding
  std::uint32_t column_offset_ = 0;
  int column_ = 1;
  std::uint32_t line_hash_start_ = 0;  // the line whose fingerprint part is in line_hash_
  std::uint64_t line_hash_ = 0;

  WarpState warp_;

  struct Group {
    bool hip_before = false;  // an earlier branch is taken in a HIP build
    bool cuda_only = false;   // the current branch is compiled only for CUDA
    std::string_view guard;
  };
  std::vector<Group> groups_;
  int cuda_only_depth_ = 0;   // groups whose current branch is CUDA-only
  std::string_view guard_;    // the innermost such group's macro
  std::size_t shim_end_ = 0;  // tokens before this are a shim declaration's
};

}  // namespace kiln::hipcheck::detail
