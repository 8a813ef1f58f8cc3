#include "kiln/hipcheck/baseline.h"

#include <fstream>
#include <iterator>
#include <system_error>

#include <nlohmann/json.hpp>

namespace kiln::hipcheck {

namespace fs = std::filesystem;

namespace {

fs::path absolute_directory_of(const std::string& file) {
  std::error_code ec;
  fs::path dir = fs::absolute(fs::path(file), ec).lexically_normal().parent_path();
  return ec ? fs::current_path(ec) : dir;
}

// `path` (as scanned: relative to the current directory, or absolute) relative to `directory`.
std::string relative_to(std::string_view path, const fs::path& directory) {
  std::error_code ec;
  fs::path absolute = fs::absolute(fs::path(path), ec).lexically_normal();
  if (ec || directory.empty()) return fs::path(path).lexically_normal().generic_string();
  return absolute.lexically_relative(directory).generic_string();
}

nlohmann::ordered_json entry_json(const std::string& path, const Finding& f) {
  return {{"path", path},
          {"line", f.line},
          {"rule", rule_info(f.rule).id},
          {"name", f.name},
          {"fingerprint", fingerprint_hex(f.fingerprint)}};
}

std::string dump(const nlohmann::ordered_json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

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
  baseline.directory_ = absolute_directory_of(file);
  std::size_t index = 0;
  for (const nlohmann::json& entry : doc["findings"]) {
    if (!entry.is_object() || !entry.contains("path") || !entry["path"].is_string() ||
        !entry.contains("fingerprint") || !entry["fingerprint"].is_string())
      return bad(fmt::format("findings[{}] needs string \"path\" and \"fingerprint\"", index));
    auto fingerprint = parse_fingerprint(entry["fingerprint"].get<std::string>());
    if (!fingerprint)
      return bad(fmt::format("findings[{}]: \"fingerprint\" must be 16 hex digits", index));
    Entry e;
    e.path = fs::path(entry["path"].get<std::string>()).lexically_normal().generic_string();
    if (auto line = entry.find("line"); line != entry.end() && line->is_number_integer())
      e.line = line->get<int>();
    if (auto rule = entry.find("rule"); rule != entry.end() && rule->is_string())
      e.rule = rule->get<std::string>();
    if (auto name = entry.find("name"); name != entry.end() && name->is_string())
      e.name = name->get<std::string>();
    std::string path = e.path;
    baseline.entries_[{std::move(path), *fingerprint}].push_back(std::move(e));
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

std::string Baseline::key(std::string_view scanned_path) const {
  return relative_to(scanned_path, directory_);
}

void Baseline::mark(FileScan& file) const {
  std::string path = key(file.path);
  std::map<std::uint64_t, std::size_t> used;
  for (Finding& f : file.findings) {
    auto it = entries_.find({path, f.fingerprint});
    f.baselined = it != entries_.end() && used[f.fingerprint] < it->second.size();
    if (f.baselined) ++used[f.fingerprint];
  }
  std::lock_guard lock(use_->mutex);
  use_->scanned.insert(path);
  for (auto [fingerprint, n] : used) use_->used[{path, fingerprint}] += n;
}

void Baseline::apply(Report& report) const {
  for (FileScan& file : report.files) mark(file);
  summarize(report);
}

std::size_t Baseline::size() const {
  std::size_t n = 0;
  for (const auto& [key, list] : entries_) n += list.size();
  return n;
}

std::vector<Baseline::Entry> Baseline::stale() const {
  std::vector<Entry> out;
  std::lock_guard lock(use_->mutex);
  for (const auto& [key, list] : entries_) {
    bool scanned = use_->scanned.contains(key.first);
    std::error_code ec;
    if (!scanned && fs::exists(directory_ / key.first, ec)) continue;  // not looked at this run
    auto it = use_->used.find(key);
    std::size_t used = it == use_->used.end() ? 0 : it->second;
    for (std::size_t k = used; k < list.size(); ++k) out.push_back(list[k]);
  }
  return out;
}

std::string baseline_json(const Report& report, const fs::path& directory) {
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  for (const FileScan& file : report.files) {
    std::string path = relative_to(file.path, directory);
    for (const Finding& f : file.findings) findings.push_back(entry_json(path, f));
  }
  nlohmann::ordered_json doc = {{"kiln_hipcheck_baseline", 1}, {"findings", std::move(findings)}};
  return dump(doc, 2) + "\n";
}

namespace {

class BaselineWriter : public ReportWriter {
 public:
  BaselineWriter(const std::string& file, Output out)
      : directory_(absolute_directory_of(file)), out_(std::move(out)) {
    out_("{\n  \"kiln_hipcheck_baseline\": 1,\n  \"findings\": [");
  }
  void file(const FileScan& file, const Summary&) override {
    std::string path = relative_to(file.path, directory_);
    std::string text;
    for (const Finding& f : file.findings) {
      text += (first_ ? "\n    " : ",\n    ") + dump(entry_json(path, f), -1);
      first_ = false;
    }
    out_(text);
  }
  void finish(const Summary&) override { out_(first_ ? "]\n}\n" : "\n  ]\n}\n"); }

 private:
  fs::path directory_;
  Output out_;
  bool first_ = true;
};

}  // namespace

std::unique_ptr<ReportWriter> make_baseline_writer(const std::string& file, Output out) {
  return std::make_unique<BaselineWriter>(file, std::move(out));
}

}  // namespace kiln::hipcheck
