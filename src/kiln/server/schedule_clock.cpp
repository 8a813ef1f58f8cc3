#include "kiln/server/schedule_clock.h"

#include <algorithm>
#include <sstream>

#include <fmt/core.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "kiln/core/git.h"
#include "kiln/server/webhook.h"
#include "kiln/workflow/loader.h"

namespace kiln::server {

namespace fs = std::filesystem;
namespace chr = std::chrono;

namespace {

// An unreachable remote must not hold the clock for long.
constexpr auto k_git_timeout = chr::minutes(2);

// core::run_git (GIT_DIR & co. scrubbed), its failure an error with git's reason.
Result<std::string> git(const fs::path& cwd, const std::vector<std::string>& args) {
  KILN_TRY(auto out, core::run_git(args, cwd, k_git_timeout));
  if (!out.ok()) return fail(ErrorCode::io_error, "git {}: {}", fmt::join(args, " "), out.reason());
  return out.out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

bool same_line(const workflow::Schedule& a, const workflow::Schedule& b) {
  return a.index == b.index && a.cron == b.cron && a.zone_name() == b.zone_name();
}

}  // namespace

Result<RemoteHead> remote_head(const std::string& remote) {
  KILN_TRY(auto out, git({}, {"ls-remote", "--symref", "--", remote, "HEAD"}));
  RemoteHead head;
  for (const auto& line : lines(out)) {
    // "ref: refs/heads/main\tHEAD" then "SHA\tHEAD".
    if (line.starts_with("ref: ")) {
      head.ref = line.substr(5, line.find('\t') - 5);
    } else if (line.find('\t') == 40) {
      head.sha = line.substr(0, 40);
    }
  }
  if (head.ref.empty() || head.sha.empty())
    return fail(ErrorCode::not_found, "{} has no default branch (its HEAD names no branch)",
                remote);
  return head;
}

std::string schedule_delivery(const std::string& repository, const std::string& workflow_file,
                              std::size_t index, chr::sys_seconds at) {
  return fmt::format("schedule:{}:{}:{}:{}", repository, workflow_file, index,
                     at.time_since_epoch().count());
}

ScheduleClock::ScheduleClock(const config::ServeConfig& serve, store::Store& store,
                             fs::path work_dir, std::function<void(std::int64_t)> enqueue, Now now)
    : serve_(serve),
      store_(store),
      work_dir_(std::move(work_dir)),
      enqueue_(std::move(enqueue)),
      now_(now ? std::move(now)
               : Now([] { return chr::floor<chr::seconds>(chr::system_clock::now()); })) {}

ScheduleClock::~ScheduleClock() { stop(); }

void ScheduleClock::start() {
  if (serve_.repositories.empty() || thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void ScheduleClock::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<std::vector<ScheduleClock::Entry>> ScheduleClock::read_schedules(
    const config::ServeRepository& repository, const RemoteHead& head, Head& state) {
  const fs::path bare = work_dir_ / "schedules" / (repository.name + ".git");
  std::error_code ec;
  if (!fs::exists(bare / "HEAD", ec)) {
    fs::create_directories(bare, ec);
    KILN_TRY_VOID(git(bare, {"init", "--quiet", "--bare"}));
  }
  if (!git(bare, {"cat-file", "-e", head.sha + "^{commit}"}))
    KILN_TRY_VOID(git(bare, {"fetch", "--quiet", "--no-tags", repository.clone_url,
                             "+" + head.ref + ":refs/kiln/schedule"}));
  KILN_TRY(auto listed, git(bare, {"ls-tree", "--name-only", head.sha, ".github/workflows/"}));
  std::vector<Entry> entries;
  for (const auto& file : lines(listed)) {
    if (!file.ends_with(".yml") && !file.ends_with(".yaml")) continue;
    KILN_TRY(auto text, git(bare, {"show", head.sha + ":" + file}));
    auto log_once = [&](const std::string& message) {
      if (std::ranges::find(state.logged, message) != state.logged.end()) return;
      state.logged.push_back(message);
      spdlog::warn("schedule {}@{}: {}", repository.name, head.sha.substr(0, 12), message);
    };
    auto loaded = workflow::load_workflow_text(text, file);
    if (!loaded.workflow) {
      for (const auto& diagnostic : loaded.diagnostics)
        if (diagnostic.severity == workflow::Severity::error) {
          log_once(diagnostic.to_string() + " (its schedules do not fire)");
          break;
        }
      continue;
    }
    auto schedules = workflow::schedules_of(*loaded.workflow);
    if (!schedules) {
      log_once(schedules.error().to_string() + " (its schedules do not fire)");
      continue;
    }
    for (auto& schedule : *schedules)
      entries.push_back(Entry{repository.name, file, std::move(schedule), {}});
  }
  return entries;
}

Status ScheduleClock::refresh(const config::ServeRepository& repository) {
  KILN_TRY(auto head, remote_head(repository.clone_url));
  Head state;
  {
    std::lock_guard lock(mutex_);
    if (auto found = heads_.find(repository.name); found != heads_.end()) {
      state = found->second;
      if (state.head.sha != head.sha) state.logged.clear();
    }
  }
  state.head = head;
  KILN_TRY(auto fresh, read_schedules(repository, head, state));
  const auto now = now_();
  std::lock_guard lock(mutex_);
  for (auto& entry : fresh) {
    auto kept = std::ranges::find_if(entries_, [&](const Entry& old) {
      return old.repository == entry.repository && old.workflow_file == entry.workflow_file &&
             same_line(old.schedule, entry.schedule);
    });
    if (kept != entries_.end()) {
      entry.next = kept->next;
    } else {
      auto next = entry.schedule.parsed.next_after(now, entry.schedule.zone);
      entry.next = next ? *next : chr::sys_seconds::max();
    }
  }
  std::erase_if(entries_, [&](const Entry& e) { return e.repository == repository.name; });
  for (auto& entry : fresh) entries_.push_back(std::move(entry));
  heads_[repository.name] = std::move(state);
  return {};
}

std::vector<std::int64_t> ScheduleClock::fire_due() {
  struct Firing {
    Entry entry;
    chr::sys_seconds at;
    RemoteHead head;
  };
  std::vector<Firing> due;
  {
    std::lock_guard lock(mutex_);
    const auto now = now_();
    for (auto& entry : entries_) {
      if (entry.next > now) continue;
      due.push_back({entry, entry.next, heads_[entry.repository].head});
      // Firings the clock slept through (a suspended host) are not made up.
      auto next = entry.schedule.parsed.next_after(now, entry.schedule.zone);
      entry.next = next ? *next : chr::sys_seconds::max();
    }
  }
  std::vector<std::int64_t> created_ids;
  for (const auto& firing : due) {
    const auto* repository = find_repository(serve_, firing.entry.repository);
    if (!repository) continue;
    WebhookEvent event;
    event.event = "schedule";
    event.repository = repository->name;
    event.ref = firing.head.ref;
    event.sha = firing.head.sha;
    event.sender = event.author = "kiln-schedule";
    event.payload = {{"schedule", firing.entry.schedule.cron},
                     {"workflow", firing.entry.workflow_file},
                     {"ref", firing.head.ref},
                     {"repository", {{"full_name", repository->name}}},
                     {"sender", {{"login", "kiln-schedule"}}}};
    const std::string delivery = schedule_delivery(repository->name, firing.entry.workflow_file,
                                                   firing.entry.schedule.index, firing.at);
    auto created = store_.create_trigger(make_trigger(event, delivery, serve_, *repository));
    if (!created) {
      spdlog::error("schedule {}: {}", delivery, created.error().message);
      continue;
    }
    if (!*created) {  // a restart within the firing's minute
      spdlog::info("schedule {}: this firing has its trigger already", delivery);
      continue;
    }
    spdlog::info("schedule {} {} '{}' ({}): trigger {}", repository->name,
                 firing.entry.workflow_file, firing.entry.schedule.cron,
                 firing.entry.schedule.zone_name(), **created);
    created_ids.push_back(**created);
    enqueue_(**created);
  }
  return created_ids;
}

chr::sys_seconds ScheduleClock::next_firing() const {
  std::lock_guard lock(mutex_);
  auto next = chr::sys_seconds::max();
  for (const auto& entry : entries_) next = std::min(next, entry.next);
  return next;
}

void ScheduleClock::loop() {
  using Steady = chr::steady_clock;
  std::vector<Steady::time_point> refresh_due(serve_.repositories.size(), Steady::now());
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    auto wake = Steady::time_point::max();
    for (std::size_t i = 0; i < serve_.repositories.size(); ++i) {
      const auto& repository = serve_.repositories[i];
      if (refresh_due[i] <= Steady::now()) {
        lock.unlock();
        if (auto refreshed = refresh(repository); !refreshed)
          spdlog::warn("schedule {}: {}", repository.name, refreshed.error().message);
        lock.lock();
        if (stopping_) return;
        auto interval = chr::duration_cast<Steady::duration>(k_schedule_refresh);
        if (!repository.poll_branches.empty())
          interval =
              std::min(interval, chr::duration_cast<Steady::duration>(repository.poll_interval));
        refresh_due[i] = Steady::now() + interval;
      }
      wake = std::min(wake, refresh_due[i]);
    }
    lock.unlock();
    fire_due();
    const auto next = next_firing();
    lock.lock();
    if (next != chr::sys_seconds::max()) {
      // At least a second: the clock reads whole seconds.
      const auto wait = std::max<chr::seconds>(next - now_(), chr::seconds(1));
      wake = std::min(wake, Steady::now() + wait);
    }
    wake_.wait_until(lock, wake, [&] { return stopping_; });
  }
}

}  // namespace kiln::server
