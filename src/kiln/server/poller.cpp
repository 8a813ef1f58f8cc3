#include "kiln/server/poller.h"

#include <sstream>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "kiln/core/git.h"
#include "kiln/server/webhook.h"

namespace kiln::server {

namespace {
// An unreachable remote must not hold the poller for long: each look gets this much.
constexpr auto k_ls_remote_timeout = std::chrono::minutes(2);
}  // namespace

Result<std::map<std::string, std::string>> ls_remote(const std::string& remote,
                                                     const std::vector<std::string>& refs) {
  std::vector<std::string> args = {"ls-remote", "--", remote};
  args.insert(args.end(), refs.begin(), refs.end());
  KILN_TRY(auto out, core::run_git(args, {}, k_ls_remote_timeout));
  if (!out.ok()) return fail(ErrorCode::io_error, "git ls-remote {}: {}", remote, out.reason());
  std::map<std::string, std::string> found;
  std::istringstream lines(out.out);
  for (std::string line; std::getline(lines, line);) {
    auto tab = line.find('\t');
    if (tab != 40) continue;
    const std::string ref = line.substr(tab + 1);
    // ls-remote matches patterns by their tail; keep only the refs asked for exactly.
    for (const auto& wanted : refs)
      if (wanted == ref) found[ref] = line.substr(0, 40);
  }
  return found;
}

std::string poll_delivery(const std::string& repository, const std::string& ref,
                          const std::string& sha) {
  return fmt::format("poll:{}:{}:{}", repository, ref, sha);
}

Poller::Poller(const config::ServeConfig& serve, store::Store& store,
               std::function<void(std::int64_t)> enqueue)
    : serve_(serve), store_(store), enqueue_(std::move(enqueue)) {}

Poller::~Poller() { stop(); }

void Poller::start() {
  bool any = false;
  for (const auto& repository : serve_.repositories) any |= !repository.poll_branches.empty();
  if (!any || thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void Poller::stop() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Poller::loop() {
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> due(serve_.repositories.size(), Clock::now());
  MutexLock lock(mutex_);
  while (!stopping_) {
    auto next = Clock::time_point::max();
    for (std::size_t i = 0; i < serve_.repositories.size(); ++i) {
      const auto& repository = serve_.repositories[i];
      if (repository.poll_branches.empty()) continue;
      if (due[i] <= Clock::now()) {
        lock.unlock();
        if (auto polled = poll_once(repository); !polled)
          spdlog::warn("poll {}: {}", repository.name, polled.error().message);
        lock.lock();
        if (stopping_) return;
        due[i] = Clock::now() + repository.poll_interval;
      }
      next = std::min(next, due[i]);
    }
    wake_.wait_until(lock.native(), next, [&]() REQUIRES(mutex_) { return stopping_; });
  }
}

Result<std::vector<std::int64_t>> Poller::poll_once(const config::ServeRepository& repository) {
  std::vector<std::string> refs;
  refs.reserve(repository.poll_branches.size());
  for (const auto& branch : repository.poll_branches) refs.push_back("refs/heads/" + branch);
  KILN_TRY(auto heads, ls_remote(repository.clone_url, refs));
  std::vector<std::int64_t> created_ids;
  for (const auto& [ref, sha] : heads) {
    KILN_TRY(auto seen, store_.get_poll_head(repository.name, ref));
    if (seen && *seen == sha) continue;
    if (!seen) {
      spdlog::info("poll {}: first sight of {} at {}: recorded, not run", repository.name, ref,
                   sha);
      KILN_TRY_VOID(store_.set_poll_head(repository.name, ref, sha));
      continue;
    }
    // The payload of a push webhook, as far as kiln reads it (and github.event shows it).
    nlohmann::json payload = {{"ref", ref},
                              {"before", *seen},
                              {"after", sha},
                              {"repository", {{"full_name", repository.name}}},
                              {"pusher", {{"name", "kiln-poll"}}},
                              {"sender", {{"login", "kiln-poll"}}}};
    KILN_TRY(auto event, parse_webhook("push", payload.dump()));
    const std::string delivery = poll_delivery(repository.name, ref, sha);
    KILN_TRY(auto created,
             store_.create_trigger(make_trigger(event, delivery, serve_, repository)));
    // The head is recorded after the trigger exists: a crash in between re-creates nothing
    // (the delivery id is taken) and loses nothing.
    KILN_TRY_VOID(store_.set_poll_head(repository.name, ref, sha));
    if (!created) continue;
    spdlog::info("poll {}: {} moved to {}: trigger {}", repository.name, ref, sha, *created);
    created_ids.push_back(*created);
    enqueue_(*created);
  }
  return created_ids;
}

}  // namespace kiln::server
