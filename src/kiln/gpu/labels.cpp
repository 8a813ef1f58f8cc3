#include "kiln/gpu/labels.h"

#include <algorithm>

namespace kiln::gpu {

namespace {

std::string substitute(std::string text, const std::vector<std::string>& names,
                       const std::smatch& match) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string placeholder = "{" + names[i] + "}";
    for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at))
      text.replace(at, placeholder.size(), match[static_cast<int>(i + 1)].str());
  }
  return text;
}

}  // namespace

Result<GpuLabelMap::Entry> GpuLabelMap::compile(const std::string& pattern,
                                                const SourceLocation& where) {
  if (pattern.empty()) return fail_at(where, "a custom label must not be empty");
  Entry entry;
  entry.pattern = pattern;
  entry.where = where;
  std::string regex = "^";
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern[i] == '{') {
      auto close = pattern.find('}', i);
      auto name = close == std::string::npos ? "" : pattern.substr(i + 1, close - i - 1);
      if (name.empty() || !std::all_of(name.begin(), name.end(),
                                       [](unsigned char c) { return std::isalnum(c) || c == '_'; }))
        return fail_at(where, "custom GPU label '{}': a placeholder is written {{name}}", pattern);
      entry.names.push_back(name);
      regex += "([^.:/]+)";
      i = close + 1;
      continue;
    }
    if (std::string_view(".^$|()[]*+?\\{}").find(pattern[i]) != std::string_view::npos)
      regex += '\\';
    regex += pattern[i++];
  }
  regex += "$";
  entry.regex = std::regex(regex, std::regex::icase);
  return entry;
}

Status GpuLabelMap::serve(const std::string& pattern, const SourceLocation& where) {
  KILN_TRY(auto entry, compile(pattern, where));
  entries_.push_back(std::move(entry));
  return {};
}

Status GpuLabelMap::add(const std::string& pattern, const std::vector<std::string>& labels,
                        const SourceLocation& where) {
  if (labels.empty())
    return fail_at(where, "custom GPU label '{}' maps to no request (e.g. 'gpu:2 gpu-arch:gfx942')",
                   pattern);
  KILN_TRY(auto entry, compile(pattern, where));
  entry.labels = labels;
  for (const auto& label : labels) {
    for (std::size_t at = label.find('{'); at != std::string::npos; at = label.find('{', at + 1)) {
      auto close = label.find('}', at);
      auto name = close == std::string::npos ? "" : label.substr(at + 1, close - at - 1);
      if (std::find(entry.names.begin(), entry.names.end(), name) == entry.names.end())
        return fail_at(where,
                       "custom GPU label '{}': '{}' uses {{{}}}, which the label does not "
                       "define",
                       pattern, label, name);
    }
  }
  if (entry.names.empty()) {
    std::vector<GpuLabel> parsed;
    for (const auto& label : labels) parsed.push_back({label, where});
    auto request = parse_gpu_request(parsed);
    if (!request) return std::unexpected(request.error());
    if (!request->wants_gpus())
      return fail_at(where, "custom GPU label '{}' maps to no GPU request: '{}'", pattern,
                     fmt::join(labels, " "));
  }
  entries_.push_back(std::move(entry));
  return {};
}

std::vector<GpuLabel> GpuLabelMap::expand(std::span<const GpuLabel> labels) const {
  std::vector<GpuLabel> out;
  for (const auto& label : labels) {
    bool mapped = false;
    for (const auto& entry : entries_) {
      std::smatch match;
      if (!std::regex_match(label.value, match, entry.regex)) continue;
      for (const auto& request : entry.labels)
        out.push_back(
            {substitute(request, entry.names, match), label.where, label.value, entry.where});
      if (entry.labels.empty()) out.push_back(label);
      mapped = true;
      break;
    }
    if (!mapped) out.push_back(label);
  }
  return out;
}

std::vector<std::string> GpuLabelMap::builtin_labels() {
#if defined(__aarch64__)
  return {"self-hosted", "linux", "arm64", "ubuntu-*"};
#else
  return {"self-hosted", "linux", "x64", "ubuntu-*"};
#endif
}

bool GpuLabelMap::serves(std::string_view label) const {
  std::string text(label);
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const auto& builtin : builtin_labels()) {
    if (builtin.ends_with('*') ? text.starts_with(builtin.substr(0, builtin.size() - 1)) &&
                                     text.size() >= builtin.size()
                               : text == builtin)
      return true;
  }
  if (is_grammar_label(text)) return true;
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const Entry& entry) { return std::regex_match(text, entry.regex); });
}

std::vector<std::string> GpuLabelMap::patterns() const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) out.push_back(entry.pattern);
  return out;
}

}  // namespace kiln::gpu
