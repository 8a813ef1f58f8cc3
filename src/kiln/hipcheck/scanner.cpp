#include "kiln/hipcheck/scanner.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>

#include "kiln/hipcheck/headers.h"
#include "kiln/hipcheck/scanner_impl.h"

namespace kiln::hipcheck {

bool is_cuda_file(std::string_view path) { return path.ends_with(".cu") || path.ends_with(".cuh"); }

namespace detail {

namespace {

// Warp intrinsics: a literal 32 or a 32-bit mask next to one assumes 32-lane warps.
constexpr std::array<std::string_view, 25> k_warp_intrinsics{"__shfl",
                                                             "__shfl_up",
                                                             "__shfl_down",
                                                             "__shfl_xor",
                                                             "__shfl_sync",
                                                             "__shfl_up_sync",
                                                             "__shfl_down_sync",
                                                             "__shfl_xor_sync",
                                                             "__ballot",
                                                             "__ballot_sync",
                                                             "__any",
                                                             "__all",
                                                             "__any_sync",
                                                             "__all_sync",
                                                             "__uni_sync",
                                                             "__activemask",
                                                             "__syncwarp",
                                                             "__match_any_sync",
                                                             "__match_all_sync",
                                                             "__reduce_add_sync",
                                                             "__reduce_min_sync",
                                                             "__reduce_max_sync",
                                                             "__reduce_and_sync",
                                                             "__reduce_or_sync",
                                                             "__reduce_xor_sync"};
// Members of a cooperative-groups tile that are warp operations.
constexpr std::array<std::string_view, 7> k_warp_members{
    "shfl", "shfl_up", "shfl_down", "shfl_xor", "ballot", "match_any", "match_all"};
// Cooperative-groups names HIP (ROCm 6.2) does not provide.
constexpr std::array<std::string_view, 19> k_cg_missing{"reduce",
                                                        "inclusive_scan",
                                                        "exclusive_scan",
                                                        "memcpy_async",
                                                        "wait",
                                                        "wait_prior",
                                                        "labeled_partition",
                                                        "this_cluster",
                                                        "cluster_group",
                                                        "invoke_one",
                                                        "invoke_one_broadcast",
                                                        "block_tile_memory",
                                                        "experimental",
                                                        "plus",
                                                        "less",
                                                        "greater",
                                                        "bit_and",
                                                        "bit_or",
                                                        "bit_xor"};
// The subset specific enough to recognise without the namespace (after a using-directive).
constexpr std::array<std::string_view, 8> k_cg_distinct{
    "memcpy_async",  "wait_prior", "labeled_partition",    "this_cluster",
    "cluster_group", "invoke_one", "invoke_one_broadcast", "block_tile_memory"};

template <std::size_t N>
bool contains(const std::array<std::string_view, N>& set, std::string_view name) {
  return std::find(set.begin(), set.end(), name) != set.end();
}

// A device function or type whose name is not CUDA-specific (umin, saturate, float2int): only
// counted in .cu/.cuh files, and device functions only when called.
bool generic_name(const ApiEntry& entry) {
  std::string_view name = entry.cuda_name;
  if (entry.library != Library::device && entry.library != Library::driver &&
      entry.library != Library::runtime && entry.library != Library::cudnn)
    return false;
  for (std::string_view prefix : {"cu", "CU", "Cu", "__", "nv", "NV", "_CU", "_Cu"})
    if (name.starts_with(prefix)) return false;
  return true;
}

bool looks_like_ptx(std::string_view code) {
  static constexpr std::string_view k_markers[] = {
      ".u8",    ".u16",    ".u32",    ".u64",   ".s8",      ".s16",    ".s32",    ".s64",
      ".b8",    ".b16",    ".b32",    ".b64",   ".f16",     ".f32",    ".f64",    ".pred",
      ".reg",   ".global", ".shared", ".sync",  ".aligned", "%laneid", "%warpid", "%smid",
      "%clock", "%tid",    "%ntid",   "%ctaid", "%lanemask"};
  for (std::string_view m : k_markers)
    if (code.find(m) != std::string_view::npos) return true;
  return false;
}

}  // namespace

Scanner::Scanner(std::string_view path, std::string_view source, const MacroMap* external,
                 std::vector<Token>& tokens, const ScanOptions& options,
                 const std::vector<std::string>* shims)
    : path_(path),
      source_(source),
      external_(external && !external->empty() ? external : nullptr),
      tokens_(tokens),
      cuda_file_(is_cuda_file(path)),
      options_(options),
      table_(ApiTable::instance()),
      kiln_(ApiTable::kiln()) {
  out_.path = path_;
  out_.strings = std::make_shared<TextArena>();
  if (shims)
    for (const std::string& name : *shims) defined_names_.insert(name);
  if (external_) {
    have_macros_ = true;
    for (const auto& [name, macro] : *external_) {
      std::uint64_t h = ApiTable::hash(name);
      macro_filter_[(h >> 6) & 15] |= 1ull << (h & 63);
    }
  }
}

Finding& Scanner::add(Rule rule, Category category, std::size_t token, std::string_view name,
                      std::string_view message) {
  const Token& t = tokens_[token];
  // Findings are kept in (line, column) order as they come: almost all arrive in order, and the
  // few that do not (a loop header's literal, reported when the loop closes) go in their place.
  int line = static_cast<int>(t.line);
  // The column counts code points from the line's start; on one line the count goes on from
  // the previous finding, so a line with many findings costs its length once, not per finding.
  if (t.line_start != column_line_start_ || t.offset < column_offset_ || out_.findings.empty()) {
    column_line_start_ = t.line_start;
    column_offset_ = t.line_start;
    column_ = 1;
  }
  for (std::uint32_t k = column_offset_; k < t.offset && k < source_.size(); ++k)
    if ((static_cast<unsigned char>(source_[k]) & 0xC0) != 0x80) ++column_;
  column_offset_ = std::max(column_offset_, t.offset);
  int column = column_;
  auto at = out_.findings.end();
  if (!out_.findings.empty() &&
      (out_.findings.back().line > line ||
       (out_.findings.back().line == line && out_.findings.back().column > column))) {
    at = std::upper_bound(out_.findings.begin(), out_.findings.end(), std::pair(line, column),
                          [](const std::pair<int, int>& key, const Finding& f) {
                            return key.first != f.line ? key.first < f.line : key.second < f.column;
                          });
  }
  Finding f;
  f.line = line;
  f.column = column;
  int width = 0;
  for (char c : t.text(source_))
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++width;
  f.end_column = f.column + std::max(width, 1);  // stray UTF-8 continuation bytes have no width
  f.rule = rule;
  f.category = category;
  if (t.line_start != line_hash_start_ || out_.findings.empty()) {
    std::size_t end = source_.find('\n', t.line_start);
    if (end == std::string_view::npos) end = source_.size();
    line_hash_ = line_fingerprint(source_.substr(t.line_start, end - t.line_start));
    line_hash_start_ = t.line_start;
  }
  f.fingerprint = compute_fingerprint(rule, name, line_hash_);
  if (cuda_only_depth_ > 0) {
    f.guarded = true;
    f.guard = guard_;
  }
  f.name = name;
  f.text = message;
  if (at == out_.findings.end()) return out_.findings.emplace_back(f);
  return *out_.findings.insert(at, f);
}

FileScan Scanner::run() {
  LexStats stats = lex(source_, tokens_);
  out_.lines = stats.lines;
  out_.code_lines = stats.code_lines;
  std::size_t i = 0;
  while (i < tokens_.size()) {
    if (tokens_[i].flags & k_directive_hash) {
      i = directive(i);
      continue;
    }
    code_token(i, false);
    ++i;
  }
  end_statement();
  for (std::string_view name : defined_names_)
    if (kiln_.lookup(name) || table_.lookup(name) || library_family_name(name))
      out_.shims.emplace_back(name);
  std::sort(out_.shims.begin(), out_.shims.end());  // the set's order is not the same each run
  return std::move(out_);
}

std::size_t Scanner::directive(std::size_t hash) {
  std::size_t end = hash + 1;
  while (end < tokens_.size() && (tokens_[end].flags & k_in_directive) &&
         !(tokens_[end].flags & k_directive_hash))
    ++end;
  if (hash + 1 >= end || !is_ident(hash + 1)) return end;
  std::string_view name = text(hash + 1);
  if (name == "include" || name == "include_next" || name == "import") {
    if (hash + 2 < end && tokens_[hash + 2].kind == TokenKind::header_name) {
      std::string_view quoted = text(hash + 2);
      std::string_view header = quoted.substr(1, quoted.size() >= 2 ? quoted.size() - 2 : 0);
      if (quoted.size() < 2 || (quoted.back() != '>' && quoted.back() != '"'))
        header = quoted.substr(1);
      bool quoted_include = quoted.size() >= 2 && quoted.front() == '"';
      auto match = classify_header(header);
      // "cuda_helpers.h" of the project is the project's, whatever it is called.
      if (match && quoted_include && options_.project && options_.project->resolves(path_, header))
        match.reset();
      if (match) {
        // The message is built from name and replacement when shown (Finding::message).
        add(Rule::cuda_header, match->hip.empty() ? Category::unsupported : Category::convertible,
            hash + 2, keep(header))
            .replacement = match->hip;
      }
    }
  } else if (name == "define") {
    define(hash, end);
  } else if (name == "undef") {
    if (hash + 2 < end && is_ident(hash + 2)) {
      local_macros_.erase(text(hash + 2));
      shadowed_.insert(text(hash + 2));
      defined_names_.erase(text(hash + 2));
    }
  } else if (name == "else" || name == "endif") {
    conditional(name, hash + 2, end);
  } else if (name == "if" || name == "elif" || name == "ifdef" || name == "ifndef") {
    conditional(name, hash + 2, end);
    // A version or feature test names CUDA as much as code does; these lines are their own
    // statements for the warp rules.
    WarpState saved = std::move(warp_);
    warp_ = WarpState{};
    for (std::size_t k = hash + 2; k < end; ++k) code_token(k, true);
    end_statement();
    warp_ = std::move(saved);
  }
  return end;
}

void Scanner::define(std::size_t hash, std::size_t end) {
  std::size_t name_at = hash + 2;
  if (name_at >= end || !is_ident(name_at)) return;
  std::string_view name = text(name_at);
  bool function_like = name_at + 1 < end && is_punct(name_at + 1, "(") &&
                       tok(name_at + 1).offset == tok(name_at).offset + tok(name_at).length;
  std::size_t body = name_at + 1;
  if (function_like) {
    while (body < end && !is_punct(body, ")")) ++body;
    if (body < end) ++body;
  }
  local_macros_.erase(name);
  shadowed_.insert(name);
  constants_.erase(name);
  defined_names_.insert(name);

  // An object-like macro that is one number: a named constant for the warp rules.
  if (!function_like) {
    std::size_t b = body, e = end;
    while (e - b >= 3 && is_punct(b, "(") && is_punct(e - 1, ")")) ++b, --e;
    if (e - b == 1 && tok(b).kind == TokenKind::number) {
      if (auto value = integer_value(text(b))) {
        if (*value == 32 && is_warp_name(name)) {
          add(Rule::warp_size_constant, Category::hazard, b, keep(name),
              format("{} is defined as 32: AMD wavefronts have 64 lanes (use warpSize)", name));
          return;
        }
        constants_[name] = {*value, tok(b).line};
        return;
      }
    }
  }

  defining_ = MacroRecord{name, tok(name_at).line, function_like, Category::convertible, {}};
  WarpState saved = std::move(warp_);
  warp_ = WarpState{};
  for (std::size_t k = body; k < end; ++k) code_token(k, false);
  end_statement();
  warp_ = std::move(saved);
  MacroRecord record = std::move(*defining_);
  defining_.reset();
  if (record.uses.empty()) return;
  CudaMacro macro{std::string(name), path_,           static_cast<int>(record.line),
                  function_like,     record.category, std::move(record.uses)};
  shadowed_.erase(name);
  out_.macros.push_back(macro);
  local_macros_[name] = std::move(macro);
  std::uint64_t h = ApiTable::hash(name);
  macro_filter_[(h >> 6) & 15] |= 1ull << (h & 63);
  have_macros_ = true;
}

void Scanner::record_use(std::string_view name, Category category) {
  if (!defining_) return;
  if (category == Category::unsupported) defining_->category = Category::unsupported;
  if (std::find(defining_->uses.begin(), defining_->uses.end(), name) == defining_->uses.end())
    defining_->uses.emplace_back(name);
}

void Scanner::code_token(std::size_t i, bool in_condition) {
  const Token& t = tokens_[i];
  switch (t.kind) {
    case TokenKind::identifier:
      identifier(i, in_condition);
      break;
    case TokenKind::number:
      number(i);
      break;
    case TokenKind::punct:
      if (t.length == 3 && !in_condition && is(text(i), "<<<")) kernel_launch(i);
      break;
    default:
      break;
  }
  warp_token(i);
}

const CudaMacro* Scanner::find_macro(std::string_view name, std::uint64_t h) const {
  if (!(macro_filter_[(h >> 6) & 15] & (1ull << (h & 63)))) return nullptr;
  if (auto it = local_macros_.find(name); it != local_macros_.end()) return &it->second;
  if (!external_ || shadowed_.contains(name)) return nullptr;
  auto it = external_->find(std::string(name));
  if (it == external_->end() || it->second.file == path_) return nullptr;
  return &it->second;
}

void Scanner::identifier(std::size_t i, bool in_condition) {
  std::string_view name = text(i);
  if (i < shim_end_) return;

  if (i > 0 && tokens_[i - 1].kind == TokenKind::punct) {
    if (is_punct(i - 1, ".") || is_punct(i - 1, "->")) {
      if (contains(k_warp_members, name)) warp_op(i);
      return;
    }
    if (i >= 2 && is_punct(i - 1, "::")) {
      if (is_ident(i - 2)) {
        std::string_view qualifier = text(i - 2);
        // nvcuda::wmma::fragment
        if (qualifier == "nvcuda" && is(name, "wmma") && is_punct(i + 1, "::") && is_ident(i + 2))
          qualified_library(i, name);
        if (std::find(cg_aliases_.begin(), cg_aliases_.end(), qualifier) != cg_aliases_.end())
          cooperative_member(i, name);
        return;
      }
      if (is_punct(i - 2, ">")) return;  // a member of a template specialisation
    }
  }

  if (name.size() > 2 && name[0] == '_' && name[1] == '_') {
    if (is(name, "__device__") || is(name, "__global__")) {
      warp_.pending_device = true;
      return;
    }
    if (contains(k_warp_intrinsics, name)) {
      warp_op(i);
      if (is(name, "__activemask")) {
        add(Rule::activemask, Category::hazard, i, "__activemask",
            "__activemask() returns a 64-bit lane mask on AMD GPUs");
        return;
      }
      if (is(name, "__syncwarp")) {
        add(Rule::syncwarp, Category::hazard, i, "__syncwarp",
            "__syncwarp() assumes 32-lane warps and has no exact HIP equivalent");
        return;
      }
    } else if (is(name, "__asm__") || is(name, "__asm")) {
      if (!in_condition) inline_asm(i);
      return;
    }
  } else if (is(name, "asm")) {
    if (!in_condition) inline_asm(i);
    return;
  } else if ((name[0] == 'u' || name[0] == 'i') && warp_.device_depth >= 0 && declaration(i)) {
    return;
  } else if (is(name, "threadIdx")) {
    warp_.statement.thread_idx = true;
    return;
  } else if (is(name, "cub")) {
    if (is_punct(i + 1, "::") && is_ident(i + 2)) cub_use(i);
    return;
  } else if (is(name, "wmma") || is(name, "cuda")) {
    if (is_punct(i + 1, "::") && is_ident(i + 2) && !in_condition) qualified_library(i, name);
    return;
  } else if (is(name, "namespace")) {
    // namespace cg = cooperative_groups;   (or = ::cooperative_groups)
    std::size_t k = i + 3;
    if (is_punct(k, "::")) ++k;
    if (is_ident(i + 1) && is_punct(i + 2, "=") && is_ident(k) && is(text(k), "cooperative_groups"))
      cg_aliases_.push_back(text(i + 1));
    return;
  } else if (is(name, "typedef")) {
    shim_declaration(i);
    return;
  } else if (is(name, "using")) {
    if (shim_declaration(i)) return;
    if (is_ident(i + 1) && is(text(i + 1), "namespace") && is_ident(i + 2) &&
        is(text(i + 2), "cooperative_groups"))
      using_cg_ = true;
    return;
  } else if (using_cg_ &&
             (contains(k_cg_distinct, name) || is(name, "tiled_partition") ||
              is(name, "thread_block_tile") ||
              ((is(name, "reduce") || is(name, "inclusive_scan") || is(name, "exclusive_scan")) &&
               is_punct(i + 1, "(")))) {
    cooperative_member(i, name);
    return;
  }

  if (have_macros_ && !in_condition) {
    if (const CudaMacro* macro = find_macro(name, ApiTable::hash(name))) {
      if (!macro->function_like || is_punct(i + 1, "(")) {
        macro_use(i, *macro);
        return;
      }
    }
  }
  if (!constants_.empty()) {
    if (auto c = constants_.find(name); c != constants_.end()) {
      constant_use(i, c->second.first, name);
      return;
    }
  }
  const ApiEntry* entry = kiln_.lookup(name);
  if (!entry) entry = table_.lookup(name);
  if (entry) {
    if (!defined_names_.empty() && defined_names_.contains(name)) return;
    if (generic_name(*entry)) {
      if (!cuda_file_) return;
      if (entry->library == Library::device && !is_punct(i + 1, "(")) return;
    }
    api_use(i, *entry);
    return;
  }
  if (!in_condition) library_family(i, name);
}

void Scanner::api_use(std::size_t i, const ApiEntry& entry) {
  // Only what counting and baselines need is decided here; the message is built from the entry
  // when it is shown (Finding::message).
  std::string_view name = entry.cuda_name;
  bool removed = *entry.removed != '\0';
  bool deprecated = *entry.deprecated != '\0';
  bool here = available_in(entry, options_.rocm);
  // Spelled the same in this ROCm (a warp-sync or bf16 intrinsic of a later release): not
  // residual CUDA, like __syncthreads.
  if (here && name == entry.hip_name) return;
  Category category;
  ApiStatus status;
  if (*entry.hip_name == '\0') {
    category = Category::unsupported;
    status = removed ? ApiStatus::removed : ApiStatus::unsupported;
  } else if (!here) {
    category = Category::unsupported;
    status = ApiStatus::newer_rocm;
  } else {
    category = Category::convertible;
    status = removed      ? ApiStatus::removed
             : deprecated ? ApiStatus::deprecated
                          : ApiStatus::convertible;
  }
  Finding& f = add(Rule::cuda_api, category, i, name);
  f.status = status;
  f.replacement = entry.hip_name;
  f.library = library_name(entry.library);
  f.entry = &entry;
  record_use(name, category);
}

void Scanner::cub_use(std::size_t i) {
  std::string_view member = text(i + 2);
  std::string_view qualified = format("cub::{}", member);
  Finding& f = add(Rule::cuda_api, Category::convertible, i, qualified,
                   format("{} (CUB) -> hipcub::{}", qualified, member));
  f.status = ApiStatus::convertible;
  f.replacement = format("hipcub::{}", member);
  f.library = library_name(Library::cub);
  record_use(qualified, Category::convertible);
}

void Scanner::macro_use(std::size_t i, const CudaMacro& macro) {
  std::string uses;
  for (std::size_t k = 0; k < macro.uses.size() && k < 4; ++k)
    uses += (k ? ", " : "") + macro.uses[k];
  if (macro.uses.size() > 4) uses += ", ...";
  std::string where = macro.file == path_ ? fmt::format("line {}", macro.line)
                                          : fmt::format("{}:{}", macro.file, macro.line);
  add(Rule::cuda_macro, macro.category, i, keep(macro.name),
      format("macro {} uses CUDA ({}); defined at {}", macro.name, uses, where));
  record_use(macro.name, macro.category);
}

void Scanner::inline_asm(std::size_t i) {
  std::size_t k = i + 1;
  while (is_ident(k) && (text(k) == "volatile" || text(k) == "__volatile__" || text(k) == "goto" ||
                         text(k) == "inline"))
    ++k;
  if (!is_punct(k, "(")) return;
  bool ptx = cuda_file_;
  int depth = 0;
  for (; k < tokens_.size() && !ptx; ++k) {
    if (is_punct(k, "("))
      ++depth;
    else if (is_punct(k, ")") && --depth == 0)
      break;
    else if (tok(k).kind == TokenKind::string && looks_like_ptx(text(k)))
      ptx = true;
  }
  if (!ptx) return;
  add(Rule::inline_ptx, Category::unsupported, i, keep(text(i)),
      "inline PTX assembly does not run on AMD GPUs");
  record_use("asm", Category::unsupported);
}

void Scanner::kernel_launch(std::size_t i) {
  std::size_t at = i;
  std::string_view name = "kernel";
  if (i > 0) {
    std::size_t j = i - 1;
    // kernel<T, 4><<<...>>>: step back over the template arguments.
    if (is_punct(j, ">") || is_punct(j, ">>")) {
      int depth = 0;
      while (true) {
        if (is_punct(j, ">"))
          depth += 1;
        else if (is_punct(j, ">>"))
          depth += 2;
        else if (is_punct(j, "<"))
          depth -= 1;
        if (depth <= 0 || j == 0) break;
        --j;
      }
      if (j > 0) --j;
    }
    if (is_ident(j)) {
      if (text(j) == "operator") return;
      at = j;
      name = keep(text(j));
    }
  }
  // The message is built from the name when shown (Finding::message).
  add(Rule::kernel_launch, Category::convertible, at, name).replacement = "hipLaunchKernelGGL";
  if (defining_) record_use(fmt::format("{}<<<>>>", name), Category::convertible);
}

void Scanner::cooperative_member(std::size_t i, std::string_view name) {
  if (name == "tiled_partition" || name == "thread_block_tile") {
    warp_op(i);
    return;
  }
  if (contains(k_cg_missing, name) || (using_cg_ && contains(k_cg_distinct, name))) {
    add(Rule::cooperative_groups, Category::hazard, i, format("cooperative_groups::{}", name));
  }
}

}  // namespace detail

const ScanOptions& default_scan_options() {
  static const ScanOptions options;
  return options;
}

FileScan scan_source(std::string_view path, std::string_view source, const MacroMap* external,
                     std::vector<Token>& tokens, const ScanOptions& options,
                     const std::vector<std::string>* shims) {
  return detail::Scanner(path, source, external, tokens, options, shims).run();
}

FileScan scan_source(std::string_view path, std::string_view source, const MacroMap* external,
                     const ScanOptions& options) {
  std::vector<Token> tokens;
  return scan_source(path, source, external, tokens, options);
}

}  // namespace kiln::hipcheck
