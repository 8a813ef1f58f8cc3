#include "kiln/gpu/labels.h"

#include <algorithm>

namespace kiln::gpu {

namespace {

std::string substitute(std::string text, const std::vector<std::string>& names,
                       const std::smatch& match) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string placeholder = "{" + names[i] + "}";
    for (auto at = text.find(placeholder); at != std::string::npos;
         at = text.find(placeholder, at))
      text.replace(at, placeholder.size(), match[static_cast<int>(i + 1)].str());
  }
  return text;
}

}  // namespace

Status GpuLabelMap::add(const std::string& pattern, const std::vector<std::string>& labels,
                        const SourceLocation& where) {
  if (pattern.empty()) return fail_at(where, "a custom GPU label must not be empty");
  if (labels.empty())
    return fail_at(where, "custom GPU label '{}' maps to no request (e.g. 'gpu:2 gpu-arch:gfx942')",
                   pattern);
  Entry entry;
  entry.pattern = pattern;
  entry.labels = labels;
  std::string regex = "^";
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern[i] == '{') {
      auto close = pattern.find('}', i);
      auto name = close == std::string::npos ? "" : pattern.substr(i + 1, close - i - 1);
      if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) {
            return std::isalnum(c) || c == '_';
          }))
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
  for (const auto& label : labels) {
    for (std::size_t at = label.find('{'); at != std::string::npos; at = label.find('{', at + 1)) {
      auto close = label.find('}', at);
      auto name = close == std::string::npos ? "" : label.substr(at + 1, close - at - 1);
      if (std::find(entry.names.begin(), entry.names.end(), name) == entry.names.end())
        return fail_at(where, "custom GPU label '{}': '{}' uses {{{}}}, which the label does not "
                       "define", pattern, label, name);
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
        out.push_back({substitute(request, entry.names, match), label.where});
      mapped = true;
      break;
    }
    if (!mapped) out.push_back(label);
  }
  return out;
}

}  // namespace kiln::gpu
