// Dual-platform code: branches of #if/#ifdef on the HIP macros that only a CUDA build compiles,
// and typedef/using shims that name a CUDA type after its HIP counterpart. A CUDA use in such a
// branch is reported (Finding::guarded) but never fails a check: the HIP build does not see it.
//
//   #ifndef USE_ROCM                      CUDA only
//   #if !defined(__HIP_PLATFORM_AMD__) && CUDA_VERSION >= 11000    CUDA only
//   #ifdef __HIPCC__ ... #else ...        the #else is CUDA only
//   #if defined(USE_ROCM) || defined(__HIP__) ... #elif ... #else    both later branches are
//   #if defined(USE_ROCM) && ROCM_VERSION >= 60000 ... #else          not: a HIP build may take it
#include <array>

#include "kiln/hipcheck/scanner_impl.h"

namespace kiln::hipcheck {

std::span<const std::string_view> builtin_hip_macros() {
  static constexpr std::array<std::string_view, 6> k_macros{
      "USE_ROCM", "__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIPCC__",
      "__HIP__",  "HIP_PLATFORM"};
  return k_macros;
}

namespace detail {

bool Scanner::is_hip_macro(std::string_view name) const {
  for (std::string_view m : builtin_hip_macros())
    if (name == m) return true;
  for (const std::string& m : options_.hip_macros)
    if (name == m) return true;
  return false;
}

Scanner::Condition Scanner::condition(std::size_t begin, std::size_t end) const {
  // Drops parentheses around the whole of [b, e).
  auto strip = [this](std::size_t& b, std::size_t& e) {
    while (e - b >= 2 && is_punct(b, "(") && is_punct(e - 1, ")")) {
      int depth = 0;
      std::size_t k = b;
      for (; k < e; ++k) {
        if (is_punct(k, "("))
          ++depth;
        else if (is_punct(k, ")") && --depth == 0)
          break;
      }
      if (k != e - 1) return;  // (a) && (b): the first parenthesis closes early
      ++b;
      --e;
    }
  };
  // The parts of [b, e) between top-level `op` operators.
  auto split = [this](std::size_t b, std::size_t e, std::string_view op) {
    std::vector<std::pair<std::size_t, std::size_t>> parts;
    int depth = 0;
    std::size_t start = b;
    for (std::size_t k = b; k < e; ++k) {
      if (is_punct(k, "("))
        ++depth;
      else if (is_punct(k, ")"))
        --depth;
      else if (depth == 0 && is_punct(k, op)) {
        parts.emplace_back(start, k);
        start = k + 1;
      }
    }
    parts.emplace_back(start, e);
    return parts;
  };
  // A test of one HIP macro, maybe negated: `defined(M)`, `defined M`, `M`, `!(...)`. Returns
  // +1 (true in a HIP build), -1 (false in a HIP build) or 0, and the macro.
  auto atom = [&](std::size_t b, std::size_t e, std::string_view& macro) -> int {
    std::size_t width = e - b;
    strip(b, e);
    bool negated = false;
    while (b < e && is_punct(b, "!")) {
      negated = !negated;
      ++b;
      strip(b, e);
    }
    std::string_view name;
    if (b < e && is_ident(b) && text(b) == "defined") {
      if (e == b + 4 && is_punct(b + 1, "(") && is_ident(b + 2) && is_punct(b + 3, ")"))
        name = text(b + 2);
      else if (e == b + 2 && is_ident(b + 1))
        name = text(b + 1);
    } else if (e == b + 1 && is_ident(b)) {
      name = text(b);
    } else if (b < e && e - b < width) {
      Condition inner = condition(b, e);  // (defined(A) || defined(B)), parenthesised
      if (inner.hip_implies) {
        macro = inner.guard;
        return negated ? -1 : 1;
      }
      return 0;
    }
    if (name.empty() || !is_hip_macro(name)) return 0;
    macro = name;
    return negated ? -1 : 1;
  };
  Condition c;
  auto alternatives = split(begin, end, "||");
  for (auto [b, e] : alternatives) {
    std::string_view macro;
    if (atom(b, e, macro) > 0) {
      c.hip_implies = true;
      c.guard = macro;
    }
  }
  if (alternatives.size() == 1) {
    for (auto [b, e] : split(begin, end, "&&")) {
      std::string_view macro;
      if (atom(b, e, macro) < 0) {
        c.cuda_only = true;
        c.guard = macro;
      }
    }
  }
  return c;
}

void Scanner::conditional(std::string_view directive, std::size_t begin, std::size_t end) {
  if (directive == "if" || directive == "ifdef" || directive == "ifndef") {
    Condition c;
    if (directive == "if") {
      c = condition(begin, end);
    } else if (begin + 1 == end && is_ident(begin) && is_hip_macro(text(begin))) {
      c.guard = text(begin);
      (directive == "ifdef" ? c.hip_implies : c.cuda_only) = true;
    }
    // The findings outlive the source text: the guard's name goes into the scan's arena.
    groups_.push_back({c.hip_implies, c.cuda_only, keep(c.guard)});
  } else if (groups_.empty()) {
    return;  // an #else or #endif without its #if: nothing to track
  } else if (directive == "elif") {
    Group& g = groups_.back();
    Condition c = condition(begin, end);
    g.cuda_only = g.hip_before || c.cuda_only;
    if (!c.guard.empty()) g.guard = keep(c.guard);
    g.hip_before = g.hip_before || c.hip_implies;
  } else if (directive == "else") {
    groups_.back().cuda_only = groups_.back().hip_before;
  } else if (directive == "endif") {
    groups_.pop_back();
  }
  cuda_only_depth_ = 0;
  for (const Group& g : groups_) {
    if (!g.cuda_only) continue;
    ++cuda_only_depth_;
    guard_ = g.guard;
  }
}

bool Scanner::shim_declaration(std::size_t i) {
  // typedef HIP-TYPE CUDA-NAME;   using CUDA-NAME = HIP-TYPE;
  bool is_using = text(i) == "using";
  if (is_using && !(is_ident(i + 1) && is_punct(i + 2, "="))) return false;
  std::size_t end = i + 1;
  int depth = 0;
  for (; end < tokens_.size() && end < i + 64; ++end) {
    if (is_punct(end, "(") || is_punct(end, "<"))
      ++depth;
    else if (is_punct(end, ")") || is_punct(end, ">"))
      --depth;
    else if (depth == 0 && (is_punct(end, ";") || is_punct(end, "{")))
      break;
  }
  if (end >= tokens_.size() || !is_punct(end, ";")) return false;
  std::size_t alias = is_using ? i + 1 : end - 1;
  if (!is_ident(alias)) return false;
  std::string_view name = text(alias);
  if (!kiln_.lookup(name) && !table_.lookup(name)) return false;
  bool hip = false;
  for (std::size_t k = is_using ? i + 3 : i + 1; k < end && !hip; ++k) {
    if (k == alias || !is_ident(k)) continue;
    std::string_view t = text(k);
    hip = t.starts_with("hip") || t.starts_with("__hip") || t.starts_with("HIP");
  }
  if (!hip) return false;
  defined_names_.insert(name);
  shim_end_ = end;
  return true;
}

}  // namespace detail
}  // namespace kiln::hipcheck
