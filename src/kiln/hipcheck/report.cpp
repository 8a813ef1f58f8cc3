#include "kiln/hipcheck/report.h"

#include <nlohmann/json.hpp>

namespace kiln::hipcheck {

using Json = nlohmann::ordered_json;

std::optional<Format> parse_format(std::string_view text) {
  if (text == "text") return Format::text;
  if (text == "json") return Format::json;
  if (text == "sarif") return Format::sarif;
  return std::nullopt;
}

namespace {

std::string dump(const Json& doc) {
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string counts_text(const Summary& s) {
  return fmt::format("{} ({} convertible, {} unsupported), {}",
                     plural(s.references, "reference", "references"), s.convertible, s.unsupported,
                     plural(s.hazards, "hazard", "hazards"));
}

Json summary_json(const Summary& s) {
  return Json{{"files", s.files},
              {"lines", s.lines},
              {"lines_of_code", s.code_lines},
              {"references", s.references},
              {"convertible", s.convertible},
              {"unsupported", s.unsupported},
              {"deprecated", s.deprecated},
              {"removed", s.removed},
              {"hazards", s.hazards},
              {"baselined", s.baselined},
              {"guarded", s.guarded}};
}

std::string_view sarif_level(Category category) {
  switch (category) {
    case Category::unsupported:
      return "error";
    case Category::hazard:
      return "warning";
    case Category::convertible:
      return "note";
  }
  return "note";
}

}  // namespace

std::string format_text(const Report& report, const OutputContext& context) {
  std::string out;
  std::uint64_t failing = 0;
  for (const FileScan& file : report.files) {
    for (const Finding& f : file.findings) {
      if (f.baselined || f.guarded) continue;
      if (fails_on(f, context.fail_on)) ++failing;
      out += fmt::format("{}:{}:{}: {}: {} [{}]\n", file.path, f.line, f.column,
                         category_name(f.category), f.message(), rule_info(f.rule).id);
    }
  }
  bool header = false;
  for (const FileScan& file : report.files) {
    if (file.findings.empty()) continue;
    if (!header) {
      if (!out.empty()) out += "\n";
      out += "per file:\n";
      header = true;
    }
    Summary s = count(file);
    out += fmt::format("  {}: {}, {} lines of code", file.path, counts_text(s), s.code_lines);
    if (s.baselined) out += fmt::format(", {} in baseline", s.baselined);
    out += "\n";
  }
  const Summary& s = report.summary;
  if (header) out += "\n";
  out += fmt::format("hipcheck: {}, {} lines of code: {}\n", plural(s.files, "file", "files"),
                     s.code_lines, counts_text(s));
  out += fmt::format("hipcheck: support judged for ROCm {}{}\n", report.rocm.to_string(),
                     report.rocm == newest_known_rocm() ? " (the newest Kiln knows)" : "");
  if (s.deprecated || s.removed)
    out += fmt::format("hipcheck: of the references, {} deprecated and {} removed in CUDA\n",
                       s.deprecated, s.removed);
  if (s.guarded)
    out += fmt::format(
        "hipcheck: {} in branches only a CUDA build compiles (dual-platform code), not "
        "listed and not failing\n",
        plural(s.guarded, "finding", "findings"));
  if (context.baseline_used)
    out += fmt::format("hipcheck: {} accepted by the baseline\n",
                       plural(s.baselined, "finding", "findings"));
  if (context.fail_on != FailOn::none)
    out += fmt::format("hipcheck: {} with --fail-on {}: {}\n",
                       plural(failing, "finding fails", "findings fail"),
                       fail_on_name(context.fail_on), failing ? "FAILED" : "passed");
  return out;
}

std::string format_json(const Report& report, const OutputContext& context) {
  Json files = Json::array();
  for (const FileScan& file : report.files) {
    Json findings = Json::array();
    for (const Finding& f : file.findings) {
      Json j{{"line", f.line},
             {"column", f.column},
             {"end_column", f.end_column},
             {"rule", rule_info(f.rule).id},
             {"category", category_name(f.category)},
             {"name", f.name}};
      if (!f.replacement.empty()) j["hip"] = f.replacement;
      if (f.status != ApiStatus::none) j["status"] = api_status_name(f.status);
      if (!f.library.empty()) j["library"] = f.library;
      j["message"] = f.message();
      j["fingerprint"] = fingerprint_hex(f.fingerprint);
      j["baselined"] = f.baselined;
      if (f.guarded) {
        j["guarded"] = true;
        j["guard"] = f.guard;
      }
      findings.push_back(std::move(j));
    }
    Summary s = count(file);
    Json entry{{"path", file.path}};
    Json counts = summary_json(s);
    for (auto& [key, value] : counts.items())
      if (key != "files") entry[key] = value;
    entry["findings"] = std::move(findings);
    files.push_back(std::move(entry));
  }
  Json doc{{"tool", "kiln hipcheck"},
           {"schema_version", 1},
           {"fail_on", fail_on_name(context.fail_on)},
           {"rocm_version", report.rocm.to_string()},
           {"failed", exit_code(report, context.fail_on) != 0},
           {"summary", summary_json(report.summary)},
           {"files", std::move(files)}};
  return dump(doc);
}

std::string uri_encode_path(std::string_view path) {
  std::string out;
  for (unsigned char c : path) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '-' || c == '.' || c == '_' || c == '~' || c == '/';
    if (keep)
      out.push_back(static_cast<char>(c));
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

std::string format_sarif(const Report& report, const OutputContext& context) {
  Json rules_json = Json::array();
  for (const RuleInfo& r : rules()) {
    rules_json.push_back({{"id", r.id},
                          {"shortDescription", {{"text", r.description}}},
                          {"help", {{"text", r.help}}}});
  }
  Json results = Json::array();
  for (const FileScan& file : report.files) {
    for (const Finding& f : file.findings) {
      Json artifact;
      if (!file.path.empty() && file.path[0] == '/') {
        artifact = {{"uri", "file://" + uri_encode_path(file.path)}};
      } else {
        artifact = {{"uri", uri_encode_path(file.path)}, {"uriBaseId", "SRCROOT"}};
      }
      Json result{{"ruleId", rule_info(f.rule).id},
                  {"ruleIndex", static_cast<int>(f.rule)},
                  {"level", sarif_level(f.category)},
                  {"message", {{"text", f.message()}}},
                  {"locations", Json::array({{{"physicalLocation",
                                               {{"artifactLocation", artifact},
                                                {"region",
                                                 {{"startLine", f.line},
                                                  {"startColumn", f.column},
                                                  {"endColumn", f.end_column}}}}}}})},
                  {"partialFingerprints", {{"kilnHipcheck/v1", fingerprint_hex(f.fingerprint)}}},
                  {"properties", {{"category", category_name(f.category)}, {"name", f.name}}}};
      if (!f.replacement.empty()) result["properties"]["hip"] = f.replacement;
      if (context.baseline_used) result["baselineState"] = f.baselined ? "unchanged" : "new";
      if (f.baselined)
        result["suppressions"] = Json::array(
            {{{"kind", "external"}, {"justification", "accepted by the hipcheck baseline"}}});
      else if (f.guarded)
        result["suppressions"] =
            Json::array({{{"kind", "inSource"},
                          {"justification",
                           fmt::format("in a branch only a CUDA build compiles ({})", f.guard)}}});
      results.push_back(std::move(result));
    }
  }
  std::string root = context.working_directory;
  if (root.empty() || root.back() != '/') root += '/';
  Json run{
      {"tool",
       {{"driver",
         {{"name", "kiln hipcheck"}, {"version", "0.1.0"}, {"rules", std::move(rules_json)}}}}},
      {"originalUriBaseIds", {{"SRCROOT", {{"uri", "file://" + uri_encode_path(root)}}}}},
      {"columnKind", "unicodeCodePoints"},
      {"properties", {{"rocmVersion", report.rocm.to_string()}}},
      {"results", std::move(results)}};
  Json doc{{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
           {"version", "2.1.0"},
           {"runs", Json::array({std::move(run)})}};
  return dump(doc);
}

std::string format_report(Format format, const Report& report, const OutputContext& context) {
  switch (format) {
    case Format::text:
      return format_text(report, context);
    case Format::json:
      return format_json(report, context);
    case Format::sarif:
      return format_sarif(report, context);
  }
  return {};
}

}  // namespace kiln::hipcheck
