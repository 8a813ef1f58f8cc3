#include "kiln/exec/process_tracker.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/core/subprocess.h"

namespace kiln::exec {
namespace {

using namespace std::chrono_literals;

bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// Runs `script` with the job token in its environment; returns the pids it printed.
std::vector<pid_t> start_daemons(const std::string& token, const std::string& script) {
  auto env = core::current_environment();
  env["KILN_JOB_TOKEN"] = token;
  auto out = core::run_command({"bash", "-c", script}, {}, env, 5s);
  EXPECT_TRUE(out) << (out ? "" : out.error().to_string());
  std::vector<pid_t> pids;
  if (!out) return pids;
  std::istringstream in(out->out);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) pids.push_back(std::stoi(line));
  return pids;
}

TEST(ProcessTracker, TokensAreUnique) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto t = new_job_token();
    EXPECT_TRUE(t.starts_with("kiln-"));
    EXPECT_EQ(t.size(), 37u);
    EXPECT_TRUE(seen.insert(t).second);
  }
}

TEST(ProcessTracker, KillsSetsidAndDoubleForkedDaemons) {
  auto token = new_job_token();
  auto other = new_job_token();
  // Each escapes the step's process group or its parent in a different way; all of them
  // keep the environment. Output goes to /dev/null so run_command does not wait for them.
  auto pids = start_daemons(token, R"SH(
setsid sleep 300 >/dev/null 2>&1 < /dev/null &
echo $!
( sleep 301 >/dev/null 2>&1 < /dev/null & echo $! ) &
wait $!
nohup sleep 302 >/dev/null 2>&1 < /dev/null &
echo $!
tmp=$(mktemp)
setsid bash -c 'sleep 303 & echo $!; wait' >"$tmp" 2>/dev/null < /dev/null &
for i in $(seq 100); do [ -s "$tmp" ] && break; sleep 0.01; done
cat "$tmp"; rm -f "$tmp"
)SH");
  ASSERT_EQ(pids.size(), 4u);
  auto bystander = start_daemons(other, "sleep 304 >/dev/null 2>&1 </dev/null & echo $!");
  ASSERT_EQ(bystander.size(), 1u);
  for (pid_t pid : pids) EXPECT_TRUE(alive(pid)) << pid;

  auto found = find_job_processes(token);
  for (pid_t pid : pids) EXPECT_NE(std::find(found.begin(), found.end(), pid), found.end()) << pid;

  auto killed = kill_job_processes(token);
  ASSERT_TRUE(killed) << killed.error().to_string();
  // The four sleeps and the setsid'd bash that waits for the last one.
  EXPECT_EQ(killed->size(), 5u);
  for (pid_t pid : pids) {
    for (int i = 0; i < 200 && alive(pid); ++i) std::this_thread::sleep_for(5ms);
    EXPECT_FALSE(alive(pid)) << pid;
    EXPECT_NE(std::find(killed->begin(), killed->end(), fmt::format("pid {} (sleep)", pid)),
              killed->end());
  }
  EXPECT_TRUE(find_job_processes(token).empty());
  // Another job's process is untouched.
  EXPECT_TRUE(alive(bystander[0]));
  auto cleanup = kill_job_processes(other);
  ASSERT_TRUE(cleanup);
  EXPECT_EQ(cleanup->size(), 1u);
}

TEST(ProcessTracker, NothingToKill) {
  auto killed = kill_job_processes(new_job_token());
  ASSERT_TRUE(killed);
  EXPECT_TRUE(killed->empty());
  EXPECT_FALSE(kill_job_processes(""));
}

TEST(ProcessTracker, MatchesTheWholeEntryOnly) {
  auto token = new_job_token();
  // A token that merely starts with ours is another job's.
  auto pids = start_daemons(token + "x", "sleep 300 >/dev/null 2>&1 </dev/null & echo $!");
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_TRUE(find_job_processes(token).empty());
  EXPECT_EQ(find_job_processes(token + "x"), pids);
  EXPECT_EQ(job_token_of(pids[0]), token + "x");
  // `$!` is the forked shell until it has exec'd sleep (a loaded host shows "bash" briefly).
  const std::string want = fmt::format("pid {} (sleep)", pids[0]);
  for (int i = 0; i < 500 && describe_process(pids[0]) != want; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(describe_process(pids[0]), want);
  ASSERT_TRUE(kill_job_processes(token + "x"));
}

TEST(ProcessTracker, AProcessWithoutATokenHasNone) {
  EXPECT_EQ(job_token_of(::getpid()), ::getenv("KILN_JOB_TOKEN") ? ::getenv("KILN_JOB_TOKEN") : "");
  EXPECT_EQ(job_token_of(999999999), "");
}

// A process that started a watchdog (the kiln binary, which the build makes before the tests
// run) and then dies by SIGKILL, like `kill -9 kiln`: the watchdog kills the daemons of its
// jobs, and leaves a process of another prefix alone.
TEST(ProcessTracker, OrphanReaperKillsJobsOfADeadOwner) {
  ASSERT_TRUE(std::filesystem::exists(KILN_BINARY_DIR "/kiln")) << "build the kiln target first";
  auto prefix = new_job_token() + "-";
  auto pids = start_daemons(prefix + "7", "setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $!");
  auto others = start_daemons(new_job_token() + "-7",
                              "setsid sleep 301 >/dev/null 2>&1 </dev/null & echo $!");
  ASSERT_EQ(pids.size(), 1u);
  ASSERT_EQ(others.size(), 1u);
  pid_t owner = ::fork();
  ASSERT_GE(owner, 0);
  if (owner == 0) {
    if (!start_orphan_reaper(KILN_BINARY_DIR "/kiln", prefix)) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(alive(pids[0]));
  ::kill(owner, SIGKILL);
  ::waitpid(owner, nullptr, 0);
  for (int i = 0; i < 200 && alive(pids[0]); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(alive(pids[0]));
  EXPECT_TRUE(alive(others[0]));
  (void)kill_job_processes(new_job_token());  // unrelated token: finds nothing
  ::kill(others[0], SIGKILL);
}

}  // namespace
}  // namespace kiln::exec
