// webhook_load: signed push deliveries to a `kiln serve` at a fixed rate, for the load test of
// issue 8 (bench/webhook_load.sh runs it and checks that nothing was lost; docs/performance.md).
//
//   webhook_load --url http://127.0.0.1:PORT [--url ...] --secret S --repository acme/widgets
//                --sha SHA [--ref refs/heads/main] [--rate 200] [--duration 30]
//                [--connections 32] [--prefix load] --out deliveries.jsonl
//
// Delivery i is due at start + i/rate (an open schedule: a slow server makes sends late, it
// does not slow the schedule down; the lateness is reported). Each payload carries
// "kiln_load": {"n": i, "delivery": ID}, so a workflow can echo a line only that delivery
// produces. One line of JSON per delivery goes to --out: {delivery, n, sent_ms (epoch),
// status, trigger, attempts, http_us, late_us}; a summary goes to stderr.
//
// Failover, as a load balancer in front of several replicas does: a delivery that gets no answer
// (connection refused or reset: a replica killed) or a 5xx is sent again, with the same
// X-GitHub-Delivery, to the next --url, and that connection stays on the replica that answered.
// A replica that stored the delivery before it died makes the survivor answer 200 {"duplicate"}:
// delivered. Exit 0 when every delivery was answered 202 or 200 (duplicate), 1 otherwise.

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "kiln/server/signature.h"

namespace {

struct Options {
  std::vector<std::string> urls;  // --url, repeated: connection k sends to urls[k % n]
  std::string secret;
  std::string repository;
  std::string sha;
  std::string ref = "refs/heads/main";
  double rate = 200;
  double duration = 30;
  int connections = 32;
  std::string prefix = "load";
  std::string out;
};

struct Result {
  std::string delivery;
  int n = 0;
  std::int64_t sent_ms = 0;
  int status = 0;
  std::int64_t trigger = 0;
  int attempts = 0;  // sends, failovers included
  std::int64_t http_us = 0;
  std::int64_t late_us = 0;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "webhook_load: %s\n(see the comment at the top of bench/webhook_load.cpp)\n",
               why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string flag = argv[i];
    if (i + 1 >= argc) usage(("missing a value after " + flag).c_str());
    std::string value = argv[++i];
    if (flag == "--url")
      o.urls.push_back(value);
    else if (flag == "--secret")
      o.secret = value;
    else if (flag == "--repository")
      o.repository = value;
    else if (flag == "--sha")
      o.sha = value;
    else if (flag == "--ref")
      o.ref = value;
    else if (flag == "--rate")
      o.rate = std::stod(value);
    else if (flag == "--duration")
      o.duration = std::stod(value);
    else if (flag == "--connections")
      o.connections = std::stoi(value);
    else if (flag == "--prefix")
      o.prefix = value;
    else if (flag == "--out")
      o.out = value;
    else
      usage(("unknown option " + flag).c_str());
  }
  if (o.urls.empty() || o.secret.empty() || o.repository.empty() || o.sha.empty() || o.out.empty())
    usage("--url, --secret, --repository, --sha and --out are required");
  if (o.rate <= 0 || o.duration <= 0 || o.connections <= 0)
    usage("rate, duration, connections > 0");
  return o;
}

std::int64_t percentile(std::vector<std::int64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  auto index = static_cast<std::size_t>(p / 100.0 * static_cast<double>(values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int total = static_cast<int>(o.rate * o.duration + 0.5);
  std::vector<Result> results(static_cast<std::size_t>(total));
  std::atomic<int> next{0};
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now() + std::chrono::milliseconds(100);
  const auto interval = std::chrono::duration<double>(1.0 / o.rate);

  auto worker = [&](std::size_t k) {
    std::vector<std::unique_ptr<httplib::Client>> clients;
    for (const auto& url : o.urls) {
      clients.push_back(std::make_unique<httplib::Client>(url));
      clients.back()->set_keep_alive(true);
      clients.back()->set_connection_timeout(10);
      clients.back()->set_read_timeout(60);
    }
    std::size_t current = k % clients.size();
    while (true) {
      const int i = next.fetch_add(1);
      if (i >= total) return;
      const auto due =
          start + std::chrono::duration_cast<Clock::duration>(interval * static_cast<double>(i));
      std::this_thread::sleep_until(due);
      Result& r = results[static_cast<std::size_t>(i)];
      r.n = i;
      r.delivery = fmt::format("{}-{}", o.prefix, i);
      nlohmann::json payload = {{"ref", o.ref},
                                {"before", std::string(40, '0')},
                                {"after", o.sha},
                                {"repository", {{"full_name", o.repository}}},
                                {"sender", {{"login", "webhook-load"}}},
                                {"kiln_load", {{"n", i}, {"delivery", r.delivery}}}};
      const std::string body = payload.dump();
      httplib::Headers headers = {
          {"X-GitHub-Event", "push"},
          {"X-GitHub-Delivery", r.delivery},
          {"X-Hub-Signature-256", "sha256=" + kiln::server::hmac_sha256_hex(o.secret, body)}};
      const auto sent = Clock::now();
      r.late_us = std::chrono::duration_cast<std::chrono::microseconds>(sent - due).count();
      r.sent_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
      // Each replica once, then each once more after a pause (a replica restarting).
      const std::size_t tries = 2 * clients.size();
      for (std::size_t t = 0; t < tries; ++t) {
        if (t == clients.size()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
        ++r.attempts;
        auto response =
            clients[current]->Post("/webhooks/github", headers, body, "application/json");
        r.status = response ? response->status : -1;
        if (response && response->status < 500) {
          auto answer = nlohmann::json::parse(response->body, nullptr, false);
          if (answer.is_object() && answer.contains("trigger") &&
              answer["trigger"].is_number_integer())
            r.trigger = answer["trigger"].get<std::int64_t>();
          break;
        }
        current = (current + 1) % clients.size();
      }
      r.http_us =
          std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - sent).count();
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < o.connections; ++i) threads.emplace_back(worker, static_cast<std::size_t>(i));
  for (auto& thread : threads) thread.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  std::ofstream out(o.out, std::ios::trunc);
  std::map<int, int> by_status;
  std::vector<std::int64_t> http_us, late_us;
  int failed_over = 0;
  for (const auto& r : results) {
    ++by_status[r.status];
    if (r.attempts > 1) ++failed_over;
    http_us.push_back(r.http_us);
    late_us.push_back(r.late_us);
    out << nlohmann::json{{"delivery", r.delivery}, {"n", r.n},
                          {"sent_ms", r.sent_ms},   {"status", r.status},
                          {"trigger", r.trigger},   {"attempts", r.attempts},
                          {"http_us", r.http_us},   {"late_us", r.late_us}}
               .dump()
        << "\n";
  }
  std::string statuses;
  for (const auto& [status, count] : by_status) statuses += fmt::format(" {}:{}", status, count);
  fmt::print(
      stderr,
      "webhook_load: {} deliveries in {:.2f} s ({:.1f}/s, asked {}/s); HTTP status{}; "
      "{} sent again to another replica; answer p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms; "
      "sent late p99 {:.2f} ms\n",
      total, elapsed, total / elapsed, o.rate, statuses, failed_over,
      percentile(http_us, 50) / 1000.0, percentile(http_us, 99) / 1000.0,
      percentile(http_us, 100) / 1000.0, percentile(late_us, 99) / 1000.0);
  for (const auto& [status, count] : by_status)
    if (status != 202 && status != 200) return 1;
  return 0;
}
