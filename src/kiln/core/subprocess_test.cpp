#include "kiln/core/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

namespace kiln::core {
namespace {

using namespace std::chrono_literals;

struct Line {
  Stream stream;
  std::string text;
  bool partial;
};

struct Collector {
  std::vector<Line> lines;
  LineCallback callback() {
    return [this](Stream s, std::string_view text, bool partial) {
      lines.push_back({s, std::string(text), partial});
    };
  }
  std::vector<std::string> texts(Stream s) const {
    std::vector<std::string> out;
    for (const auto& l : lines)
      if (l.stream == s) out.push_back(l.text);
    return out;
  }
};

Subprocess spawn_sh(const std::string& script, OutputMode mode = OutputMode::separate,
                    std::optional<Environment> env = std::nullopt) {
  auto child = Subprocess::spawn({.argv = {"sh", "-c", script}, .env = env, .output = mode});
  EXPECT_TRUE(child) << (child ? "" : child.error().to_string());
  return std::move(*child);
}

ExitStatus finish(Subprocess& child, Collector& out) {
  auto r = child.pump(out.callback(), Clock::now() + 5s);
  EXPECT_TRUE(r);
  EXPECT_EQ(*r, Subprocess::PumpResult::finished);
  return child.status().value_or(ExitStatus{});
}

bool alive(pid_t pid) {
  // A zombie counts as dead: look at the state letter in /proc/PID/stat.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

int count_open_fds() {
  int n = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(Subprocess, SeparateStreamsAndExitCode) {
  Collector out;
  auto child = spawn_sh("echo one; echo two >&2; echo three; exit 7");
  auto status = finish(child, out);
  EXPECT_EQ(status.exit_code, 7);
  EXPECT_EQ(status.signal, 0);
  EXPECT_FALSE(status.success());
  EXPECT_EQ(out.texts(Stream::out), (std::vector<std::string>{"one", "three"}));
  EXPECT_EQ(out.texts(Stream::err), (std::vector<std::string>{"two"}));
  EXPECT_EQ(status.to_string(), "exit code 7");
}

TEST(Subprocess, MergedStreamKeepsOrder) {
  Collector out;
  auto child = spawn_sh("echo a; echo b >&2; echo c; echo d >&2", OutputMode::merged);
  EXPECT_TRUE(finish(child, out).success());
  EXPECT_EQ(out.texts(Stream::out), (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_TRUE(out.texts(Stream::err).empty());
}

TEST(Subprocess, SignalDeathIsDecoded) {
  Collector out;
  auto child = spawn_sh("kill -9 $$");
  auto status = finish(child, out);
  EXPECT_EQ(status.signal, SIGKILL);
  EXPECT_EQ(status.to_string(), "killed by signal 9 (SIGKILL)");
}

TEST(Subprocess, ExplicitEnvironmentAndWorkingDirectory) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("kiln-sp-{}", ::getpid());
  std::filesystem::create_directories(dir);
  Collector out;
  auto child = Subprocess::spawn({.argv = {"sh", "-c", "pwd; env | sort"},
                                  .env = Environment{{"PATH", "/usr/bin:/bin"}, {"FOO", "b a r"}},
                                  .cwd = dir});
  ASSERT_TRUE(child) << child.error().to_string();
  EXPECT_TRUE(finish(*child, out).success());
  auto lines = out.texts(Stream::out);
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(std::filesystem::path(lines[0]), std::filesystem::canonical(dir));
  // Only what we passed (sh itself adds PWD and may add SHLVL / _).
  std::vector<std::string> vars(lines.begin() + 1, lines.end());
  EXPECT_NE(std::find(vars.begin(), vars.end(), "FOO=b a r"), vars.end());
  EXPECT_NE(std::find(vars.begin(), vars.end(), "PATH=/usr/bin:/bin"), vars.end());
  for (const auto& v : vars) EXPECT_EQ(v.find("HOME="), std::string::npos) << v;
  std::filesystem::remove_all(dir);
}

TEST(Subprocess, ProgramIsFoundInTheChildsPath) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("kiln-sp-path-{}", ::getpid());
  std::filesystem::create_directories(dir);
  {
    std::ofstream tool(dir / "kiln-hello-tool");
    tool << "#!/bin/sh\necho hello from tool\n";
  }
  std::filesystem::permissions(dir / "kiln-hello-tool", std::filesystem::perms::owner_all);
  Collector out;
  auto child = Subprocess::spawn(
      {.argv = {"kiln-hello-tool"}, .env = Environment{{"PATH", dir.string() + ":/bin"}}});
  ASSERT_TRUE(child) << child.error().to_string();
  EXPECT_TRUE(finish(*child, out).success());
  EXPECT_EQ(out.texts(Stream::out), (std::vector<std::string>{"hello from tool"}));

  auto missing = Subprocess::spawn({.argv = {"kiln-hello-tool"}});  // not in our PATH
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
  auto bad_cwd = Subprocess::spawn({.argv = {"true"}, .cwd = dir / "nope"});
  ASSERT_FALSE(bad_cwd);
  EXPECT_NE(bad_cwd.error().message.find("does not exist"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Subprocess, LongLinesAreSplitAtUtf8BoundariesAndLastLineFlushed) {
  Collector out;
  // 12 ASCII bytes, then "é" (2 bytes) straddling the 13/14 byte boundary, then more; no
  // final newline; a CRLF line too.
  auto child = Subprocess::spawn(
      {.argv = {"printf", "abc\\r\\n0123456789ab\\303\\251xyz"}, .max_line_bytes = 13});
  ASSERT_TRUE(child);
  EXPECT_TRUE(finish(*child, out).success());
  ASSERT_EQ(out.lines.size(), 3u);
  EXPECT_EQ(out.lines[0].text, "abc");
  EXPECT_FALSE(out.lines[0].partial);
  EXPECT_EQ(out.lines[1].text, "0123456789ab");  // cut before the 2-byte character
  EXPECT_TRUE(out.lines[1].partial);
  EXPECT_EQ(out.lines[2].text, "\xC3\xA9xyz");
  EXPECT_FALSE(out.lines[2].partial);
}

TEST(Subprocess, VeryLongLineArrivesComplete) {
  Collector out;
  auto child = spawn_sh("head -c 300000 /dev/zero | tr '\\0' x; echo; echo done");
  EXPECT_TRUE(finish(child, out).success());
  std::string joined;
  std::size_t pieces = 0;
  for (const auto& l : out.lines) {
    if (l.text == "done") break;
    joined += l.text;
    ++pieces;
    EXPECT_LE(l.text.size(), 64u * 1024);
  }
  EXPECT_EQ(joined, std::string(300000, 'x'));
  EXPECT_EQ(pieces, 5u);  // 4 partial pieces of 64 KiB + the rest
}

TEST(Subprocess, RunsInItsOwnProcessGroup) {
  Collector out;
  auto child = spawn_sh("cut -d' ' -f5 /proc/$$/stat");
  EXPECT_TRUE(finish(child, out).success());
  ASSERT_EQ(out.texts(Stream::out).size(), 1u);
  EXPECT_EQ(out.texts(Stream::out)[0], std::to_string(child.pid()));
  EXPECT_NE(child.pid(), ::getpgrp());
}

TEST(Subprocess, DeadlineThenTerminateKillsTheGroup) {
  Collector out;
  auto child = spawn_sh("sleep 100 & echo $!; sleep 100; wait");
  // Read until the grandchild's pid arrived (the pump returns at each short deadline).
  auto give_up = Clock::now() + 2s;
  while (out.lines.empty() && Clock::now() < give_up) {
    auto r = child.pump(out.callback(), Clock::now() + 50ms);
    ASSERT_TRUE(r);
    EXPECT_EQ(*r, Subprocess::PumpResult::deadline);
  }
  ASSERT_EQ(out.texts(Stream::out).size(), 1u);
  pid_t grandchild = std::stoi(out.texts(Stream::out)[0]);
  EXPECT_TRUE(alive(grandchild));
  auto status = child.terminate(1s, out.callback());
  ASSERT_TRUE(status);
  EXPECT_EQ(status->signal, SIGTERM);
  for (int i = 0; i < 100 && alive(grandchild); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(alive(grandchild));
}

TEST(Subprocess, TerminateEscalatesToSigkill) {
  Collector out;
  auto child = spawn_sh("trap '' TERM; echo ready; while :; do sleep 0.05; done");
  // Wait until the trap is installed.
  auto give_up = Clock::now() + 2s;
  while (out.lines.empty() && Clock::now() < give_up) {
    ASSERT_TRUE(child.pump(out.callback(), Clock::now() + 50ms));
  }
  ASSERT_EQ(out.texts(Stream::out), (std::vector<std::string>{"ready"}));
  auto start = Clock::now();
  auto status = child.terminate(200ms);
  ASSERT_TRUE(status);
  EXPECT_EQ(status->signal, SIGKILL);
  EXPECT_GE(Clock::now() - start, 200ms);
}

TEST(Subprocess, WakeFdInterruptsPump) {
  int wake = ::eventfd(0, EFD_CLOEXEC);
  ASSERT_GE(wake, 0);
  auto child = spawn_sh("sleep 100");
  std::thread waker([&] {
    std::this_thread::sleep_for(100ms);
    uint64_t one = 1;
    EXPECT_EQ(::write(wake, &one, sizeof one), 8);
  });
  auto r = child.pump({}, Clock::now() + 5s, wake);
  waker.join();
  ASSERT_TRUE(r);
  EXPECT_EQ(*r, Subprocess::PumpResult::woken);
  EXPECT_FALSE(child.status());
  ::close(wake);
  // The destructor kills what is still running.
  pid_t pid = child.pid();
  {
    Subprocess gone = std::move(child);
  }
  EXPECT_FALSE(alive(pid));
}

TEST(Subprocess, BackgroundChildHoldingThePipeDoesNotBlock) {
  Collector out;
  auto child = spawn_sh("sleep 3 & echo started");
  auto start = Clock::now();
  EXPECT_TRUE(finish(child, out).success());
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(out.texts(Stream::out), (std::vector<std::string>{"started"}));
  child.signal_group(SIGKILL);  // clean up the sleeper
}

TEST(Subprocess, NoDescriptorLeaks) {
  // A descriptor opened without O_CLOEXEC by "someone else" in this process.
  // (dup2 to a high number, so that it cannot be confused with the descriptors ls opens itself).
  int opened = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(opened, 0);
  int leaky = ::dup2(opened, 177);
  ::close(opened);
  ASSERT_EQ(leaky, 177);
  int before = count_open_fds();
  for (int i = 0; i < 20; ++i) {
    Collector out;
    auto child = spawn_sh("ls /proc/self/fd");
    EXPECT_TRUE(finish(child, out).success());
    // ls sees 0, 1, 2 and its own directory descriptor; nothing of ours.
    EXPECT_LE(out.texts(Stream::out).size(), 4u);
    for (const auto& fd : out.texts(Stream::out)) EXPECT_NE(fd, std::to_string(leaky));
  }
  for (int i = 0; i < 5; ++i) {
    auto child = spawn_sh("sleep 100");
    auto status = child.terminate(100ms);
    EXPECT_TRUE(status);
  }
  EXPECT_EQ(count_open_fds(), before);
  ::close(leaky);
}

TEST(RunCommand, CollectsOutputAndStatus) {
  auto r = run_command({"sh", "-c", "echo out1; echo err1 >&2; printf tail; exit 3"});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->status.exit_code, 3);
  EXPECT_FALSE(r->ok());
  EXPECT_EQ(r->out, "out1\ntail\n");
  EXPECT_EQ(r->err, "err1\n");
}

TEST(RunCommand, TimeoutIsAnError) {
  auto start = Clock::now();
  auto r = run_command({"sleep", "100"}, {}, std::nullopt, 100ms);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::timeout);
  EXPECT_LT(Clock::now() - start, 2s);
}

TEST(RunCommand, MissingProgram) {
  auto r = run_command({"kiln-no-such-program-xyz"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::not_found);
}

TEST(FindExecutable, SearchesPathEntriesInOrder) {
  auto sh = find_executable("sh", "/nonexistent:/bin:/usr/bin");
  ASSERT_TRUE(sh);
  EXPECT_EQ(*sh, std::filesystem::path("/bin/sh"));
  EXPECT_FALSE(find_executable("sh", "/nonexistent"));
  EXPECT_TRUE(find_executable("/bin/sh", ""));
  EXPECT_FALSE(find_executable("", "/bin"));
}

}  // namespace
}  // namespace kiln::core
