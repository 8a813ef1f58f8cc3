// The conformance suite: the executable specification of GitHub Actions semantics.
// Every directory under cases/ is a small repository (workflows and files) with a case.json of
// expectations. One test per case: copy it into a fresh directory, make it a git repository,
// run the real `kiln run --json` there, and compare what kiln reports (and logs) with what
// GitHub does. The format of case.json is in README.md beside this file.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int k_default_timeout_s = 60;

fs::path cases_root() {
  if (const char* dir = std::getenv("KILN_CONFORMANCE_CASES"); dir && *dir) return dir;
  return KILN_CONFORMANCE_CASES;
}

std::string kiln_binary() {
  if (const char* kiln = std::getenv("KILN"); kiln && *kiln) return kiln;
  return KILN_BINARY;
}

std::string quote(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string tail(const std::string& text, size_t max = 4000) {
  return text.size() <= max ? text : "..." + text.substr(text.size() - max);
}

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs `command` with bash in `cwd`; stdout and stderr go through files in `scratch`.
CommandResult run_shell(const std::string& command, const fs::path& cwd, const fs::path& scratch) {
  const fs::path out = scratch / "command.out", err = scratch / "command.err";
  std::string line = "cd " + quote(cwd.string()) + " && bash -c " + quote(command) + " >" +
                     quote(out.string()) + " 2>" + quote(err.string()) + " </dev/null";
  int status = std::system(line.c_str());
  CommandResult result;
  result.exit_code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = read_text(out);
  result.err = read_text(err);
  return result;
}

// Everything a case may say, so that a misspelt key is an error rather than a silent no-op.
const std::set<std::string> k_case_keys = {
    "description",     "args",          "setup",       "env",
    "exit_code",       "jobs",          "absent_jobs", "order",
    "not_triggered",   "triggered",     "check",       "output_contains",
    "output_excludes", "known_failure", "timeout_s"};
const std::set<std::string> k_job_keys = {"conclusion",   "name",         "outputs",        "steps",
                                          "log_contains", "log_excludes", "reason_contains"};
const std::set<std::string> k_step_keys = {"name", "outcome", "conclusion", "exit_code", "outputs"};

void check_keys(const json& object, const std::set<std::string>& allowed, const std::string& where,
                std::vector<std::string>& problems) {
  if (!object.is_object()) {
    problems.push_back(where + " must be an object");
    return;
  }
  for (const auto& [key, value] : object.items())
    if (!allowed.contains(key))
      problems.push_back("case.json: unknown key '" + key + "' in " + where);
}

std::vector<std::string> strings_of(const json& spec, const char* key) {
  std::vector<std::string> out;
  if (spec.contains(key))
    for (const auto& item : spec.at(key)) out.push_back(item.get<std::string>());
  return out;
}

// One case: where it lives, its expectations, and what running it produced.
class ConformanceCase : public testing::Test {
 public:
  explicit ConformanceCase(fs::path dir) : case_dir_(std::move(dir)) {}

  void TestBody() override {
    name_ = case_dir_.filename().string();
    auto spec = json::parse(read_text(case_dir_ / "case.json"), nullptr, false);
    ASSERT_FALSE(spec.is_discarded()) << case_dir_ / "case.json" << " is not valid JSON";
    std::vector<std::string> problems;
    check_keys(spec, k_case_keys, "the case", problems);
    ASSERT_TRUE(problems.empty()) << problems.front();
    ASSERT_TRUE(spec.contains("description")) << "case.json needs a description";
    spec_ = spec;

    make_repository();
    if (!HasFatalFailure()) run_case(problems);
    report(problems);
  }

 private:
  void make_repository() {
    std::string templ =
        (fs::path(testing::TempDir()) / ("kiln-conformance-" + name_ + "-XXXXXX")).string();
    std::vector<char> buffer(templ.begin(), templ.end());
    buffer.push_back('\0');
    char* made = mkdtemp(buffer.data());
    ASSERT_NE(made, nullptr) << "cannot create a temporary directory from " << templ;
    temp_ = made;
    repo_ = temp_ / "repo";
    scratch_ = temp_ / "scratch";
    fs::create_directories(scratch_);
    fs::copy(case_dir_, repo_, fs::copy_options::recursive);
    fs::remove(repo_ / "case.json");

    // A fixed identity and no user or system configuration: the same repository everywhere.
    setenv("GIT_AUTHOR_NAME", "Kiln Conformance", 1);
    setenv("GIT_AUTHOR_EMAIL", "conformance@kiln.invalid", 1);
    setenv("GIT_COMMITTER_NAME", "Kiln Conformance", 1);
    setenv("GIT_COMMITTER_EMAIL", "conformance@kiln.invalid", 1);
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("CONFORMANCE_SCRATCH", scratch_.string().c_str(), 1);
    // GPU leases and quarantine of this case alone, not the user's host store.
    setenv("KILN_HOST_STORE", (temp_ / "host.db").string().c_str(), 1);
    auto init = run_shell(
        "git init -q -b main && git add -A && git commit -q -m 'conformance case " + name_ + "'",
        repo_, temp_);
    ASSERT_EQ(init.exit_code, 0) << "git init/commit failed: " << init.err;
    if (spec_.contains("setup"))
      for (const auto& command : spec_.at("setup")) {
        auto result = run_shell(command.get<std::string>(), repo_, temp_);
        ASSERT_EQ(result.exit_code, 0) << "setup command failed: " << command << "\n"
                                       << result.out << result.err;
      }
  }

  void run_case(std::vector<std::string>& problems) {
    std::string command;
    if (spec_.contains("env"))
      for (const auto& [key, value] : spec_.at("env").items())
        command += "export " + key + "=" + quote(value.get<std::string>()) + "; ";
    int timeout = spec_.value("timeout_s", k_default_timeout_s);
    command +=
        "exec timeout -k 5 " + std::to_string(timeout) + " " + quote(kiln_binary()) + " run --json";
    for (const auto& arg : strings_of(spec_, "args")) command += " " + quote(arg);
    auto run = run_shell(command, repo_, temp_);
    output_ = run.out + run.err;
    std::ofstream(temp_ / "kiln-run.json") << run.out;
    std::ofstream(temp_ / "kiln-run.stderr") << run.err;

    int expected_exit = spec_.value("exit_code", 0);
    if (run.exit_code == 124 || run.exit_code == 137)
      problems.push_back("kiln run did not finish within " + std::to_string(timeout) + " s");
    if (run.exit_code != expected_exit)
      problems.push_back("exit code: expected " + std::to_string(expected_exit) + ", got " +
                         std::to_string(run.exit_code));
    for (const auto& text : strings_of(spec_, "output_contains"))
      if (output_.find(text) == std::string::npos)
        problems.push_back("kiln run's output does not contain '" + text + "'");
    for (const auto& text : strings_of(spec_, "output_excludes"))
      if (output_.find(text) != std::string::npos)
        problems.push_back("kiln run's output contains '" + text + "', which it must not");

    result_ = json::parse(run.out, nullptr, false);
    bool needs_json = spec_.contains("jobs") || spec_.contains("absent_jobs") ||
                      spec_.contains("order") || spec_.contains("not_triggered") ||
                      spec_.contains("triggered");
    if (result_.is_discarded() || !result_.is_object() || !result_.contains("runs")) {
      if (needs_json)
        problems.push_back("kiln run --json printed no result JSON; stderr:\n" + tail(run.err));
    } else {
      check_result(problems);
    }
    for (const auto& check : strings_of(spec_, "check")) {
      auto result = run_shell(check, repo_, temp_);
      if (result.exit_code != 0)
        problems.push_back("check failed: " + check + "\n" + tail(result.out + result.err, 1000));
    }
  }

  // The job with this key, in whichever run it is, and that run's id.
  const json* find_job(const std::string& key, std::int64_t* run_id = nullptr) const {
    for (const auto& run : result_.at("runs"))
      for (const auto& job : run.at("jobs"))
        if (job.at("key") == key) {
          if (run_id) *run_id = run.at("id").get<std::int64_t>();
          return &job;
        }
    return nullptr;
  }

  std::string job_keys() const {
    std::string keys;
    for (const auto& run : result_.at("runs"))
      for (const auto& job : run.at("jobs"))
        keys += (keys.empty() ? "" : ", ") + ("'" + job.at("key").get<std::string>() + "'");
    return keys.empty() ? "none" : keys;
  }

  void check_result(std::vector<std::string>& problems) {
    if (spec_.contains("jobs"))
      for (const auto& [key, expected] : spec_.at("jobs").items())
        check_job(key, expected, problems);
    for (const auto& key : strings_of(spec_, "absent_jobs"))
      if (find_job(key))
        problems.push_back("job '" + key + "' ran or was reported, but must not be");
    if (spec_.contains("order")) check_order(problems);

    std::set<std::string> not_triggered, triggered;
    for (const auto& entry : result_.at("not_triggered"))
      not_triggered.insert(entry.at("workflow").get<std::string>());
    for (const auto& run : result_.at("runs"))
      triggered.insert(run.at("workflow").get<std::string>());
    for (const auto& path : strings_of(spec_, "not_triggered")) {
      if (!not_triggered.contains(path))
        problems.push_back(
            "workflow '" + path + "' should not have been triggered" +
            (triggered.contains(path) ? " (it ran)" : " (it is not in not_triggered)"));
    }
    for (const auto& path : strings_of(spec_, "triggered"))
      if (!triggered.contains(path))
        problems.push_back("workflow '" + path + "' should have run but did not");
  }

  void check_job(const std::string& key, const json& expected, std::vector<std::string>& problems) {
    check_keys(expected, k_job_keys, "jobs." + key, problems);
    std::int64_t run_id = 0;
    const json* job = find_job(key, &run_id);
    if (!job) {
      problems.push_back("job '" + key + "' is missing from the result (jobs: " + job_keys() + ")");
      return;
    }
    const std::string label = "job '" + key + "'";
    auto compare = [&](const std::string& what, const json& want, const json& got) {
      if (want != got)
        problems.push_back(label + " " + what + ": expected " + want.dump() + ", got " +
                           got.dump());
    };
    if (expected.contains("conclusion"))
      compare("conclusion", expected.at("conclusion"), job->at("conclusion"));
    if (expected.contains("name")) compare("name", expected.at("name"), job->at("name"));
    if (expected.contains("reason_contains")) {
      auto reason = job->at("reason").get<std::string>();
      for (const auto& text : expected.at("reason_contains"))
        if (reason.find(text.get<std::string>()) == std::string::npos)
          problems.push_back(label + " reason '" + reason + "' does not contain " + text.dump());
    }
    if (expected.contains("outputs"))
      for (const auto& [name, value] : expected.at("outputs").items())
        compare("output '" + name + "'", value,
                job->at("outputs").contains(name) ? job->at("outputs").at(name) : json(nullptr));
    if (expected.contains("steps")) {
      const auto& steps = job->at("steps");
      const auto& want_steps = expected.at("steps");
      for (size_t i = 0; i < want_steps.size(); ++i) {
        const auto& want = want_steps[i];
        if (want.is_null()) continue;
        std::string where = "jobs." + key + ".steps[" + std::to_string(i) + "]";
        check_keys(want, k_step_keys, where, problems);
        if (i >= steps.size()) {
          problems.push_back(label + " has " + std::to_string(steps.size()) +
                             " steps, expected step " + std::to_string(i) + " to exist");
          continue;
        }
        const auto& got = steps[i];
        for (const auto& field : {"name", "outcome", "conclusion", "exit_code"})
          if (want.contains(field))
            compare(std::string("step ") + std::to_string(i) + " " + field, want.at(field),
                    got.at(field));
        if (want.contains("outputs"))
          for (const auto& [name, value] : want.at("outputs").items())
            compare("step " + std::to_string(i) + " output '" + name + "'", value,
                    got.at("outputs").contains(name) ? got.at("outputs").at(name) : json(nullptr));
      }
    }
    auto contains = strings_of(expected, "log_contains");
    auto excludes = strings_of(expected, "log_excludes");
    if (contains.empty() && excludes.empty()) return;
    auto log = run_shell(
        quote(kiln_binary()) + " logs " + std::to_string(run_id) + " " + quote(key), repo_, temp_);
    std::ofstream(temp_ / ("log-" + std::to_string(run_id) + "-" + key + ".txt")) << log.out;
    if (log.exit_code != 0) {
      problems.push_back("kiln logs " + std::to_string(run_id) + " '" + key +
                         "' failed: " + log.err);
      return;
    }
    for (const auto& text : contains)
      if (log.out.find(text) == std::string::npos)
        problems.push_back(label + " log does not contain '" + text + "'; log:\n" +
                           tail(log.out, 2000));
    for (const auto& text : excludes)
      if (log.out.find(text) != std::string::npos)
        problems.push_back(label + " log contains '" + text + "', which it must not");
  }

  // Every job of group i finished before any job of group i+1 (by the result's `order`).
  void check_order(std::vector<std::string>& problems) {
    int previous_last = 0;
    std::string previous_key;
    for (const auto& group : spec_.at("order")) {
      int first = 1 << 30, last = 0;
      std::string first_key, last_key;
      for (const auto& item : group) {
        auto key = item.get<std::string>();
        const json* job = find_job(key);
        if (!job) {
          problems.push_back("order: job '" + key + "' is missing (jobs: " + job_keys() + ")");
          continue;
        }
        int order = job->at("order").get<int>();
        if (order == 0) {
          problems.push_back("order: job '" + key + "' never ran");
          continue;
        }
        if (order < first) first = order, first_key = key;
        if (order > last) last = order, last_key = key;
      }
      if (last == 0) continue;
      if (previous_last > 0 && first < previous_last)
        problems.push_back("order: '" + first_key + "' (finished #" + std::to_string(first) +
                           ") finished before '" + previous_key + "' (#" +
                           std::to_string(previous_last) + ")");
      previous_last = last;
      previous_key = last_key;
    }
  }

  void report(const std::vector<std::string>& problems) {
    std::string all;
    for (const auto& problem : problems) all += "  - " + problem + "\n";
    const std::string known = spec_.is_object() ? spec_.value("known_failure", "") : "";
    if (!known.empty()) {
      if (problems.empty()) {
        ADD_FAILURE() << "case '" << name_ << "' is marked known_failure (" << known
                      << ") but passes: remove the mark from case.json";
      } else {
        std::cout << "[ WARNING  ] known failure of kiln in case '" << name_ << "': " << known
                  << "\n"
                  << all;
        remove_temp();
        GTEST_SKIP() << "known failure: " << known;
      }
    } else if (!problems.empty()) {
      ADD_FAILURE() << "case '" << name_ << "' (" << spec_.value("description", "") << ") failed:\n"
                    << all << "the repository and kiln's output are kept in " << temp_.string();
    }
    if (!HasFailure())
      remove_temp();
    else if (!temp_.empty())
      std::cout << "[   KEPT   ] " << temp_.string() << "\n";
  }

  void remove_temp() {
    std::error_code ec;
    if (!temp_.empty()) fs::remove_all(temp_, ec);
  }

  fs::path case_dir_;
  std::string name_;
  json spec_;
  fs::path temp_, repo_, scratch_;
  json result_;
  std::string output_;
};

// One test per case directory, named conformance.<directory>, registered before main runs.
const bool k_registered = [] {
  std::error_code ec;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(cases_root(), ec))
    if (entry.is_directory() && fs::exists(entry.path() / "case.json"))
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    testing::RegisterTest("conformance", dir.filename().string().c_str(), nullptr, nullptr,
                          __FILE__, __LINE__,
                          [dir]() -> testing::Test* { return new ConformanceCase(dir); });
  }
  return true;
}();

}  // namespace
