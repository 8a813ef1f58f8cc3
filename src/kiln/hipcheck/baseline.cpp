#include "kiln/hipcheck/baseline.h"

#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

namespace kiln::hipcheck {

Result<Baseline> Baseline::parse(std::string_view text, const std::string& file) {
  auto bad = [&file](std::string message) {
    return make_error(ErrorCode::invalid_input, std::move(message), {file});
  };
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return bad("not a valid JSON document (expected a hipcheck baseline)");
  if (!doc.is_object() || !doc.contains("kiln_hipcheck_baseline"))
    return bad("not a hipcheck baseline (no \"kiln_hipcheck_baseline\" key)");
  const nlohmann::json& version = doc["kiln_hipcheck_baseline"];
  if (!version.is_number_integer() || version.get<int>() != 1)
    return bad("unsupported baseline version (expected 1)");
  if (!doc.contains("findings") || !doc["findings"].is_array())
    return bad("\"findings\" must be an array");
  Baseline baseline;
  std::size_t index = 0;
  for (const nlohmann::json& entry : doc["findings"]) {
    if (!entry.is_object() || !entry.contains("path") || !entry["path"].is_string() ||
        !entry.contains("fingerprint") || !entry["fingerprint"].is_string())
      return bad(fmt::format("findings[{}] needs string \"path\" and \"fingerprint\"", index));
    auto fingerprint = parse_fingerprint(entry["fingerprint"].get<std::string>());
    if (!fingerprint)
      return bad(fmt::format("findings[{}]: \"fingerprint\" must be 16 hex digits", index));
    ++baseline.counts_[{entry["path"].get<std::string>(), *fingerprint}];
    ++index;
  }
  return baseline;
}

Result<Baseline> Baseline::load(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return make_error(ErrorCode::invalid_input, "cannot read the baseline file", {file});
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(text, file);
}

void Baseline::apply(Report& report) const {
  std::map<std::pair<std::string, std::uint64_t>, int> left = counts_;
  for (FileScan& file : report.files) {
    for (Finding& f : file.findings) {
      auto it = left.find({file.path, f.fingerprint});
      f.baselined = it != left.end() && it->second > 0;
      if (f.baselined) --it->second;
    }
  }
  summarize(report);
}

std::size_t Baseline::size() const {
  std::size_t n = 0;
  for (const auto& [key, count] : counts_) n += static_cast<std::size_t>(count);
  return n;
}

std::string baseline_json(const Report& report) {
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const FileScan& file : report.files) {
    for (const Finding& f : file.findings) {
      findings.push_back({{"path", file.path},
                          {"line", f.line},
                          {"rule", rule_info(f.rule).id},
                          {"name", f.name},
                          {"fingerprint", fingerprint_hex(f.fingerprint)}});
    }
  }
  nlohmann::ordered_json doc = {{"kiln_hipcheck_baseline", 1}, {"findings", std::move(findings)}};
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace kiln::hipcheck
