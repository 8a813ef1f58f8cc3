#pragma once
// Reading kiln.yml (host_config.cpp, serve_config.cpp): YAML nodes checked against the keys a
// section takes, every error at the node's FILE:LINE:COL. Internal to the config module.

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "kiln/config/host_config.h"
#include "kiln/core/result.h"

namespace kiln::config::detail {

class Reader {
 public:
  explicit Reader(std::filesystem::path file) : file_(std::move(file)) {}

  SourceLocation where(const YAML::Node& node) const {
    auto mark = node.Mark();
    if (mark.line < 0) return {file_.string(), 0, 0};
    return {file_.string(), mark.line + 1, mark.column + 1};
  }

  template <class... Args>
  std::unexpected<Error> error(const YAML::Node& node, fmt::format_string<Args...> format,
                               Args&&... args) const {
    return make_error(ErrorCode::invalid_input, fmt::format(format, std::forward<Args>(args)...),
                      where(node));
  }

  // A mapping whose keys are all in `allowed` (null or absent: empty).
  Status mapping(const YAML::Node& node, std::string_view path,
                 const std::set<std::string>& allowed) const {
    if (!node || node.IsNull()) return {};
    if (!node.IsMap()) return error(node, "{}: expected a mapping", path);
    for (const auto& entry : node) {
      auto key = entry.first.as<std::string>();
      if (!allowed.contains(key)) {
        std::string known;
        for (const auto& name : allowed) known += (known.empty() ? "" : ", ") + name;
        return error(entry.first, "{}: unknown key '{}' (known: {})", path, key, known);
      }
    }
    return {};
  }

  Result<std::string> scalar(const YAML::Node& node, std::string_view path) const {
    if (!node.IsScalar()) return error(node, "{}: expected a single value", path);
    return node.Scalar();
  }

  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
};

// A list of non-empty words (null or absent: none).
inline Result<std::vector<std::string>> read_words(const Reader& reader, const YAML::Node& node,
                                                   const std::string& path) {
  std::vector<std::string> words;
  if (!node || node.IsNull()) return words;
  if (!node.IsSequence()) return reader.error(node, "{}: expected a list", path);
  for (const auto& item : node) {
    KILN_TRY(auto word, reader.scalar(item, path));
    if (word.empty()) return reader.error(item, "{}: empty entry", path);
    words.push_back(word);
  }
  return words;
}

// `path` relative to the configuration file's folder.
inline std::filesystem::path resolve(const Reader& reader, const std::string& path) {
  std::filesystem::path resolved = path;
  if (resolved.is_relative()) resolved = reader.file().parent_path() / resolved;
  return resolved;
}

// serve: (serve_config.cpp).
Status read_serve(const Reader& reader, const YAML::Node& node, ServeConfig& serve);

// priority: (priority_config.cpp).
Status read_priority(const Reader& reader, const YAML::Node& node, PriorityPolicy& policy);

// slurm: (slurm_config.cpp).
Status read_slurm(const Reader& reader, const YAML::Node& node, std::optional<SlurmConfig>& slurm);

}  // namespace kiln::config::detail
