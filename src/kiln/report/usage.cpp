#include "kiln/report/usage.h"

#include <algorithm>
#include <cctype>
#include <ctime>
#include <optional>

#include <fmt/core.h>

namespace kiln::report {
namespace {

std::string lower(std::string text) {
  for (auto& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::optional<double> price_of(const std::map<std::string, double>& prices,
                               const std::string& model) {
  const std::string name = lower(model);
  std::optional<double> price;
  std::size_t best = 0;
  for (const auto& [key, value] : prices) {
    if (key.size() > best && name.find(lower(key)) != std::string::npos) {
      best = key.size();
      price = value;
    }
  }
  return price;
}

std::string branch_of(const std::string& ref) {
  if (ref.starts_with("refs/heads/")) return ref.substr(11);
  if (ref.starts_with("refs/pull/")) {  // refs/pull/7/head -> pull/7
    auto rest = ref.substr(5);
    if (auto slash = rest.find('/', 5); slash != std::string::npos) rest.resize(slash);
    return rest;
  }
  if (ref.starts_with("refs/tags/")) return "tag " + ref.substr(10);
  return ref.empty() ? "(none)" : ref;
}

std::string day_of(store::TimeMs ms) {
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", &tm);
  return text;
}

double number(const nlohmann::json& object, const char* key) {
  return object.is_object() && object.contains(key) && object[key].is_number()
             ? object[key].get<double>()
             : 0.0;
}

// A share of a job's GPU time added to a row.
void add(UsageRow& row, double held_hours, double watched_hours, double busy_hours, bool sampled,
         double energy_kwh, std::optional<double> price) {
  row.gpu_hours_held += held_hours;
  if (sampled) {
    row.gpu_hours_busy += busy_hours;
    row.sampled_hours += watched_hours;
    row.energy_kwh += energy_kwh;
  }
  if (price)
    row.cost += held_hours * *price;
  else
    row.unpriced_hours += held_hours;
}

}  // namespace

Result<UsageBy> parse_usage_by(std::string_view text) {
  if (text == "repo" || text == "repository") return UsageBy::repository;
  if (text == "branch") return UsageBy::branch;
  if (text == "workflow") return UsageBy::workflow;
  if (text == "label") return UsageBy::label;
  if (text == "model") return UsageBy::model;
  if (text == "day") return UsageBy::day;
  return fail(ErrorCode::invalid_input,
              "--by: expected repo, branch, workflow, label, model or day, got '{}'", text);
}

std::string_view to_string(UsageBy by) {
  switch (by) {
    case UsageBy::repository:
      return "repo";
    case UsageBy::branch:
      return "branch";
    case UsageBy::workflow:
      return "workflow";
    case UsageBy::label:
      return "label";
    case UsageBy::model:
      return "model";
    case UsageBy::day:
      return "day";
  }
  return "repo";
}

Result<Usage> usage(store::Store& store, const UsageQuery& query) {
  std::map<std::string, UsageRow> rows;
  Usage out;
  store::RunQuery runs_query;
  runs_query.limit = 500;
  for (;;) {  // newest first, a page at a time, until the runs are older than `since`
    KILN_TRY(auto runs, store.list_runs(runs_query));
    bool older = false;
    for (const auto& run : runs) {
      if (run.created_at && run.created_at < query.since && run.finished_at &&
          run.finished_at < query.since) {
        older = true;
        continue;
      }
      KILN_TRY(auto jobs, store.list_jobs(run.id));
      for (const auto& job : jobs) {
        if (job.started_at == 0 || job.started_at < query.since) continue;
        if (job.extra.is_object() && job.extra.contains("reused_from")) continue;
        const store::TimeMs end = job.finished_at ? job.finished_at : job.started_at;
        const double hours = static_cast<double>(end - job.started_at) / 3'600'000.0;
        // The granted GPUs' models; the sampler's totals when it ran.
        std::vector<std::string> models;
        if (job.extra.is_object() && job.extra.contains("gpus") && job.extra["gpus"].is_array())
          for (const auto& gpu : job.extra["gpus"])
            models.push_back(gpu.is_object() && gpu.contains("model") && gpu["model"].is_string()
                                 ? gpu["model"].get<std::string>()
                                 : std::string("(unknown)"));
        const nlohmann::json summary =
            job.extra.is_object() && job.extra.contains("gpu") ? job.extra["gpu"] : nullptr;
        // Held: the job's GPUs for the job's whole time (the lease). Busy out of the time the
        // sampler watched them, when it did.
        const bool sampled = summary.is_object() && number(summary, "gpu_seconds_held") > 0;
        const double held = hours * static_cast<double>(models.size());
        const double watched = sampled ? number(summary, "gpu_seconds_held") / 3600.0 : 0.0;
        const double busy = sampled ? number(summary, "gpu_seconds_busy") / 3600.0 : 0.0;
        const double energy = sampled ? number(summary, "energy_wh") / 1000.0 : 0.0;

        std::vector<std::string> keys;
        switch (query.by) {
          case UsageBy::repository:
            keys = {run.repository};
            break;
          case UsageBy::branch:
            keys = {branch_of(run.ref)};
            break;
          case UsageBy::workflow:
            keys = {run.workflow_name.empty() ? run.workflow_path : run.workflow_name};
            break;
          case UsageBy::label:
            if (job.labels.is_array())
              for (const auto& label : job.labels)
                if (label.is_string()) keys.push_back(label.get<std::string>());
            if (keys.empty()) keys = {"(none)"};
            break;
          case UsageBy::model:
            keys = models.empty() ? std::vector<std::string>{"(no GPU)"} : models;
            std::ranges::sort(keys);
            keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
            break;
          case UsageBy::day:
            keys = {day_of(job.started_at)};
            break;
        }
        const double n = models.empty() ? 1.0 : static_cast<double>(models.size());
        // Each GPU's share of the job at its model's price; a row by model takes its GPUs only.
        auto account = [&](UsageRow& row, const std::string* only_model) {
          ++row.jobs;
          if (!models.empty()) ++row.gpu_jobs;
          for (const auto& model : models)
            if (!only_model || model == *only_model)
              add(row, held / n, watched / n, busy / n, sampled, energy / n,
                  price_of(query.prices, model));
        };
        for (const auto& key : keys) {
          UsageRow& row = rows[key];
          row.key = key;
          account(row, query.by == UsageBy::model ? &key : nullptr);
        }
        account(out.total, nullptr);
      }
    }
    if (older || runs.size() < static_cast<std::size_t>(runs_query.limit) || runs.empty()) break;
    runs_query.before_id = runs.back().id;
  }
  for (auto& [key, row] : rows) out.rows.push_back(std::move(row));
  std::ranges::sort(out.rows, [](const UsageRow& a, const UsageRow& b) {
    return a.gpu_hours_held != b.gpu_hours_held ? a.gpu_hours_held > b.gpu_hours_held
                                                : a.key < b.key;
  });
  out.total.key = "total";
  return out;
}

nlohmann::ordered_json to_json(const Usage& usage, const UsageQuery& query) {
  auto row_json = [](const UsageRow& row) {
    nlohmann::ordered_json out = {
        {"key", row.key},
        {"jobs", row.jobs},
        {"gpu_jobs", row.gpu_jobs},
        {"gpu_hours_held", row.gpu_hours_held},
        {"gpu_hours_busy", row.sampled_hours > 0 ? nlohmann::ordered_json(row.gpu_hours_busy)
                                                 : nlohmann::ordered_json(nullptr)},
        {"sampled_gpu_hours", row.sampled_hours},
        {"energy_kwh", row.energy_kwh},
        {"cost", row.cost},
        {"unpriced_gpu_hours", row.unpriced_hours}};
    return out;
  };
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : usage.rows) rows.push_back(row_json(row));
  nlohmann::ordered_json prices = nlohmann::ordered_json::object();
  for (const auto& [model, price] : query.prices) prices[model] = price;
  return {{"since", query.since},
          {"by", to_string(query.by)},
          {"prices", prices},
          {"rows", rows},
          {"total", row_json(usage.total)}};
}

std::string format_usage(const Usage& usage, const UsageQuery& query) {
  if (usage.total.jobs == 0) return "no jobs in this period\n";
  std::size_t width = 5;
  for (const auto& row : usage.rows)
    width = std::max(width, std::min<std::size_t>(row.key.size(), 40));
  std::string heading(to_string(query.by));
  for (auto& c : heading) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string out =
      fmt::format("{:<{}}  {:>6}  {:>8}  {:>10}  {:>10}  {:>6}  {:>8}  {:>10}\n", heading, width,
                  "JOBS", "GPU JOBS", "GPU-H HELD", "GPU-H BUSY", "BUSY", "kWh", "COST");
  auto line = [&](const UsageRow& row) {
    std::string busy = row.sampled_hours > 0 ? fmt::format("{:.2f}", row.gpu_hours_busy) : "-";
    std::string share = row.sampled_hours > 0
                            ? fmt::format("{:.0f}%", 100.0 * row.gpu_hours_busy / row.sampled_hours)
                            : "-";
    std::string energy = row.energy_kwh > 0 ? fmt::format("{:.2f}", row.energy_kwh) : "-";
    std::string cost = row.gpu_hours_held == 0                   ? "-"
                       : row.cost > 0 || row.unpriced_hours == 0 ? fmt::format("{:.2f}", row.cost)
                                                                 : "no price";
    if (row.cost > 0 && row.unpriced_hours > 0) cost += "+";
    out += fmt::format("{:<{}}  {:>6}  {:>8}  {:>10.2f}  {:>10}  {:>6}  {:>8}  {:>10}\n",
                       row.key.substr(0, 40), width, row.jobs, row.gpu_jobs, row.gpu_hours_held,
                       busy, share, energy, cost);
  };
  for (const auto& row : usage.rows) line(row);
  line(usage.total);
  if (usage.total.unpriced_hours > 0)
    out += fmt::format(
        "{:.2f} GPU-hours on models without a price (gpus.cost_per_hour in kiln.yml); "
        "\"+\": the cost leaves them out\n",
        usage.total.unpriced_hours);
  return out;
}

}  // namespace kiln::report
