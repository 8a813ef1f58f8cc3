// The warp-size rules of the scanner: literals and masks that assume 32-lane warps.
// They work on statements (tokens up to `;` outside parentheses, or up to a brace), and on loop
// headers whose body contains a warp operation:
//   for (int offset = 16; offset > 0; offset /= 2) { v += __shfl_down_sync(mask, v, offset); }
#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "kiln/hipcheck/scanner_impl.h"

namespace kiln::hipcheck::detail {

namespace {

bool contains_nocase(std::string_view haystack, std::string_view needle) {
  if (needle.size() > haystack.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= haystack.size(); ++i) {
    std::size_t k = 0;
    while (k < needle.size() &&
           std::tolower(static_cast<unsigned char>(haystack[i + k])) == needle[k])
      ++k;
    if (k == needle.size()) return true;
  }
  return false;
}

}  // namespace

std::optional<std::uint64_t> integer_value(std::string_view text) {
  if (text.empty() || text.size() > 40 || !(text[0] >= '0' && text[0] <= '9')) return std::nullopt;
  std::size_t end = text.size();
  while (end > 0 && (text[end - 1] == 'u' || text[end - 1] == 'U' || text[end - 1] == 'l' ||
                     text[end - 1] == 'L' || text[end - 1] == 'z' || text[end - 1] == 'Z'))
    --end;
  std::string_view digits = text.substr(0, end);
  std::uint64_t base = 10;
  std::size_t i = 0;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    i = 2;
  } else if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'B')) {
    base = 2;
    i = 2;
  } else if (digits.size() > 1 && digits[0] == '0') {
    base = 8;
    i = 1;
  }
  if (digits.empty()) return std::nullopt;
  std::uint64_t value = 0;
  bool any = base != 10 && i == 1;  // "0" followed by octal digits
  for (; i < digits.size(); ++i) {
    char c = digits[i];
    if (c == '\'') continue;
    std::uint64_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<std::uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<std::uint64_t>(c - 'A' + 10);
    else
      return std::nullopt;
    if (d >= base) return std::nullopt;
    if (value > (~0ull - d) / base) return std::nullopt;
    value = value * base + d;
    any = true;
  }
  if (!any) return std::nullopt;
  return value;
}

bool is_lane_name(std::string_view name) {
  if (name == "warpSize") return false;  // the portable way: not an assumption
  return contains_nocase(name, "lane") || contains_nocase(name, "warp") || name == "wid";
}

bool is_warp_name(std::string_view name) {
  if (!contains_nocase(name, "warp")) return false;
  return contains_nocase(name, "size") || contains_nocase(name, "width") ||
         contains_nocase(name, "lanes") || contains_nocase(name, "threads") ||
         contains_nocase(name, "sz");
}

namespace {

bool narrow_type(std::string_view name) {
  return name == "unsigned" || name == "uint32_t" || name == "int" || name == "uint" ||
         name == "int32_t";
}

}  // namespace

bool Scanner::declaration(std::size_t i) {
  // unsigned mask = ...;  uint32_t vote;  unsigned int m{...}
  if (!narrow_type(text(i))) return false;
  if (is_ident(i + 1) && !narrow_type(text(i + 1)) &&
      (is_punct(i + 2, "=") || is_punct(i + 2, ";") || is_punct(i + 2, ",") ||
       is_punct(i + 2, "{")))
    narrow_.insert(text(i + 1));
  return true;
}

void Scanner::warp_op(std::size_t i) {
  warp_.statement.warp_ops.push_back(static_cast<std::uint32_t>(i));
  std::string_view op = text(i);
  // A lane mask held in a 32-bit variable: __shfl_sync(mask, ...) with `unsigned mask`.
  if (op.ends_with("_sync") && is_punct(i + 1, "(") && is_ident(i + 2) && is_punct(i + 3, ",") &&
      narrow_.contains(text(i + 2)))
    add(Rule::warp_mask_32bit, Category::hazard, i + 2, keep(text(i + 2)),
        format("lane mask {} is a 32-bit variable passed to {}: lane masks are 64-bit on AMD "
               "wavefronts (declare it uint64_t)",
               text(i + 2), op));
  // A ballot kept in 32 bits: unsigned vote = __ballot_sync(...);
  if ((op.starts_with("__ballot") || op == "__activemask") && i >= 3 && is_punct(i - 1, "=") &&
      is_ident(i - 2) && is_ident(i - 3) && narrow_type(text(i - 3)))
    add(Rule::warp_mask_32bit, Category::hazard, i - 2, keep(text(i - 2)),
        format("{} keeps the result of {} in 32 bits: on 64-lane wavefronts lanes 32-63 are "
               "lost (declare it uint64_t)",
               text(i - 2), op));
  for (auto it = warp_.blocks.rbegin(); it != warp_.blocks.rend(); ++it) {
    if (it->is_loop) {
      if (it->warp_op < 0) it->warp_op = static_cast<std::int64_t>(i);
      if (it->header.empty()) continue;  // a loop of its own, not about lanes: look further out
      break;
    }
  }
}

void Scanner::number(std::size_t i) {
  auto value = integer_value(text(i));
  if (!value) return;
  std::uint64_t v = *value;
  // ~0u and uint32_t(-1), (unsigned)-1: 32-bit all-lanes masks too.
  if (v == 0 && i > 0 && is_punct(i - 1, "~") &&
      text(i).find_first_of("lL") == std::string_view::npos) {
    warp_.statement.candidates.push_back({static_cast<std::uint32_t>(i - 1), 0xffffffffull,
                                          Candidate::mask, format("~{}", text(i))});
    return;
  }
  if (v == 1 && i >= 3 && is_punct(i - 1, "-") &&
      ((is_punct(i - 2, "(") && is_ident(i - 3) && narrow_type(text(i - 3))) ||
       (is_punct(i - 2, ")") && is_ident(i - 3) && narrow_type(text(i - 3))))) {
    std::string_view written =
        is_punct(i - 2, "(") ? format("{}(-1)", text(i - 3)) : format("({})-1", text(i - 3));
    warp_.statement.candidates.push_back(
        {static_cast<std::uint32_t>(i - 3), 0xffffffffull, Candidate::mask, written});
    return;
  }
  if (v != 5 && v != 16 && v != 31 && v != 32 && v != 0xffffffffull) return;
  // kWarpSize = 32, WARP_SIZE{32}, template <int WarpSize = 32>
  if (v == 32 && i >= 2 && (is_punct(i - 1, "=") || is_punct(i - 1, "{")) && is_ident(i - 2) &&
      is_warp_name(text(i - 2)) &&
      (is_punct(i + 1, ";") || is_punct(i + 1, ",") || is_punct(i + 1, "}") ||
       is_punct(i + 1, ")") || is_punct(i + 1, ">"))) {
    add(Rule::warp_size_constant, Category::hazard, i, keep(text(i - 2)),
        format("{} is set to 32: AMD wavefronts have 64 lanes (use warpSize)", text(i - 2)));
    reported_literals_.insert(static_cast<std::uint32_t>(i));
    return;
  }
  constant_use(i, v, {});
}

void Scanner::constant_use(std::size_t i, std::uint64_t v, std::string_view name) {
  Candidate c{static_cast<std::uint32_t>(i), v, Candidate::literal, name};
  std::string_view op = i > 0 && tok(i - 1).kind == TokenKind::punct ? text(i - 1) : "";
  if (op == "&" && v == 31)
    c.kind = Candidate::lane_and;
  else if (op == "%" && v == 32)
    c.kind = Candidate::lane_mod;
  else if (op == ">>" && v == 5)
    c.kind = Candidate::warp_shift;
  else if (op == "/" && v == 32)
    c.kind = Candidate::warp_div;
  else if (v == 0xffffffffull)
    c.kind = Candidate::mask;
  else if (v == 5)
    return;
  else if (v != 16 && v != 31 && v != 32)
    return;
  warp_.statement.candidates.push_back(c);
}

void Scanner::derive_from_thread_index() {
  if (warp_.device_depth < 0) return;
  std::string_view target = assigned_to(static_cast<std::uint32_t>(warp_.statement.last));
  if (!target.empty() && target != warp_.device_function) thread_derived_.insert(target);
}

std::string_view Scanner::assigned_to(std::uint32_t at) const {
  const Statement& s = warp_.statement;
  if (s.first < 0) return {};
  int depth = 0;
  // A bounded look back: a statement of millions of tokens stays linear.
  std::int64_t stop = std::max<std::int64_t>(s.first, static_cast<std::int64_t>(at) - 256);
  for (std::int64_t k = at; k > stop; --k) {
    auto i = static_cast<std::size_t>(k);
    if (tok(i).kind != TokenKind::punct) continue;
    std::string_view p = text(i);
    if (p == ")" || p == "]")
      ++depth;
    else if (p == "(" || p == "[")
      --depth;
    else if (depth <= 0 && (p == "=" || p == "|=" || p == "&=" || p == "+=" || p == "^=")) {
      if (is_ident(i - 1)) return text(i - 1);
      return {};
    }
  }
  auto first = static_cast<std::size_t>(s.first);
  if (is_ident(first) && text(first) == "return") return warp_.device_function;
  return {};
}

bool Scanner::thread_derived(const Statement& s) const {
  if (s.thread_idx) return true;
  if (thread_derived_.empty()) return false;
  for (std::int64_t k = s.first; k >= 0 && k <= s.last; ++k) {
    auto i = static_cast<std::size_t>(k);
    if (tokens_[i].kind == TokenKind::identifier && thread_derived_.contains(text(i))) return true;
  }
  return false;
}

void Scanner::emit_candidate(const Candidate& c, Rule rule, std::string_view op) {
  if (!reported_literals_.insert(c.token).second) return;
  // The message depends on the statement (the operation next to the literal), so it is built
  // now, into the file's arena: no allocation of its own.
  fmt::memory_buffer buffer;
  if (c.constant.empty())
    fmt::format_to(std::back_inserter(buffer), "{}", text(c.token));
  else if (c.value == 0xffffffffull)
    fmt::format_to(std::back_inserter(buffer), "{} (= 0xffffffff)", c.constant);
  else
    fmt::format_to(std::back_inserter(buffer), "{} (= {})", c.constant, c.value);
  std::string_view literal(buffer.data(), buffer.size());
  std::string_view message;
  switch (rule) {
    case Rule::warp_mask_32bit:
      message = format("32-bit lane mask {} with {}: lane masks are 64-bit on AMD wavefronts",
                       literal, op);
      break;
    case Rule::lane_id_32:
      message = format(
          "lane index computed with {} {} assumes 32-lane warps ({}): on 64-lane wavefronts "
          "lanes 32-63 get the indices of 0-31 (use % warpSize or __lane_id())",
          c.kind == Candidate::lane_and ? "&" : "%", literal, op);
      break;
    case Rule::warp_id_32:
      message = format(
          "warp index computed with {} {} assumes 32-lane warps ({}): on 64-lane wavefronts two "
          "indices name one wavefront (use / warpSize)",
          c.kind == Candidate::warp_shift ? ">>" : "/", literal, op);
      break;
    default:
      message = format(
          "{} next to {} assumes 32-lane warps; AMD wavefronts have 64 lanes "
          "(use warpSize)",
          literal, op);
      break;
  }
  add(rule, Category::hazard, c.token, keep(c.constant.empty() ? text(c.token) : c.constant),
      message);
}

std::string_view Scanner::nearest_warp_op(std::uint32_t at) const {
  // The operations are in token order: the nearest is next to where `at` would go.
  const auto& ops = warp_.statement.warp_ops;
  if (ops.empty()) return {};
  auto after = std::lower_bound(ops.begin(), ops.end(), at);
  if (after == ops.end()) return text(ops.back());
  if (after == ops.begin() || *after - at < at - *(after - 1)) return text(*after);
  return text(*(after - 1));
}

void Scanner::evaluate_statement() {
  Statement& s = warp_.statement;
  if (!s.candidates.empty()) {
    bool warp = !s.warp_ops.empty();
    // A lane or warp index: arithmetic on a thread index (threadIdx, or a variable assigned from
    // it in this device function) that is kept in a lane/warp variable or fed to a warp
    // operation. Host code and tiling (`tile[ty][tx % 32]`) are neither.
    bool from_thread = (warp_.device_depth >= 0 || s.thread_idx) && thread_derived(s);
    for (const Candidate& c : s.candidates) {
      std::string_view op = nearest_warp_op(c.token);
      std::string_view target = from_thread ? assigned_to(c.token) : std::string_view();
      bool lane_target = !target.empty() && is_lane_name(target);
      std::string why = warp          ? fmt::format("the value feeds {}", op)
                        : lane_target ? fmt::format("a thread index kept in {}", target)
                                      : std::string();
      switch (c.kind) {
        case Candidate::lane_and:
        case Candidate::lane_mod:
          if (from_thread && (warp || lane_target))
            emit_candidate(c, Rule::lane_id_32, why);
          else if (warp)
            emit_candidate(c, Rule::warp_size_literal, op);
          break;
        case Candidate::warp_shift:
        case Candidate::warp_div:
          if (from_thread && (warp || lane_target))
            emit_candidate(c, Rule::warp_id_32, why);
          else if (warp && c.value == 32)
            emit_candidate(c, Rule::warp_size_literal, op);
          break;
        case Candidate::mask:
          if (warp) emit_candidate(c, Rule::warp_mask_32bit, op);
          break;
        case Candidate::literal:
          if (warp) emit_candidate(c, Rule::warp_size_literal, op);
          break;
      }
    }
  }
  if (s.thread_idx || !thread_derived_.empty()) {
    // `int lane = tid & 31;` makes lane a thread index too.
    if (s.thread_idx || thread_derived(s)) derive_from_thread_index();
  }
  s.first = -1;
  s.last = -1;
  s.is_loop = false;
  s.thread_idx = false;
  s.warp_ops.clear();  // keeps capacity: this runs once per statement
  s.candidates.clear();
}

void Scanner::open_block() {
  if (warp_.pending_device && warp_.device_depth < 0) {
    // The body of a __global__/__device__ function: its name is the one before the parameters.
    warp_.device_depth = static_cast<std::int64_t>(warp_.blocks.size());
    warp_.pending_device = false;
    warp_.device_function = {};
    for (std::int64_t k = warp_.statement.last, depth = 0; k >= warp_.statement.first && k >= 0;
         --k) {
      auto i = static_cast<std::size_t>(k);
      if (is_punct(i, ")")) {
        ++depth;
      } else if (is_punct(i, "(") && --depth == 0) {
        if (i > 0 && is_ident(i - 1)) warp_.device_function = text(i - 1);
        break;
      }
    }
  }
  Block block;
  block.is_loop = warp_.statement.is_loop;
  if (block.is_loop) {
    for (const Candidate& c : warp_.statement.candidates)
      if (c.kind != Candidate::mask && c.value != 5) block.header.push_back(c);
  }
  end_statement();
  warp_.blocks.push_back(std::move(block));
  warp_.saved_depths.push_back(warp_.paren_depth);
  warp_.paren_depth = 0;
}

void Scanner::close_block() {
  end_statement();
  if (!warp_.blocks.empty()) {
    Block block = std::move(warp_.blocks.back());
    warp_.blocks.pop_back();
    if (block.is_loop && block.warp_op >= 0 && !block.header.empty()) {
      std::string op = fmt::format("{} in the loop", text(static_cast<std::size_t>(block.warp_op)));
      for (const Candidate& c : block.header) emit_candidate(c, Rule::warp_size_literal, op);
    }
  }
  if (!warp_.saved_depths.empty()) {
    warp_.paren_depth = warp_.saved_depths.back();
    warp_.saved_depths.pop_back();
  }
  if (warp_.device_depth >= 0 &&
      static_cast<std::int64_t>(warp_.blocks.size()) <= warp_.device_depth) {
    warp_.device_depth = -1;  // the device function ends: its thread-index variables with it
    warp_.device_function = {};
    thread_derived_.clear();
    narrow_.clear();
  }
}

void Scanner::start_statement(std::size_t i) {
  warp_.statement.first = static_cast<std::int64_t>(i);
  warp_.statement.is_loop =
      tok(i).kind == TokenKind::identifier && (text(i) == "for" || text(i) == "while");
}

}  // namespace kiln::hipcheck::detail
