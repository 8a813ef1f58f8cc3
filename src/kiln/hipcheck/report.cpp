#include "kiln/hipcheck/report.h"

#include <iterator>

#include <nlohmann/json.hpp>

#include "kiln/hipcheck/json_text.h"

namespace kiln::hipcheck {

using Json = nlohmann::ordered_json;

std::optional<Format> parse_format(std::string_view text) {
  if (text == "text") return Format::text;
  if (text == "json") return Format::json;
  if (text == "sarif") return Format::sarif;
  return std::nullopt;
}

namespace {

std::string dump(const Json& doc, int indent = -1) {
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace);
}

// `text` (a dump with indent 2) indented by `by` more spaces after each newline.
std::string indented(const std::string& text, std::string_view by) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    out.push_back(c);
    if (c == '\n') out += by;
  }
  return out;
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

std::uint64_t failing(const Summary& s, FailOn fail_on) {
  switch (fail_on) {
    case FailOn::none:
      return 0;
    case FailOn::unsupported:
      return s.open_unsupported;
    case FailOn::hazard:
      return s.open_unsupported + s.open_hazards;
    case FailOn::any:
      return s.open_unsupported + s.open_hazards + s.open_convertible;
  }
  return 0;
}

class TextWriter : public ReportWriter {
 public:
  TextWriter(const OutputContext& context, Output out) : context_(context), out_(std::move(out)) {}

  void file(const FileScan& file, const Summary& counts) override {
    std::string& lines = lines_;  // kept between files: no allocation per finding or per file
    for (const Finding& f : file.findings) {
      if (f.baselined || f.guarded) continue;
      lines += file.path;
      lines += ':';
      append_decimal(lines, f.line);
      lines += ':';
      append_decimal(lines, f.column);
      lines += ": ";
      lines += category_name(f.category);
      lines += ": ";
      f.append_message(lines);
      lines += " [";
      lines += rule_info(f.rule).id;
      lines += "]\n";
      if (lines.size() > (1 << 16)) flush(lines);
    }
    flush(lines);
    if (file.findings.empty()) return;
    // One line per file with findings, printed after all findings: small, kept until then.
    per_file_ += fmt::format("  {}: {}, {} lines of code", file.path, counts_text(counts),
                             counts.code_lines);
    if (counts.baselined) per_file_ += fmt::format(", {} in baseline", counts.baselined);
    per_file_ += "\n";
  }

  void finish(const Summary& s) override {
    std::string out;
    if (!per_file_.empty()) {
      if (any_line_) out += "\n";
      out += "per file:\n" + per_file_ + "\n";
    }
    out += fmt::format("hipcheck: {}, {} lines of code: {}\n", plural(s.files, "file", "files"),
                       s.code_lines, counts_text(s));
    out += fmt::format("hipcheck: support judged for ROCm {}{}\n", context_.rocm.to_string(),
                       context_.rocm == newest_known_rocm() ? " (the newest Kiln knows)" : "");
    if (s.deprecated || s.removed)
      out += fmt::format("hipcheck: of the references, {} deprecated and {} removed in CUDA\n",
                         s.deprecated, s.removed);
    if (s.guarded)
      out += fmt::format(
          "hipcheck: {} in branches only a CUDA build compiles (dual-platform code), not "
          "listed and not failing\n",
          plural(s.guarded, "finding", "findings"));
    if (context_.baseline_used)
      out += fmt::format("hipcheck: {} accepted by the baseline\n",
                         plural(s.baselined, "finding", "findings"));
    if (context_.fail_on != FailOn::none) {
      std::uint64_t n = failing(s, context_.fail_on);
      out += fmt::format("hipcheck: {} with --fail-on {}: {}\n",
                         plural(n, "finding fails", "findings fail"),
                         fail_on_name(context_.fail_on), n ? "FAILED" : "passed");
    }
    out_(out);
  }

 private:
  void flush(std::string& lines) {
    if (lines.empty()) return;
    any_line_ = true;
    out_(lines);
    lines.clear();
  }
  OutputContext context_;
  Output out_;
  std::string lines_;
  std::string per_file_;
  bool any_line_ = false;
};

// {"tool", "schema_version", "fail_on", "rocm_version", "files": [...], "summary", "failed"}:
// the summary comes last, when it is known.
class JsonWriter : public ReportWriter {
 public:
  JsonWriter(const OutputContext& context, Output out) : context_(context), out_(std::move(out)) {
    out_(
        fmt::format("{{\n  \"tool\": \"kiln hipcheck\",\n  \"schema_version\": 1,\n  \"fail_on\": "
                    "\"{}\",\n  \"rocm_version\": \"{}\",\n  \"files\": [",
                    fail_on_name(context_.fail_on), context_.rocm.to_string()));
  }

  // The entry as dump(entry, 2) indented by 4 wrote it, then the findings one per line, as
  // dump(finding) wrote each: `{"line":1,...}`.
  void file(const FileScan& file, const Summary& counts) override {
    std::string& text = text_;
    text += first_file_ ? "\n    {\n      \"path\": " : ",\n    {\n      \"path\": ";
    first_file_ = false;
    append_json_string(text, file.path);
    auto field = [&text](std::string_view key, std::uint64_t value) {
      text += ",\n      \"";
      text += key;
      text += "\": ";
      append_decimal(text, value);
    };
    field("lines", counts.lines);
    field("lines_of_code", counts.code_lines);
    field("references", counts.references);
    field("convertible", counts.convertible);
    field("unsupported", counts.unsupported);
    field("deprecated", counts.deprecated);
    field("removed", counts.removed);
    field("hazards", counts.hazards);
    field("baselined", counts.baselined);
    field("guarded", counts.guarded);
    text += ",\n      \"findings\": [";
    bool first = true;
    for (const Finding& f : file.findings) {
      text += first ? "\n        {\"line\":" : ",\n        {\"line\":";
      first = false;
      append_decimal(text, f.line);
      text += ",\"column\":";
      append_decimal(text, f.column);
      text += ",\"end_column\":";
      append_decimal(text, f.end_column);
      text += ",\"rule\":";
      append_json_string(text, rule_info(f.rule).id);
      text += ",\"category\":";
      append_json_string(text, category_name(f.category));
      text += ",\"name\":";
      append_json_string(text, f.name);
      if (!f.replacement.empty()) {
        text += ",\"hip\":";
        append_json_string(text, f.replacement);
      }
      if (f.status != ApiStatus::none) {
        text += ",\"status\":";
        append_json_string(text, api_status_name(f.status));
      }
      if (!f.library.empty()) {
        text += ",\"library\":";
        append_json_string(text, f.library);
      }
      text += ",\"message\":";
      message_.clear();
      f.append_message(message_);
      append_json_string(text, message_);
      text += ",\"fingerprint\":\"";
      append_hex16(text, f.fingerprint);
      text += f.baselined ? "\",\"baselined\":true" : "\",\"baselined\":false";
      if (f.guarded) {
        text += ",\"guarded\":true,\"guard\":";
        append_json_string(text, f.guard);
      }
      text += '}';
      if (text.size() > (1 << 16)) {
        out_(text);
        text.clear();
      }
    }
    text += first ? "]\n    }" : "\n      ]\n    }";
    out_(text);
    text.clear();
  }

  void finish(const Summary& s) override {
    out_(fmt::format("{}],\n  \"summary\": {},\n  \"failed\": {}\n}}\n", first_file_ ? "" : "\n  ",
                     indented(dump(summary_json(s), 2), "  "),
                     exit_code(s, context_.fail_on) != 0 ? "true" : "false"));
  }

 private:
  OutputContext context_;
  Output out_;
  std::string text_;     // kept between files: no allocation per finding or per file
  std::string message_;  // one finding's message, before it is escaped
  bool first_file_ = true;
};

class SarifWriter : public ReportWriter {
 public:
  SarifWriter(const OutputContext& context, Output out) : context_(context), out_(std::move(out)) {
    Json rules_json = Json::array();
    for (const RuleInfo& r : rules()) {
      rules_json.push_back({{"id", r.id},
                            {"shortDescription", {{"text", r.description}}},
                            {"help", {{"text", r.help}}}});
    }
    std::string root = context_.working_directory;
    if (root.empty() || root.back() != '/') root += '/';
    Json driver{{"name", "kiln hipcheck"}, {"version", "0.1.0"}, {"rules", std::move(rules_json)}};
    out_(fmt::format(
        "{{\n  \"$schema\": \"https://json.schemastore.org/sarif-2.1.0.json\",\n  \"version\": "
        "\"2.1.0\",\n  \"runs\": [\n    {{\n      \"tool\": {{\"driver\": {}}},\n      "
        "\"originalUriBaseIds\": {},\n      \"columnKind\": \"unicodeCodePoints\",\n      "
        "\"properties\": {},\n      \"results\": [",
        dump(driver), dump(Json{{"SRCROOT", {{"uri", "file://" + uri_encode_path(root)}}}}),
        dump(Json{{"rocmVersion", context_.rocm.to_string()}})));
  }

  // Each result as dump(result) wrote it, on a line of its own.
  void file(const FileScan& file, const Summary&) override {
    // The artifactLocation is the same for every result of the file.
    std::string artifact = "{\"uri\":";
    if (!file.path.empty() && file.path[0] == '/') {
      append_json_string(artifact, "file://" + uri_encode_path(file.path));
      artifact += '}';
    } else {
      append_json_string(artifact, uri_encode_path(file.path));
      artifact += ",\"uriBaseId\":\"SRCROOT\"}";
    }
    std::string& text = text_;
    for (const Finding& f : file.findings) {
      const RuleInfo& rule = rule_info(f.rule);
      text += first_ ? "\n        {\"ruleId\":" : ",\n        {\"ruleId\":";
      first_ = false;
      append_json_string(text, rule.id);
      text += ",\"ruleIndex\":";
      append_decimal(text, static_cast<int>(f.rule));
      text += ",\"level\":";
      append_json_string(text, sarif_level(f.category));
      text += ",\"message\":{\"text\":";
      message_.clear();
      f.append_message(message_);
      append_json_string(text, message_);
      text += "},\"locations\":[{\"physicalLocation\":{\"artifactLocation\":";
      text += artifact;
      text += ",\"region\":{\"startLine\":";
      append_decimal(text, f.line);
      text += ",\"startColumn\":";
      append_decimal(text, f.column);
      text += ",\"endColumn\":";
      append_decimal(text, f.end_column);
      text += "}}}],\"partialFingerprints\":{\"kilnHipcheck/v1\":\"";
      append_hex16(text, f.fingerprint);
      text += "\"},\"properties\":{\"category\":";
      append_json_string(text, category_name(f.category));
      text += ",\"name\":";
      append_json_string(text, f.name);
      if (!f.replacement.empty()) {
        text += ",\"hip\":";
        append_json_string(text, f.replacement);
      }
      text += '}';
      if (context_.baseline_used)
        text += f.baselined ? ",\"baselineState\":\"unchanged\"" : ",\"baselineState\":\"new\"";
      if (f.baselined) {
        text +=
            ",\"suppressions\":[{\"kind\":\"external\",\"justification\":\"accepted by the "
            "hipcheck "
            "baseline\"}]";
      } else if (f.guarded) {
        text += ",\"suppressions\":[{\"kind\":\"inSource\",\"justification\":";
        message_.clear();
        fmt::format_to(std::back_inserter(message_), "in a branch only a CUDA build compiles ({})",
                       f.guard);
        append_json_string(text, message_);
        text += "}]";
      }
      text += '}';
      if (text.size() > (1 << 16)) {
        out_(text);
        text.clear();
      }
    }
    out_(text);
    text.clear();
  }

  void finish(const Summary&) override {
    out_(first_ ? "]\n    }\n  ]\n}\n" : "\n      ]\n    }\n  ]\n}\n");
  }

 private:
  OutputContext context_;
  Output out_;
  std::string text_;     // kept between files: no allocation per finding or per file
  std::string message_;  // one finding's message, before it is escaped
  bool first_ = true;
};

}  // namespace

std::unique_ptr<ReportWriter> make_writer(Format format, const OutputContext& context, Output out) {
  switch (format) {
    case Format::json:
      return std::make_unique<JsonWriter>(context, std::move(out));
    case Format::sarif:
      return std::make_unique<SarifWriter>(context, std::move(out));
    case Format::text:
      break;
  }
  return std::make_unique<TextWriter>(context, std::move(out));
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

std::string format_report(Format format, const Report& report, const OutputContext& context) {
  std::string text;
  OutputContext c = context;
  c.rocm = report.rocm;
  auto writer = make_writer(format, c, [&text](std::string_view chunk) { text += chunk; });
  for (const FileScan& file : report.files) writer->file(file, count(file));
  writer->finish(report.summary);
  return text;
}

std::string format_text(const Report& report, const OutputContext& context) {
  return format_report(Format::text, report, context);
}
std::string format_json(const Report& report, const OutputContext& context) {
  return format_report(Format::json, report, context);
}
std::string format_sarif(const Report& report, const OutputContext& context) {
  return format_report(Format::sarif, report, context);
}

}  // namespace kiln::hipcheck
