#include "kiln/hipcheck/finding.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>

#include <fmt/format.h>

#include "kiln/hipcheck/api_table.h"
#include "kiln/hipcheck/rocm.h"

namespace kiln::hipcheck {

namespace {

constexpr std::array<RuleInfo, 13> k_rules{{
    {Rule::cuda_api, "cuda-api", "Use of a CUDA API (runtime, driver, device or library)",
     "Convertible names have the HIP name in the message (hipify-clang or hipify-perl rewrite "
     "them); unsupported ones have no HIP equivalent and need a different design."},
    {Rule::cuda_header, "cuda-header", "#include of a CUDA header",
     "Include the HIP header named in the message instead."},
    {Rule::kernel_launch, "kernel-launch", "CUDA kernel launch with <<<...>>>",
     "hipcc accepts the triple-chevron syntax; hipify rewrites it to hipLaunchKernelGGL."},
    {Rule::inline_ptx, "inline-ptx", "Inline PTX assembly",
     "PTX does not run on AMD GPUs: use a HIP intrinsic or a portable C++ expression."},
    {Rule::cuda_macro, "cuda-macro", "Expansion of a macro whose definition uses CUDA",
     "Port the macro definition (reported at its own line); this marks where it is used."},
    {Rule::warp_size_literal, "warp-size-literal", "32-lane warp assumed next to a warp operation",
     "AMD wavefronts have 64 lanes (32 on RDNA in wave32 mode): use warpSize."},
    {Rule::warp_mask_32bit, "warp-mask-32bit", "32-bit lane mask used with a warp operation",
     "Lane masks are 64-bit on AMD: use a 64-bit mask (e.g. __activemask() or ~0ull)."},
    {Rule::lane_id_32, "lane-id-32", "Lane index computed for 32-lane warps",
     "Use threadIdx.x % warpSize (or __lane_id())."},
    {Rule::warp_id_32, "warp-id-32", "Warp index computed for 32-lane warps",
     "Use threadIdx.x / warpSize."},
    {Rule::warp_size_constant, "warp-size-constant", "Warp size defined as the constant 32",
     "Use warpSize (a device constant) or make the constant depend on the target."},
    {Rule::activemask, "activemask", "__activemask() returns a 64-bit mask on AMD",
     "Store the result in a 64-bit integer and do not compare it with 0xffffffff."},
    {Rule::syncwarp, "syncwarp", "__syncwarp() has no exact HIP equivalent",
     "Wavefronts run in lock-step on AMD; use __syncthreads() or a wave barrier where needed."},
    {Rule::cooperative_groups, "cooperative-groups", "Cooperative-groups feature HIP lacks",
     "HIP's cooperative groups have no such member: rewrite with HIP primitives."},
}};

}  // namespace

std::string_view category_name(Category category) {
  switch (category) {
    case Category::convertible:
      return "convertible";
    case Category::unsupported:
      return "unsupported";
    case Category::hazard:
      return "hazard";
  }
  return "unknown";
}

std::span<const RuleInfo> rules() { return k_rules; }

const RuleInfo& rule_info(Rule rule) { return k_rules[static_cast<std::size_t>(rule)]; }

std::string_view api_status_name(ApiStatus status) {
  switch (status) {
    case ApiStatus::none:
      return "";
    case ApiStatus::convertible:
      return "convertible";
    case ApiStatus::unsupported:
      return "unsupported";
    case ApiStatus::deprecated:
      return "deprecated";
    case ApiStatus::removed:
      return "removed";
    case ApiStatus::newer_rocm:
      return "newer-rocm";
  }
  return "";
}

std::string_view TextArena::store(std::string_view text) {
  if (text.empty()) return {};
  if (text.size() > left_) {
    constexpr std::size_t k_block = 16 * 1024;
    std::size_t size = std::max(k_block, text.size());
    blocks_.push_back(std::make_unique_for_overwrite<char[]>(size));
    next_ = blocks_.back().get();
    left_ = size;
  }
  char* at = next_;
  std::memcpy(at, text.data(), text.size());
  next_ += text.size();
  left_ -= text.size();
  return {at, text.size()};
}

namespace {

// The messages are appended piece by piece rather than through fmt: they are built for every
// finding a report shows, and a format string's parse was a fifth of a dense tree's run.
void append(std::string& out, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) out += part;
}

// Appends " in CUDA 10.0", or nothing when the tables only know that some version did it ("?").
void append_since(std::string& out, std::string_view version) {
  if (version != "?") append(out, {" in CUDA ", version});
}

void append_api_message(std::string& out, const ApiEntry& entry, ApiStatus status) {
  std::string_view name = entry.cuda_name;
  std::string_view hip = entry.hip_name;
  std::string_view removed = entry.removed;
  std::string_view deprecated = entry.deprecated;
  std::string_view library = library_name(entry.library);
  if (hip.empty())
    append(out, {name, " (", library, ") has no HIP equivalent"});
  else if (status == ApiStatus::newer_rocm)
    append(out, {name, " (", library, ") -> ", hip, " needs ROCm ",
                 parse_rocm_version(entry.hip_added).value_or(RocmVersion{}).to_string()});
  else
    append(out, {name, " (", library, ") -> ", hip});
  if (!removed.empty()) {
    out += "; removed";
    append_since(out, removed);
  } else if (!deprecated.empty()) {
    out += "; deprecated";
    append_since(out, deprecated);
  }
  if (!hip.empty()) {
    if (entry.hip_deprecated) append(out, {"; ", hip, " is deprecated in HIP"});
    if (entry.hip_experimental) append(out, {"; ", hip, " is experimental in HIP"});
  }
}

}  // namespace

std::string Finding::message() const {
  std::string out;
  append_message(out);
  return out;
}

// Written into the caller's string, so that a report of millions of findings allocates nothing
// per finding for its messages.
void Finding::append_message(std::string& out) const {
  if (!text.empty()) {
    out += text;
    return;
  }
  switch (rule) {
    case Rule::cuda_api:
      if (entry) append_api_message(out, *entry, status);
      return;
    case Rule::cuda_header:
      if (replacement.empty())
        append(out, {"CUDA header <", name, "> has no known HIP equivalent"});
      else
        append(out, {"CUDA header <", name, ">: include <", replacement, ">"});
      return;
    case Rule::kernel_launch:
      append(out,
             {"kernel launch ", name,
              "<<<...>>>: hipcc accepts it; hipify writes hipLaunchKernelGGL(", name, ", ...)"});
      return;
    case Rule::cooperative_groups:
      append(out, {name, " is not provided by HIP"});
      return;
    default:
      return;
  }
}

namespace {
constexpr std::uint64_t k_fnv_offset = 1469598103934665603ull;
constexpr std::uint64_t k_fnv_prime = 1099511628211ull;
}  // namespace

std::uint64_t line_fingerprint(std::string_view line) {
  // The line with leading and trailing blanks dropped and inner runs of blanks as one space.
  std::uint64_t h = k_fnv_offset;
  bool pending_blank = false;
  bool started = false;
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f') {
      pending_blank = started;
      continue;
    }
    if (pending_blank) h = (h ^ ' ') * k_fnv_prime;
    pending_blank = false;
    started = true;
    h = (h ^ static_cast<unsigned char>(c)) * k_fnv_prime;
  }
  return h;
}

std::uint64_t compute_fingerprint(Rule rule, std::string_view name, std::uint64_t line_hash) {
  std::uint64_t h = k_fnv_offset;
  for (char c : rule_info(rule).id) h = (h ^ static_cast<unsigned char>(c)) * k_fnv_prime;
  h = (h ^ 0xff) * k_fnv_prime;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * k_fnv_prime;
  h = (h ^ 0xff) * k_fnv_prime;
  for (int shift = 0; shift < 64; shift += 8) h = (h ^ ((line_hash >> shift) & 0xff)) * k_fnv_prime;
  return h;
}

std::string fingerprint_hex(std::uint64_t fingerprint) {
  return fmt::format("{:016x}", fingerprint);
}

std::optional<std::uint64_t> parse_fingerprint(std::string_view hex) {
  if (hex.size() != 16) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : hex) {
    std::uint64_t d;
    if (c >= '0' && c <= '9')
      d = static_cast<std::uint64_t>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<std::uint64_t>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<std::uint64_t>(c - 'A' + 10);
    else
      return std::nullopt;
    value = value << 4 | d;
  }
  return value;
}

}  // namespace kiln::hipcheck
