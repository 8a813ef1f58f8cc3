#include "kiln/engine/collect/quarantine.h"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

#include "kiln/engine/collect/test_results.h"
#include "kiln/report/junit.h"

namespace kiln::engine {
namespace {

bool is_failure(std::string_view status) { return status == "failed" || status == "error"; }

std::string utc_time(store::TimeMs ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buffer;
}

}  // namespace

std::string test_name(std::string_view classname, std::string_view name) {
  if (classname.empty()) return std::string(name);
  return fmt::format("{}::{}", classname, name);
}

FlipCount count_flips(std::span<const store::TestCase> results) {
  struct Last {
    bool failed = false;
    std::int64_t run_id = 0;
  };
  std::map<std::string, Last> last_by_commit;
  FlipCount count;
  for (const auto& result : results) {
    if (result.status != "passed" && !is_failure(result.status)) continue;
    const bool failed = is_failure(result.status);
    auto [it, first] = last_by_commit.try_emplace(result.commit_sha, Last{failed, result.run_id});
    if (first) continue;
    if (it->second.failed != failed && it->second.run_id != result.run_id) {
      ++count.flips;
      count.evidence =
          fmt::format("commit {}: {} in run {}, {} in run {}", result.commit_sha.substr(0, 8),
                      it->second.failed ? "failed" : "passed", it->second.run_id,
                      failed ? "failed" : "passed", result.run_id);
    }
    it->second = {failed, result.run_id};
  }
  return count;
}

std::set<std::string> quarantined_tests(store::Store& store, const std::string& repository,
                                        store::TimeMs now) {
  std::set<std::string> names;
  if (auto records = store.list_test_quarantine(repository))
    for (const auto& record : *records)
      if (record.active(now)) names.insert(record.test);
  return names;
}

std::vector<std::pair<std::string, std::string>> apply_flip_rule(
    store::Store& store, const std::string& repository, std::span<const store::TestCase> job_cases,
    const store::TestQuarantinePolicy& policy, store::TimeMs now) {
  std::vector<std::pair<std::string, std::string>> lines;
  if (policy.flips <= 0 || job_cases.empty()) return lines;
  auto records = store.list_test_quarantine(repository);
  if (!records) {
    lines.emplace_back("warning", "test quarantine: " + records.error().to_string());
    return lines;
  }
  std::map<std::string, store::TestQuarantine> by_test;
  for (auto& record : *records) by_test.emplace(record.test, std::move(record));
  std::set<std::string> judged;
  for (const auto& c : job_cases) {
    // Only a failure here, or a pass after a failure on this commit, can be a new flip.
    if (!is_failure(c.status) && !c.flaky) continue;
    auto name = test_name(c.classname, c.name);
    if (!judged.insert(name).second) continue;
    store::TimeMs after = 0;
    if (auto found = by_test.find(name); found != by_test.end()) {
      if (found->second.active(now)) continue;
      after = found->second.ended(now);
    }
    store::TestCaseQuery query;
    query.repository = repository;
    query.classname = c.classname;
    query.name = c.name;
    query.limit = policy.runs;
    auto history = store.list_test_cases(query);
    if (!history) {
      lines.emplace_back("warning", "test quarantine: " + history.error().to_string());
      continue;
    }
    // Results from before its last quarantine ended were judged already.
    std::erase_if(*history, [&](const store::TestCase& r) { return r.time <= after; });
    auto flips = count_flips(*history);
    if (flips.flips < policy.flips) continue;
    store::TestQuarantine record;
    record.repository = repository;
    record.test = name;
    record.reason = fmt::format("flipped {} times in its last {} results (last: {})", flips.flips,
                                history->size(), flips.evidence);
    record.since = now;
    record.expires_at = now + policy.expires;
    if (auto stored = store.quarantine_test(record); !stored) {
      lines.emplace_back("warning", fmt::format("test quarantine: cannot quarantine {}: {}", name,
                                                stored.error().to_string()));
      continue;
    }
    lines.emplace_back("warning",
                       fmt::format("Test {} is quarantined until {}: {}; it still runs, and its "
                                   "failures no longer fail the job (kiln tests release {})",
                                   name, utc_time(record.expires_at), record.reason, name));
  }
  return lines;
}

FileStamps stamp_result_files(const std::filesystem::path& list,
                              const std::filesystem::path& workspace) {
  FileStamps stamps;
  for (const auto& path : result_files(list, workspace)) {
    struct stat st{};
    if (::stat(path.c_str(), &st) != 0) continue;
    stamps[path] = {
        static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec,
        static_cast<std::uintmax_t>(st.st_size), static_cast<std::uint64_t>(st.st_ino)};
  }
  return stamps;
}

StepTestFailures failures_since(const FileStamps& before, const std::filesystem::path& list,
                                const std::filesystem::path& workspace, const core::RunAs* run_as) {
  StepTestFailures out;
  for (const auto& [path, stamp] : stamp_result_files(list, workspace)) {
    if (auto old = before.find(path); old != before.end() && old->second == stamp) continue;
    if (run_as)
      if (auto readable = core::check_readable_by(path, *run_as); !readable) {
        out.notes.push_back(readable.error().message);
        continue;
      }
    auto parsed = report::parse_junit_file(path);
    if (!parsed) {
      out.notes.push_back(parsed.error().to_string());
      continue;
    }
    ++out.files;
    for (const auto& c : parsed->cases)
      if (is_failure(c.status)) out.failed.push_back(test_name(c.classname, c.name));
  }
  std::sort(out.failed.begin(), out.failed.end());
  out.failed.erase(std::unique(out.failed.begin(), out.failed.end()), out.failed.end());
  return out;
}

bool only_quarantined(const std::vector<std::string>& failed,
                      const std::set<std::string>& quarantined) {
  return !failed.empty() && std::ranges::all_of(failed, [&](const std::string& test) {
    return quarantined.contains(test);
  });
}

}  // namespace kiln::engine
