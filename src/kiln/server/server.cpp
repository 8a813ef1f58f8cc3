#include "kiln/server/server.h"

#include <httplib.h>
#include <openssl/crypto.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <thread>

#include <fmt/core.h>
#include <spdlog/spdlog.h>

#include "kiln/core/git.h"
#include "kiln/core/subprocess.h"
#include "kiln/engine/place/gpu_supervisor.h"
#include "kiln/server/api_json.h"
#include "kiln/server/bounded_http.h"
#include "kiln/server/check_client.h"
#include "kiln/server/dashboard.h"
#include "kiln/server/gpu_routes.h"
#include "kiln/server/listen.h"
#include "kiln/server/poller.h"
#include "kiln/server/query.h"
#include "kiln/server/reply.h"
#include "kiln/server/routes.h"
#include "kiln/server/run_queue.h"
#include "kiln/server/schedule_clock.h"
#include "kiln/server/signature.h"
#include "kiln/server/telemetry_routes.h"
#include "kiln/server/tls.h"
#include "kiln/server/webhook.h"
#include "kiln/store/postgres_store.h"
#include "kiln/store/sqlite_store.h"

namespace kiln::server {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using httplib::Request;
using httplib::Response;

// GitHub caps webhook payloads at 25 MB; anything larger is not a forge's delivery. A webhook
// body is checked against the secrets while it is read and kept in memory only up to
// k_webhook_in_memory (the rest waits in a temporary file until the signature matched); the
// API's own bodies are small JSON objects.
constexpr std::size_t k_max_body = 25 * 1024 * 1024;
constexpr std::size_t k_webhook_in_memory = 256 * 1024;
constexpr std::size_t k_max_api_body = 64 * 1024;
// HTTP worker threads. Each open event stream holds one for as long as its run lasts, and each
// keep-alive connection one between its requests: cpp-httplib's default (8 on a small host)
// let eight log viewers stall webhooks and /healthz (tests/integration/serve_api_test.sh).
constexpr std::size_t k_http_threads = 128;
// The most rows one API page may ask for (?limit=; 0 is all).
constexpr std::int64_t k_max_limit = 1'000'000;

// KILN_TEST_CLOCK_START=2026-07-01T07:29:58Z (tests only): the schedule clock starts at that
// UTC time and runs at the real pace, so a test sees a firing without waiting for one.
ScheduleClock::Now test_clock() {
  const char* start = std::getenv("KILN_TEST_CLOCK_START");
  if (!start || !*start) return {};
  std::tm tm{};
  std::istringstream in(start);
  in >> std::get_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  if (in.fail()) {
    spdlog::error("KILN_TEST_CLOCK_START '{}' is not YYYY-MM-DDTHH:MM:SSZ: the real clock is used",
                  start);
    return {};
  }
  const auto wanted = std::chrono::sys_seconds(std::chrono::seconds(timegm(&tm)));
  const auto offset =
      wanted - std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
  spdlog::warn("schedule clock: KILN_TEST_CLOCK_START moves it to {}", start);
  return [offset] {
    return std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) + offset;
  };
}

// The first header of several names that is present ("" when none): Gitea and Forgejo send
// their own names beside GitHub's.
std::string header(const Request& req, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (req.has_header(name)) return req.get_header_value(name);
  return {};
}

class Service {
 public:
  Service(const ServeOptions& options, std::unique_ptr<store::Store> store, QueueSettings settings,
          std::unique_ptr<httplib::Server> http)
      : options_(options),
        serve_(options.config.serve),
        store_(std::move(store)),
        clock_(
            serve_, *store_, settings.work_dir, [this](std::int64_t id) { queue_.enqueue(id); },
            test_clock()),
        queue_(std::move(settings), *store_),
        poller_(serve_, *store_, [this](std::int64_t id) { queue_.enqueue(id); }),
        http_owner_(std::move(http)),
        http_(*http_owner_) {}

  Status run(const std::atomic<bool>& stop) {
    routes();
    http_.new_task_queue = [] { return new httplib::ThreadPool(k_http_threads); };
    http_.set_socket_options(exclusive_socket_options);
    int port = serve_.listen_port;
    if (port == 0) {
      port = http_.bind_to_any_port(serve_.listen_host);
      if (port < 0) port = 0;
    } else if (!http_.bind_to_port(serve_.listen_host, port)) {
      port = 0;
    }
    if (port == 0) return std::unexpected(bind_failure(serve_.listen_host, serve_.listen_port));
    if (!widen_listen_backlog(http_))
      spdlog::warn("kiln serve: the listening socket's backlog stays httplib's 5: {}",
                   std::strerror(errno));
    // Links in statuses and check runs name the bound port (listen: HOST:0 included).
    if (!queue_.has_public_url())
      queue_.set_public_url(
          fmt::format("{}://{}:{}", serve_.tls ? "https" : "http", serve_.listen_host, port));
    KILN_TRY_VOID(queue_.start());
    poller_.start();
    clock_.start();
    std::thread listener([this] { http_.listen_after_bind(); });
    spdlog::info("kiln serve: listening on {}://{}:{}", serve_.tls ? "https" : "http",
                 serve_.listen_host, port);
    if (!options_.port_file.empty()) {
      std::ofstream out(options_.port_file + ".tmp");
      out << port << "\n";
      out.close();
      fs::rename(options_.port_file + ".tmp", options_.port_file);
    }
    while (!stop.load()) std::this_thread::sleep_for(std::chrono::milliseconds(100));

    spdlog::info("kiln serve: shutting down; {} run(s) in progress", queue_.running());
    draining_ = true;
    poller_.stop();
    clock_.stop();
    queue_.stop_taking();
    // From here on no queued trigger starts (they stay queued for the next server).
    spdlog::info("kiln serve: taking no new trigger; {} running may finish within {}s",
                 queue_.running(),
                 std::chrono::duration_cast<std::chrono::seconds>(serve_.shutdown_grace).count());
    if (!queue_.wait_idle(std::chrono::steady_clock::now() + serve_.shutdown_grace)) {
      spdlog::warn("kiln serve: shutdown grace over; cancelling {} run(s)", queue_.running());
      queue_.cancel_all();
      // Cancelled steps stop within the engine's own kill grace; wait as long as it takes.
      while (!queue_.wait_idle(std::chrono::steady_clock::now() + std::chrono::minutes(1))) {
      }
    }
    http_.stop();
    listener.join();
    spdlog::info("kiln serve: stopped");
    return {};
  }

 private:
  // Bearer-token check for what changes state or shows logs. Without configured tokens those
  // endpoints are closed (403): an unauthenticated server only shows runs.
  bool authorized(const Request& req, Response& res) {
    if (serve_.api_tokens.empty()) {
      reply_error(res, 403, "no serve.api_tokens configured: this endpoint is closed");
      return false;
    }
    const std::string given = req.get_header_value("Authorization");
    constexpr std::string_view k_bearer = "Bearer ";
    if (given.starts_with(k_bearer)) {
      std::string_view token = std::string_view(given).substr(k_bearer.size());
      for (const auto& known : serve_.api_tokens)
        if (known.size() == token.size() &&
            CRYPTO_memcmp(known.data(), token.data(), token.size()) == 0)
          return true;
    }
    res.set_header("WWW-Authenticate", "Bearer");
    reply_error(res, 401, "a valid bearer token is required");
    return false;
  }

  void routes() {
    // serve.dashboard: private: what the API and /metrics tell needs a token too; the page
    // itself (no data in it) and /healthz stay open, so a browser can ask for the token.
    if (serve_.private_dashboard)
      guard_reads(http_, [this](const Request& req, Response& res) {
        if (!req.path.starts_with("/api/") && req.path != "/metrics") return true;
        return authorized(req, res);
      });
    http_.Get("/healthz", [this](const Request&, Response& res) {
      if (draining_)
        reply(res, 503, {{"status", "draining"}});
      else
        reply(res, 200, {{"status", "ok"}, {"running", queue_.running()}});
    });
    post_streaming(http_, "/webhooks/github", k_max_body,
                   [this](const Request& req, Response& res, const PieceReader& read) {
                     webhook(req, res, read);
                   });
    http_.Get("/api/runs", [this](const Request& req, Response& res) {
      store::RunQuery query;
      std::int64_t limit = 50;
      if (auto read = read_integers(
              req.params, {{"limit", &limit, 0, k_max_limit}, {"before", &query.before_id}});
          !read)
        return reply_error(res, 400, read.error().message);
      query.limit = static_cast<int>(limit);
      if (req.has_param("repository")) query.repository = req.get_param_value("repository");
      auto runs = store_->list_runs(query);
      if (!runs) return reply_error(res, 500, runs.error().message);
      json out = json::array();
      for (const auto& run : *runs) out.push_back(to_json(run));
      reply(res, 200, {{"runs", out}});
    });
    http_.Get(R"(/api/runs/(\d+))", [this](const Request& req, Response& res) {
      const auto id = path_id(req, res, "run");
      if (!id) return;
      auto detail = store_->get_run_detail(*id);
      if (!detail) return reply_error(res, detail.error());
      reply(res, 200, to_json(*detail));
    });
    http_.Get(R"(/api/runs/(\d+)/logs)", [this](const Request& req, Response& res) {
      if (!authorized(req, res)) return;
      const auto id = path_id(req, res, "run");
      if (!id) return;
      store::LogQuery query;
      query.run_id = *id;
      std::int64_t limit = 1000, job = 0;
      if (auto read = read_integers(
              req.params,
              {{"after", &query.after_seq}, {"limit", &limit, 0, k_max_limit}, {"job", &job}});
          !read)
        return reply_error(res, 400, read.error().message);
      query.limit = static_cast<int>(limit);
      if (req.has_param("job")) query.job_id = job;
      if (auto run = store_->get_run(query.run_id); !run) return reply_error(res, run.error());
      auto chunks = store_->read_logs(query);
      if (!chunks) return reply_error(res, 500, chunks.error().message);
      json lines = json::array();
      std::int64_t last = query.after_seq;
      for (const auto& chunk : *chunks) {
        lines.push_back(to_json(chunk));
        last = chunk.seq;
      }
      reply(res, 200, {{"lines", lines}, {"next", last}});
    });
    http_.Get(R"(/api/runs/(\d+)/events)",
              [this](const Request& req, Response& res) { events(req, res); });
    const HeaderCheck token = [this](const Request& req, Response& res) {
      return authorized(req, res);
    };
    post_with_body(http_, R"(/api/runs/(\d+)/cancel)", k_max_api_body, token,
                   [this](const Request& req, Response& res) {
                     const auto id = path_id(req, res, "run");
                     if (!id) return;
                     auto run = store_->get_run(*id);
                     if (!run) return reply_error(res, run.error());
                     if (!queue_.cancel_run(*id))
                       return reply_error(res, 409,
                                          fmt::format("run {} is not running on this server", *id));
                     reply(res, 202, {{"cancelling", *id}});
                   });
    http_.Get("/api/triggers", [this](const Request& req, Response& res) {
      std::int64_t limit = 50;
      if (auto read = read_integers(req.params, {{"limit", &limit, 0, k_max_limit}}); !read)
        return reply_error(res, 400, read.error().message);
      auto triggers = store_->list_triggers(std::nullopt, static_cast<int>(limit));
      if (!triggers) return reply_error(res, 500, triggers.error().message);
      json out = json::array();
      for (const auto& trigger : *triggers) out.push_back(to_json(trigger));
      reply(res, 200, {{"triggers", out}});
    });
    http_.Get(R"(/api/triggers/(\d+))", [this](const Request& req, Response& res) {
      const auto id = path_id(req, res, "trigger");
      if (!id) return;
      auto trigger = store_->get_trigger(*id);
      if (!trigger) return reply_error(res, trigger.error());
      reply(res, 200, to_json(*trigger));
    });
    post_with_body(http_, R"(/api/triggers/(\d+)/approve)", k_max_api_body, token,
                   [this](const Request& req, Response& res) {
                     if (draining_) return reply_error(res, 503, "the server is shutting down");
                     const auto id = path_id(req, res, "trigger");
                     if (!id) return;
                     auto approved = queue_.approve(*id, "the API");
                     if (!approved) return reply_error(res, approved.error());
                     reply(res, 202, {{"approved", *id}});
                   });
    post_with_body(http_, R"(/api/triggers/(\d+)/cancel)", k_max_api_body, token,
                   [this](const Request& req, Response& res) {
                     const auto id = path_id(req, res, "trigger");
                     if (!id) return;
                     auto cancelled = queue_.cancel_trigger(*id);
                     if (!cancelled) return reply_error(res, cancelled.error());
                     reply(res, 202, {{"cancelling", *id}});
                   });
    post_with_body(http_, "/api/triggers", k_max_api_body, token,
                   [this](const Request& req, Response& res) { trigger(req, res); });
    register_telemetry_routes(http_, *store_);
    http_.Get("/api/gpus", [this](const Request&, Response& res) {
      engine::GpuSupervisor supervisor(options_.base);
      auto gpus = host_gpus_json(supervisor, *store_);
      if (!gpus) return reply_error(res, 500, gpus.error().message);
      reply(res, 200, *gpus);
    });
    register_dashboard_routes(http_, *store_);
    register_run_routes(http_, routes_);
    register_test_routes(http_, routes_);
    register_benchmark_routes(http_, routes_);
    register_metrics_routes(http_, routes_);
    refuse_other_bodies(http_);  // after every route that takes a body
  }

  void webhook(const Request& req, Response& res, const PieceReader& read) {
    if (draining_) return reply_error(res, 503, "the server is shutting down");
    const std::string event_name = header(req, {"X-GitHub-Event", "X-Gitea-Event"});
    const std::string delivery = header(req, {"X-GitHub-Delivery", "X-Gitea-Delivery"});
    const std::string signature = req.get_header_value("X-Hub-Signature-256");
    if (event_name.empty() || delivery.empty())
      return reply_error(res, 400, "X-GitHub-Event and X-GitHub-Delivery are required");
    // The secret depends on the repository named in the body, so the body is checked against
    // every configured secret while it is read; nothing of it is parsed, used or stored until
    // one matched, and the repository it names must be one whose secret matched.
    std::vector<std::string> secrets;
    for (const auto& repository : serve_.repositories) secrets.push_back(repository.webhook_secret);
    StreamingSignatures signatures(secrets);
    SpooledBody spooled(k_webhook_in_memory);
    if (!read([&](const char* data, std::size_t n) {
          signatures.update({data, n});
          return spooled.append(data, n);
        }))
      return;
    const auto signed_by = signatures.matches(signature);
    auto refuse = [&] {
      spdlog::warn("webhook {}: refused: bad or missing signature", delivery);
      reply_error(res, 401, "bad or missing X-Hub-Signature-256");
    };
    if (std::find(signed_by.begin(), signed_by.end(), true) == signed_by.end()) return refuse();
    auto text = spooled.text();
    if (!text) return reply_error(res, 500, "cannot read the delivery's body back");
    const std::string& body_text = *text;
    auto body = nlohmann::json::parse(body_text, nullptr, false);
    std::string full_name;
    if (body.is_object() && body["repository"].is_object() &&
        body["repository"]["full_name"].is_string())
      full_name = body["repository"]["full_name"].get<std::string>();
    const auto* repository = find_repository(serve_, full_name);
    if (!repository ||
        !signed_by[static_cast<std::size_t>(repository - serve_.repositories.data())])
      return refuse();
    if (event_name == "check_run")
      return check_run_event(body, body_text, delivery, *repository, res);
    auto event = parse_webhook(event_name, body_text);
    if (!event) return reply_error(res, 400, event.error().message);
    if (!event->ignored.empty()) return reply(res, 202, {{"ignored", event->ignored}});
    if (auto fresh = check_event_time(*event, store::now_ms()); !fresh) {
      spdlog::warn("webhook {}: refused: {}", delivery, fresh.error().message);
      return reply_error(res, 409, fresh.error().message);
    }
    if (event->event == "workflow_dispatch")
      if (auto resolved = resolve_dispatch_commit(*event, *repository); !resolved)
        return reply_error(res, resolved.error().code == ErrorCode::not_found ? 422 : 502,
                           resolved.error().message);
    auto record = make_trigger(*event, delivery, serve_, *repository);
    record.identity = payload_identity(*event, body_text);
    auto created = store_->create_trigger(record);
    if (!created) return reply_error(res, 500, created.error().message);
    if (!created->has_value()) {
      spdlog::info("webhook {}: a redelivery or replay of a delivery seen before, not run again",
                   delivery);
      return reply(res, 200, {{"duplicate", delivery}});
    }
    const auto id = **created;
    auto stored = store_->get_trigger(id);
    const bool waits = stored && stored->status == store::TriggerStatus::waiting_approval;
    if (!waits) queue_.enqueue(id);
    spdlog::info("webhook {}: trigger {} {}", delivery, id,
                 waits ? "waits for approval" : "queued");
    reply(res, 202, {{"trigger", id}, {"status", waits ? "waiting_approval" : "queued"}});
  }

  // A check run's "Re-run" on the forge (check_run, action rerequested; the check runs of
  // check_client.h carry their run's id as external_id): a re-run of that run, of its failed
  // jobs when it failed. The signature was checked; the run must be the repository's.
  void check_run_event(const nlohmann::json& body, std::string_view body_text,
                       const std::string& delivery, const config::ServeRepository& repository,
                       Response& res) {
    const auto* action = body.contains("action") ? &body["action"] : nullptr;
    if (!action || !action->is_string() || *action != "rerequested")
      return reply(res, 202,
                   {{"ignored", "check_run: only a rerequested check run starts something"}});
    const auto* check = body.contains("check_run") ? &body["check_run"] : nullptr;
    std::string external_id;
    if (check && check->is_object() && check->contains("external_id") &&
        (*check)["external_id"].is_string())
      external_id = (*check)["external_id"].get<std::string>();
    std::int64_t run_id = 0;
    auto [end, ec] =
        std::from_chars(external_id.data(), external_id.data() + external_id.size(), run_id);
    if (external_id.empty() || ec != std::errc() ||
        end != external_id.data() + external_id.size() || run_id <= 0)
      return reply(res, 202, {{"ignored", "check_run: not a check run of a kiln run"}});
    auto run = store_->get_run(run_id);
    if (!run) return reply_error(res, run.error());
    WebhookEvent event;
    event.event = "check_run";
    auto queued = queue_rerun(*store_, queue_,
                              {.run_id = run_id,
                               .failed_only = run->status != store::RunStatus::success,
                               .repository = repository.name,
                               .delivery = delivery,
                               .identity = payload_identity(event, body_text),
                               .why = ", requested on the forge"});
    if (!queued) return reply_error(res, queued.error());
    spdlog::info("webhook {}: check run re-run of run {}", delivery, run_id);
    reply(res, queued->contains("duplicate") ? 200 : 202, *queued);
  }

  // POST /api/triggers {"repository": "owner/name", "ref": "refs/heads/main"}: a push of the
  // ref's current commit, for `kiln trigger`.
  void trigger(const Request& req, Response& res) {
    if (!authorized(req, res)) return;
    if (draining_) return reply_error(res, 503, "the server is shutting down");
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body["repository"].is_string() || !body["ref"].is_string())
      return reply_error(res, 400,
                         "expected {\"repository\": \"owner/name\", \"ref\": \"refs/...\"}");
    const auto* repository = find_repository(serve_, body["repository"].get<std::string>());
    if (!repository) return reply_error(res, 404, "the repository is not configured");
    std::string ref = body["ref"].get<std::string>();
    if (!ref.starts_with("refs/")) ref = "refs/heads/" + ref;
    auto listed = core::run_git({"ls-remote", "--", repository->clone_url, ref}, {});
    if (!listed || !listed->ok() || listed->out.size() < 40)
      return reply_error(res, 404, fmt::format("{} has no ref {}", repository->name, ref));
    const std::string sha = listed->out.substr(0, 40);
    nlohmann::json payload = {{"ref", ref},
                              {"before", std::string(40, '0')},
                              {"after", sha},
                              {"repository", {{"full_name", repository->name}}},
                              {"sender", {{"login", "kiln-trigger"}}}};
    auto event = parse_webhook("push", payload.dump());
    if (!event) return reply_error(res, 500, event.error().message);
    auto created = store_->create_trigger(make_trigger(*event, "", serve_, *repository));
    if (!created || !created->has_value())
      return reply_error(res, 500, created ? "not created" : created.error().message);
    queue_.enqueue(**created);
    reply(res, 202, {{"trigger", **created}, {"sha", sha}});
  }

  // Server-sent events: `log` for each new chunk, `status` when the run's status changes, `end`
  // once the run finished and every chunk was sent. Polls the store (logs are written as
  // produced) every 200 ms; ?after=SEQ resumes.
  void events(const Request& req, Response& res) {
    if (!authorized(req, res)) return;
    const auto id = path_id(req, res, "run");
    if (!id) return;
    const std::int64_t run_id = *id;
    if (auto run = store_->get_run(run_id); !run) return reply_error(res, run.error());
    auto after = std::make_shared<std::int64_t>(0);
    if (auto read = read_integers(req.params, {{"after", after.get()}}); !read)
      return reply_error(res, 400, read.error().message);
    auto last_status = std::make_shared<std::string>();
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider(
        "text/event-stream",
        [this, run_id, after, last_status](std::size_t, httplib::DataSink& sink) {
          auto send = [&](std::string_view event, const json& data) {
            auto text = fmt::format("event: {}\ndata: {}\n\n", event,
                                    data.dump(-1, ' ', false, json::error_handler_t::replace));
            return sink.write(text.data(), text.size());
          };
          while (sink.is_writable()) {
            auto run = store_->get_run(run_id);
            if (!run) return false;
            store::LogQuery query{.run_id = run_id, .after_seq = *after, .limit = 500};
            auto chunks = store_->read_logs(query);
            if (!chunks) return false;
            for (const auto& chunk : *chunks) {
              if (!send("log", to_json(chunk))) return false;
              *after = chunk.seq;
            }
            const std::string status(store::to_string(run->status));
            if (status != *last_status) {
              *last_status = status;
              if (!send("status", {{"run", run_id}, {"status", status}})) return false;
            }
            if (store::is_terminal(run->status) && chunks->empty()) {
              send("end", {{"run", run_id}, {"status", status}});
              sink.done();
              return true;
            }
            if (draining_ && queue_.running() == 0) {
              sink.done();
              return true;
            }
            if (chunks->empty()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
          }
          return false;
        });
  }

  const ServeOptions& options_;
  const config::ServeConfig& serve_;
  std::unique_ptr<store::Store> store_;
  ScheduleClock clock_;  // before queue_: built from the settings queue_ takes
  RunQueue queue_;
  Poller poller_;
  std::unique_ptr<httplib::Server> http_owner_;  // an SSLServer with serve.tls
  httplib::Server& http_;
  std::atomic<bool> draining_{false};
  RouteContext routes_{options_,
                       *store_,
                       queue_,
                       draining_,
                       [this](const Request& req, Response& res) { return authorized(req, res); },
                       {}};
};

}  // namespace

Status serve(const ServeOptions& options, const std::atomic<bool>& stop) {
  const auto& serve_config = options.config.serve;
  if (serve_config.repositories.empty())
    return fail(ErrorCode::invalid_input, "{}: serve.repositories lists no repository",
                options.config.file.empty() ? "kiln.yml" : options.config.file.string());
  const fs::path base =
      options.config.file.empty() ? fs::current_path() : options.config.file.parent_path();
  QueueSettings settings;
  settings.serve = serve_config;
  settings.base = options.base;
  settings.work_dir = serve_config.work_dir.value_or(base / "kiln-work");
  settings.public_url = serve_config.public_url;
  settings.concurrency = std::make_shared<engine::ConcurrencyRegistry>();
  settings.config_dir = base;
  for (const auto& repository : serve_config.repositories)
    if (repository.checks) KILN_TRY_VOID(check_checks_config(*repository.checks));
  KILN_TRY(auto http, make_http_server(serve_config));
  const fs::path store_path = serve_config.store.value_or(base / "kiln.db");
  store::PostgresStoreOptions postgres;  // serve.store: postgresql://... (docs/scale-out.md)
  postgres.url = serve_config.store_url;
  postgres.password_file = serve_config.store_password_file.value_or(fs::path());
  KILN_TRY(auto store, postgres.url.empty() ? store::open_sqlite_store(store_path)
                                            : store::open_postgres_store(postgres));
  std::error_code ec;
  fs::create_directories(settings.work_dir, ec);
  if (ec)
    return fail(ErrorCode::io_error, "cannot create {}: {}", settings.work_dir.string(),
                ec.message());
  settings.work_dir = fs::absolute(settings.work_dir);
  settings.base.artifact_dir = settings.work_dir / "artifacts";  // checkouts are removed
  Service service(options, std::move(store), std::move(settings), std::move(http));
  return service.run(stop);
}

}  // namespace kiln::server
