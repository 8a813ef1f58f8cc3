#include "kiln/gpu/request.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <optional>
#include <regex>

namespace kiln::gpu {

namespace {

std::string lowercase(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::optional<int> parse_count(std::string_view text) {
  int value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value <= 0) return std::nullopt;
  return value;
}

// A label as messages name it: 'gpu:2', or 'gpu-model:a100' of kiln.yml label 'gpu-a100'
// (FILE:LINE:COL).
std::string describe(const GpuLabel& label) {
  if (label.mapped_from.empty()) return fmt::format("'{}'", label.value);
  return fmt::format("'{}' of the host's label '{}'{}", label.value, label.mapped_from,
                     label.mapped_where.empty()
                         ? std::string{}
                         : fmt::format(" ({})", label.mapped_where.to_string()));
}

// Sets a qualifier once; a second, different value is an error naming both labels.
Status set_once(std::string& field, std::string& set_by, const std::string& value,
                const GpuLabel& label, std::string_view key) {
  if (!field.empty() && field != value)
    return fail_at(label.where, "runs-on label {}: {} is already '{}' from {}", describe(label),
                   key, field, set_by);
  field = value;
  set_by = describe(label);
  return {};
}

constexpr std::string_view k_qualifiers[] = {"gpu-vendor", "gpu-model", "gpu-arch", "gpu-mem",
                                             "gpu-mem-budget"};

}  // namespace

bool is_grammar_label(std::string_view label) {
  std::string text = lowercase(label);
  if (text == "gpu" || text.starts_with("gpu:")) return true;
  auto colon = text.find(':');
  if (colon == std::string::npos) return false;
  return std::find(std::begin(k_qualifiers), std::end(k_qualifiers), text.substr(0, colon)) !=
         std::end(k_qualifiers);
}

std::string GpuRequest::to_string() const {
  std::string text = all ? "gpu:all" : fmt::format("gpu:{}", count);
  if (!vendor.empty()) text += " gpu-vendor:" + vendor;
  if (!model.empty()) text += " gpu-model:" + model;
  if (!arch.empty()) text += " gpu-arch:" + arch;
  if (min_free_mib > 0) text += fmt::format(" gpu-mem:{}G", min_free_mib / 1024);
  if (memory_budget_mib > 0) text += fmt::format(" gpu-mem-budget:{}M", memory_budget_mib);
  return text;
}

Result<GpuRequest> parse_gpu_request(std::span<const GpuLabel> labels) {
  static const std::regex k_sm(R"(sm_[0-9]{2,3}[a-z]?)");
  static const std::regex k_gfx(R"(gfx[0-9]{1,2}[0-9a-f]{2})");
  GpuRequest request;
  bool counted = false;
  bool soft_count = false;  // the count is a custom label's bare `gpu`: another count wins
  bool qualified = false;
  std::string count_label;
  std::map<std::string, std::string> set_by;  // qualifier -> the label that set it
  for (const auto& label : labels) {
    std::string text = lowercase(label.value);
    if (text == "gpu" && !label.mapped_from.empty()) {
      if (counted) continue;
      request.count = 1;
      counted = soft_count = true;
      count_label = describe(label);
      continue;
    }
    if (text == "gpu" || text.starts_with("gpu:")) {
      GpuRequest counted_as;
      if (text == "gpu") {
        counted_as.count = 1;
      } else if (text == "gpu:all") {
        counted_as.all = true;
      } else if (auto n = parse_count(std::string_view(text).substr(4))) {
        counted_as.count = *n;
      } else {
        return fail_at(label.where,
                       "runs-on label '{}': the GPU count must be a positive integer or 'all'",
                       label.value);
      }
      if (counted && !soft_count &&
          (counted_as.all != request.all || counted_as.count != request.count))
        return fail_at(label.where, "runs-on label {} contradicts {}", describe(label),
                       count_label);
      request.all = counted_as.all;
      request.count = counted_as.count;
      counted = true;
      soft_count = false;
      count_label = describe(label);
      continue;
    }
    auto colon = text.find(':');
    if (colon == std::string::npos) continue;
    std::string key = text.substr(0, colon);
    std::string value = text.substr(colon + 1);
    if (std::find(std::begin(k_qualifiers), std::end(k_qualifiers), key) == std::end(k_qualifiers))
      continue;
    if (value.empty())
      return fail_at(label.where, "runs-on label '{}': {} needs a value", label.value, key);
    qualified = true;
    if (key == "gpu-vendor") {
      if (value != "nvidia" && value != "amd")
        return fail_at(label.where, "runs-on label '{}': the vendor must be nvidia or amd",
                       label.value);
      KILN_TRY_VOID(set_once(request.vendor, set_by[key], value, label, key));
    } else if (key == "gpu-model") {
      KILN_TRY_VOID(set_once(request.model, set_by[key], value, label, key));
    } else if (key == "gpu-arch") {
      if (!std::regex_match(value, k_sm) && !std::regex_match(value, k_gfx))
        return fail_at(label.where,
                       "runs-on label '{}': the architecture must be sm_NN (NVIDIA) or gfxNNN "
                       "(AMD), e.g. sm_90 or gfx942",
                       label.value);
      KILN_TRY_VOID(set_once(request.arch, set_by[key], value, label, key));
    } else if (key == "gpu-mem-budget") {
      // "40g" or "512m" (labels are compared lowercased): MiB of one GPU for the job's processes.
      std::optional<int> amount;
      if (value.size() > 1 && (value.back() == 'g' || value.back() == 'm'))
        amount = parse_count(std::string_view(value).substr(0, value.size() - 1));
      if (!amount)
        return fail_at(label.where,
                       "runs-on label '{}': a budget must be a positive number of GiB or MiB, "
                       "e.g. gpu-mem-budget:40G or gpu-mem-budget:512M",
                       label.value);
      auto mib = static_cast<std::uint64_t>(*amount) * (value.back() == 'g' ? 1024 : 1);
      if (request.memory_budget_mib != 0 && request.memory_budget_mib != mib)
        return fail_at(label.where, "runs-on label {}: gpu-mem-budget is already {}M from {}",
                       describe(label), request.memory_budget_mib, set_by[key]);
      set_by[key] = describe(label);
      request.memory_budget_mib = mib;
    } else {
      std::optional<int> gib;
      if (value.size() > 1 && value.back() == 'g')
        gib = parse_count(std::string_view(value).substr(0, value.size() - 1));
      if (!gib)
        return fail_at(label.where,
                       "runs-on label '{}': memory must be a positive number of GiB, e.g. "
                       "gpu-mem:40G",
                       label.value);
      auto mib = static_cast<std::uint64_t>(*gib) * 1024;
      if (request.min_free_mib != 0 && request.min_free_mib != mib)
        return fail_at(label.where, "runs-on label {}: gpu-mem is already {}G from {}",
                       describe(label), request.min_free_mib / 1024, set_by[key]);
      set_by[key] = describe(label);
      request.min_free_mib = mib;
    }
  }
  if (!request.arch.empty() && !request.vendor.empty()) {
    bool nvidia_arch = request.arch.starts_with("sm_");
    if (nvidia_arch != (request.vendor == "nvidia")) {
      SourceLocation where = labels.empty() ? SourceLocation{} : labels.front().where;
      return fail_at(where,
                     "runs-on labels: gpu-arch:{} (from {}) is not an architecture of "
                     "gpu-vendor:{} (from {})",
                     request.arch, set_by["gpu-arch"], request.vendor, set_by["gpu-vendor"]);
    }
  }
  if (qualified && !counted) request.count = 1;
  return request;
}

Result<GpuRequest> parse_gpu_request(const std::vector<std::string>& labels) {
  std::vector<GpuLabel> located;
  located.reserve(labels.size());
  for (const auto& label : labels) located.push_back({label, {}});
  return parse_gpu_request(std::span<const GpuLabel>(located));
}

}  // namespace kiln::gpu
