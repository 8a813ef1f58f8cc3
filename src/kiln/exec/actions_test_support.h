#pragma once
// Test helpers for the built-in actions: a temporary directory that is kept when a test fails
// (and says where), real git repositories, and an ActionContext that records its log lines.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/core/subprocess.h"
#include "kiln/exec/actions.h"

namespace kiln::exec::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kiln-actions-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    if (::testing::Test::HasFailure()) {
      std::fprintf(stderr, "test directory kept: %s\n", path_.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Files below `root`, relative and sorted: what a test compares layouts with.
inline std::vector<std::string> list_files(const std::filesystem::path& root) {
  std::vector<std::string> files;
  if (!std::filesystem::exists(root)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file()) files.push_back(entry.path().lexically_relative(root).string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs git in `cwd` with a fixed identity and no user configuration; fails the test on error.
inline std::string git(const std::filesystem::path& cwd, std::vector<std::string> args) {
  std::vector<std::string> argv{"git",
                                "-c",
                                "user.name=Kiln Test",
                                "-c",
                                "user.email=kiln@example.invalid",
                                "-c",
                                "commit.gpgsign=false",
                                "-c",
                                "tag.gpgsign=false",
                                "-c",
                                "init.defaultBranch=main"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto env = core::current_environment();
  env["GIT_CONFIG_GLOBAL"] = "/dev/null";
  env["GIT_CONFIG_NOSYSTEM"] = "1";
  auto output = core::run_command(argv, cwd, env);
  if (!output) {
    ADD_FAILURE() << "git could not run: " << output.error().message;
    return {};
  }
  if (!output->ok()) {
    ADD_FAILURE() << "git " << args.front() << " failed: " << output->err;
  }
  std::string out = output->out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// An ActionContext over `root`: workspace, artifacts and cache in subdirectories; log lines
// collected in `lines`.
struct RecordingContext {
  ActionContext context;
  std::shared_ptr<std::vector<std::string>> lines = std::make_shared<std::vector<std::string>>();

  explicit RecordingContext(const std::filesystem::path& root) {
    context.workspace = root / "workspace";
    context.artifact_root = root / "artifacts";
    context.cache_root = root / "cache";
    std::filesystem::create_directories(context.workspace);
    auto sink = lines;
    context.log = [sink](std::string_view line) { sink->emplace_back(line); };
  }
  bool logged(std::string_view fragment) const {
    return std::any_of(lines->begin(), lines->end(), [&](const std::string& line) {
      return line.find(fragment) != std::string::npos;
    });
  }
  std::string log_text() const {
    std::string text;
    for (const auto& line : *lines) text += line + "\n";
    return text;
  }
};

inline std::string output_of(const ActionResult& result, std::string_view name) {
  for (const auto& [key, value] : result.outputs) {
    if (key == name) return value;
  }
  return "<unset>";
}

}  // namespace kiln::exec::testing
