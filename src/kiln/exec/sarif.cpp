#include "kiln/exec/sarif.h"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include <fmt/core.h>

#include "kiln/core/json_parse.h"
#include "kiln/core/run_as.h"
#include "kiln/exec/actions_support.h"

namespace kiln::exec {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::string_view k_action = "github/codeql-action/upload-sarif";
// GitHub refuses logs over 10 MB compressed; an uncompressed log this large is not a report.
constexpr std::uintmax_t k_max_log_bytes = 512ull << 20;
constexpr int k_max_base_depth = 8;

const json* member(const json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::string string_at(const json& object, std::string_view key) {
  const json* value = member(object, key);
  return value && value->is_string() ? value->get<std::string>() : std::string();
}

int int_at(const json& object, std::string_view key) {
  const json* value = member(object, key);
  if (!value || !value->is_number_integer()) return 0;
  auto number = value->get<long long>();
  return number > 0 && number < (1 << 30) ? static_cast<int>(number) : 0;
}

// A non-negative integer member (an index into an array), if there is one.
std::optional<std::size_t> index_at(const json& object, std::string_view key) {
  const json* value = member(object, key);
  if (!value || !value->is_number_integer() || value->get<long long>() < 0) return std::nullopt;
  return value->get<std::size_t>();
}

// %XX escapes of a URI decoded; a malformed escape is kept as written.
std::string percent_decoded(std::string_view text) {
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out += static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

// A URI's path: `file:///a/b` and `file://host/a/b` give /a/b, a relative reference is kept
// relative, any other scheme (https:, a Windows drive) gives nothing.
std::optional<fs::path> uri_path(std::string_view uri) {
  if (uri.starts_with("file://")) {
    std::string_view rest = uri.substr(7);
    auto slash = rest.find('/');
    if (slash == std::string_view::npos) return std::nullopt;
    return fs::path(percent_decoded(rest.substr(slash)));
  }
  auto colon = uri.find(':');
  auto slash = uri.find('/');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon < slash))
    return std::nullopt;  // a scheme
  return fs::path(percent_decoded(uri));
}

// Where an artifactLocation (or an originalUriBaseIds entry) points: absolute, or relative to
// the checkout when it names no known base.
std::optional<fs::path> resolve_location(const json& location, const json* bases,
                                         const fs::path& checkout, int depth = 0) {
  auto path = uri_path(string_at(location, "uri"));
  if (!path) return std::nullopt;
  if (path->is_absolute()) return path->lexically_normal();
  std::string base_id = string_at(location, "uriBaseId");
  fs::path base = checkout;
  if (!base_id.empty() && bases && depth < k_max_base_depth) {
    if (const json* entry = member(*bases, base_id); entry && entry->is_object()) {
      auto resolved = resolve_location(*entry, bases, checkout, depth + 1);
      if (!resolved) return std::nullopt;
      base = *resolved;
    }
  }
  return (base / *path).lexically_normal();
}

// The rule a result names: by ruleIndex into the driver's rules, else by ruleId.
const json* rule_of(const json& result, const json* rules) {
  if (!rules || !rules->is_array()) return nullptr;
  if (auto i = index_at(result, "ruleIndex"); i && *i < rules->size()) return &(*rules)[*i];
  std::string id = string_at(result, "ruleId");
  if (id.empty()) return nullptr;
  for (const auto& rule : *rules)
    if (string_at(rule, "id") == id) return &rule;
  return nullptr;
}

// "{0} is not {1}" with the message's arguments; "{{" and "}}" are braces.
std::string with_arguments(const std::string& text, const json* arguments) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if ((c == '{' || c == '}') && i + 1 < text.size() && text[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '{') {
      auto close = text.find('}', i);
      if (close != std::string::npos && close > i + 1) {
        std::string digits = text.substr(i + 1, close - i - 1);
        if (std::all_of(digits.begin(), digits.end(),
                        [](char d) { return d >= '0' && d <= '9'; }) &&
            digits.size() < 6) {
          auto n = static_cast<std::size_t>(std::stoul(digits));
          if (arguments && arguments->is_array() && n < arguments->size() &&
              (*arguments)[n].is_string())
            out += (*arguments)[n].get<std::string>();
          i = close;
          continue;
        }
      }
    }
    out += c;
  }
  return out;
}

std::string message_of(const json& result, const json* rule) {
  const json* message = member(result, "message");
  if (message) {
    std::string text = string_at(*message, "text");
    if (text.empty() && rule) {
      std::string id = string_at(*message, "id");
      if (const json* strings = member(*rule, "messageStrings"); strings && !id.empty())
        if (const json* entry = member(*strings, id)) text = string_at(*entry, "text");
    }
    if (!text.empty()) return with_arguments(text, member(*message, "arguments"));
  }
  if (rule)
    if (const json* description = member(*rule, "shortDescription"))
      if (auto text = string_at(*description, "text"); !text.empty()) return text;
  return "(no message)";
}

AnnotationLevel level_of(const json& result, const json* rule) {
  std::string level = string_at(result, "level");
  if (level.empty() && rule)
    if (const json* configuration = member(*rule, "defaultConfiguration"))
      level = string_at(*configuration, "level");
  if (level == "error") return AnnotationLevel::error;
  if (level == "note" || level == "none") return AnnotationLevel::notice;
  return AnnotationLevel::warning;
}

// Code scanning shows no suppressed result (unless the suppression was rejected), none absent
// from the baseline, and none of a kind that is not a problem.
bool is_shown(const json& result) {
  if (string_at(result, "baselineState") == "absent") return false;
  std::string kind = string_at(result, "kind");
  if (kind == "pass" || kind == "notApplicable") return false;
  if (const json* suppressions = member(result, "suppressions");
      suppressions && suppressions->is_array())
    for (const auto& suppression : *suppressions)
      if (string_at(suppression, "status") != "rejected") return false;
  return true;
}

std::unexpected<Error> shape_error(const fs::path& origin, const std::string& where,
                                   std::string_view what) {
  return fail(ErrorCode::invalid_input, "{}: not a SARIF 2.1.0 log: {} {}", origin.string(), where,
              what);
}

}  // namespace

Result<SarifResults> sarif_annotations(const json& log, const fs::path& origin,
                                       const fs::path& checkout_path) {
  if (!log.is_object()) return shape_error(origin, "the top level", "is not an object");
  if (std::string version = string_at(log, "version"); !version.empty() && version != "2.1.0")
    return fail(ErrorCode::invalid_input, "{}: SARIF version {}; kiln reads version 2.1.0",
                origin.string(), version);
  const json* runs = member(log, "runs");
  if (!runs || !runs->is_array()) return shape_error(origin, "\"runs\"", "is not an array");
  fs::path checkout = checkout_path.lexically_normal();
  SarifResults out;
  for (std::size_t r = 0; r < runs->size(); ++r) {
    const json& run = (*runs)[r];
    std::string where = fmt::format("runs[{}]", r);
    if (!run.is_object()) return shape_error(origin, where, "is not an object");
    const json* driver = nullptr;
    if (const json* tool = member(run, "tool")) driver = member(*tool, "driver");
    if (driver) {
      std::string name = string_at(*driver, "name");
      if (!name.empty() && std::find(out.tools.begin(), out.tools.end(), name) == out.tools.end())
        out.tools.push_back(name);
    }
    const json* rules = driver ? member(*driver, "rules") : nullptr;
    const json* bases = member(run, "originalUriBaseIds");
    const json* results = member(run, "results");
    if (!results || results->is_null()) continue;
    if (!results->is_array()) return shape_error(origin, where + ".results", "is not an array");
    for (std::size_t i = 0; i < results->size(); ++i) {
      const json& result = (*results)[i];
      std::string at = fmt::format("{}.results[{}]", where, i);
      if (!result.is_object()) return shape_error(origin, at, "is not an object");
      ++out.results;
      if (!is_shown(result)) {
        ++out.suppressed;
        continue;
      }
      const json* rule = rule_of(result, rules);
      Annotation note;
      note.level = level_of(result, rule);
      note.message = message_of(result, rule);
      note.title = string_at(result, "ruleId");
      if (note.title.empty() && rule) note.title = string_at(*rule, "id");
      const json* locations = member(result, "locations");
      if (locations && !locations->is_array())
        return shape_error(origin, at + ".locations", "is not an array");
      const json* physical = nullptr;
      if (locations && !locations->empty()) physical = member((*locations)[0], "physicalLocation");
      const json* artifact = physical ? member(*physical, "artifactLocation") : nullptr;
      // Only an index into the run's artifacts (as clang's analyzer may write): its location.
      if (artifact && !member(*artifact, "uri"))
        if (auto index = index_at(*artifact, "index"))
          if (const json* artifacts = member(run, "artifacts");
              artifacts && artifacts->is_array() && *index < artifacts->size())
            artifact = member((*artifacts)[*index], "location");
      std::optional<fs::path> file;
      if (artifact) file = resolve_location(*artifact, bases, checkout);
      if (file) {
        auto relative = file->lexically_relative(checkout);
        if (!relative.empty() && *relative.begin() != ".." && relative != ".")
          note.file = relative.generic_string();
      }
      if (note.file.empty()) {
        ++out.outside;
      } else {
        const json* region = member(*physical, "region");
        note.line = region ? int_at(*region, "startLine") : 0;
        if (note.line == 0) note.line = 1;  // a result on the whole file: its first line
        note.end_line = region ? int_at(*region, "endLine") : 0;
        if (note.end_line < note.line) note.end_line = note.line;
        note.column = region ? int_at(*region, "startColumn") : 0;
        // SARIF's endColumn is the column after the region; an annotation's is its last.
        int end_column = region ? int_at(*region, "endColumn") : 0;
        if (note.column > 0) note.end_column = std::max(note.column, end_column - 1);
      }
      out.annotations.push_back(std::move(note));
    }
  }
  return out;
}

Result<ActionResult> run_upload_sarif(const std::map<std::string, std::string>& with,
                                      const ActionContext& context) {
  ActionInputs inputs(with, {"sarif_file", "checkout_path", "category", "ref", "sha", "token",
                             "matrix", "wait-for-processing"});
  warn_unexpected_inputs(inputs, k_action, context);
  ActionResult result;
  auto failed = [&](std::string message) {
    result.success = false;
    result.error = std::move(message);
    return result;
  };
  std::string sarif_input = inputs.get("sarif_file", "../results");
  fs::path sarif = absolute_under(context.workspace, expand_home(sarif_input, context));
  fs::path checkout =
      absolute_under(context.workspace, expand_home(inputs.get("checkout_path", "."), context));
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_directory(sarif, ec)) {
    for (auto it = fs::recursive_directory_iterator(
             sarif, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file(ec) && it->path().extension() == ".sarif")
        files.push_back(it->path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty())
      return failed(fmt::format("No SARIF files found to upload in \"{}\".", sarif_input));
  } else if (fs::exists(sarif, ec)) {
    files.push_back(sarif);
  } else {
    return failed(fmt::format("Path does not exist: {}", sarif_input));
  }

  std::string everything;  // for the sarif-id
  std::size_t shown = 0;
  for (const auto& file : files) {
    if (context.run_as) KILN_TRY_VOID(core::check_readable_by(file, *context.run_as));
    auto size = fs::file_size(file, ec);
    if (ec) return failed(fmt::format("{}: {}", file.string(), ec.message()));
    if (size > k_max_log_bytes)
      return failed(fmt::format("{}: {} bytes; kiln reads SARIF logs of at most {} MiB",
                                file.string(), size, k_max_log_bytes >> 20));
    std::ifstream in(file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) return failed(fmt::format("{}: cannot be read", file.string()));
    std::string contents = std::move(text).str();
    auto log = core::parse_json_text(contents, file);
    if (!log) return failed(log.error().to_string());
    auto read = sarif_annotations(*log, file, checkout);
    if (!read) return failed(read.error().to_string());
    std::string tools;
    for (const auto& tool : read->tools) tools += (tools.empty() ? "" : ", ") + tool;
    log_line(context,
             fmt::format("{}: {} result{}{}{}{}",
                         file.lexically_relative(context.workspace).string(), read->results,
                         read->results == 1 ? "" : "s", tools.empty() ? "" : " from " + tools,
                         read->suppressed ? fmt::format(", {} suppressed", read->suppressed) : "",
                         read->outside ? fmt::format(", {} outside {} (listed without a file)",
                                                     read->outside, checkout.string())
                                       : ""));
    shown += read->annotations.size();
    for (auto& note : read->annotations) result.annotations.push_back(std::move(note));
    everything += contents;
  }
  log_line(context, fmt::format("{} annotation{} for the job (kiln keeps SARIF results as "
                                "annotations: there is no code-scanning upload)",
                                shown, shown == 1 ? "" : "s"));
  result.outputs.emplace_back("sarif-id", stable_hash_hex(everything));
  return result;
}

}  // namespace kiln::exec
