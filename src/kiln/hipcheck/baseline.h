#pragma once
// Baselines: a file of accepted findings, so that a check fails only on new ones. A finding is
// matched by its path and fingerprint (rule, name and the text of its line), not by line
// number, so edits elsewhere in a file do not invalidate it. Each entry accepts one finding:
// a second identical line is a new finding.
//
// Paths in a baseline are relative to the directory of the baseline file, so a baseline works
// whichever directory hipcheck runs in and however the paths were named (relative or absolute).
//
// Format (JSON, written by --write-baseline):
//   {"kiln_hipcheck_baseline": 1,
//    "findings": [{"path": "src/a.cu", "line": 12, "rule": "cuda-api", "name": "cudaMalloc",
//                  "fingerprint": "89ab..."}, ...]}
// line, rule and name are for people reading it; path and fingerprint are what match.

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kiln/core/result.h"
#include "kiln/hipcheck/hipcheck.h"
#include "kiln/hipcheck/report.h"

namespace kiln::hipcheck {

class Baseline {
 public:
  // Parses a baseline file's text; errors are invalid_input at `file` ("FILE: error: ...").
  // Paths in it are taken relative to `file`'s directory.
  static Result<Baseline> parse(std::string_view text, const std::string& file);
  static Result<Baseline> load(const std::string& file);

  // Marks the findings of one scanned file that the baseline accepts (Finding::baselined).
  // Safe to call from several threads for different files.
  void mark(FileScan& file) const;
  // mark() for every file of a report, then its summary is recounted.
  void apply(Report& report) const;
  std::size_t size() const;

  // An entry that accepted no finding: its file was scanned and nothing matched, or its file
  // no longer exists.
  struct Entry {
    std::string path;  // relative to the baseline's directory
    int line = 0;
    std::string rule, name;
  };
  std::vector<Entry> stale() const;

 private:
  std::string key(std::string_view scanned_path) const;

  std::filesystem::path directory_;  // absolute: what paths in the file are relative to
  std::map<std::pair<std::string, std::uint64_t>, std::vector<Entry>> entries_;
  struct Use {
    std::mutex mutex;
    std::set<std::string> scanned;  // keys of the files marked
    std::map<std::pair<std::string, std::uint64_t>, std::size_t> used;
  };
  std::shared_ptr<Use> use_ = std::make_shared<Use>();
};

// The baseline text that accepts every finding of `report`, paths relative to `directory`
// (default: the current directory).
std::string baseline_json(const Report& report, const std::filesystem::path& directory = {});
// The same, streamed: a writer for scan_project's files, for a baseline file at `file`.
std::unique_ptr<ReportWriter> make_baseline_writer(const std::string& file, Output out);

}  // namespace kiln::hipcheck
