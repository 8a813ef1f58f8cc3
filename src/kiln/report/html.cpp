// render_html (report.h): one self-contained page. Styles and charts are inline (SVG drawn
// here); the Content-Security-Policy forbids every fetch, so the page works offline and leaks
// nothing. Every text from the store is escaped.

#include <algorithm>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "kiln/core/time.h"
#include "kiln/report/markdown.h"
#include "kiln/report/report.h"

namespace kiln::report {
namespace {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string esc(const Json& value) { return escape(format_value(value)); }

std::string status_badge(const std::string& status) {
  return fmt::format("<span class=\"badge s-{}\">{}</span>", escape(status), escape(status));
}

constexpr std::string_view k_style = R"css(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:20px}
header .meta{color:#b8c0cc;font-size:13px}
main{padding:8px 28px 40px;max-width:1200px}
section{background:#fff;border:1px solid #dde1e7;border-radius:8px;margin:18px 0;padding:14px 18px}
h2{font-size:16px;margin:0 0 10px}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:5px 8px;border-bottom:1px solid #eceff3;vertical-align:top}
th{font-size:12px;text-transform:uppercase;color:#5b6472}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;background:#e3e7ed}
.s-success,.s-passed{background:#d4f4dd;color:#135c2a}
.s-failure,.s-failed,.s-error{background:#fbd9d9;color:#8a1616}
.s-cancelled,.s-skipped,.s-interrupted{background:#eceff3;color:#5b6472}
.s-running,.s-queued{background:#dbe9ff;color:#123f8a}
.cards{display:flex;gap:12px;flex-wrap:wrap}
.card{border:1px solid #dde1e7;border-radius:8px;padding:8px 14px;min-width:90px}
.card b{display:block;font-size:20px}
pre{background:#f3f4f6;padding:8px;overflow:auto;max-height:320px;font-size:12px;white-space:pre-wrap}
.muted{color:#6b7482}
details summary{cursor:pointer}
svg text{font:11px system-ui,sans-serif;fill:#1d2330}
)css";

// Horizontal bars: the slowest tests.
std::string slowest_chart(const Json& slowest) {
  if (slowest.empty()) return "";
  double max = 0;
  for (const auto& s : slowest) max = std::max(max, s["seconds"].get<double>());
  if (max <= 0) max = 1;
  const int row = 22, label = 420, bar = 560;
  int height = static_cast<int>(slowest.size()) * row + 6;
  std::string svg = fmt::format(
      "<svg class=\"chart\" id=\"slowest-chart\" role=\"img\" aria-label=\"slowest tests\" "
      "width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">",
      label + bar + 90, height, label + bar + 90, height);
  int y = 3;
  for (const auto& s : slowest) {
    double seconds = s["seconds"].get<double>();
    int width = std::max(1, static_cast<int>(std::lround(seconds / max * bar)));
    std::string name = format_value(s["test"]);
    if (name.size() > 64) name = "…" + name.substr(name.size() - 63);
    svg += fmt::format(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>"
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{} › {}: "
        "{:.3f}s</title></rect><text x=\"{}\" y=\"{}\">{:.3f}s</text>",
        label - 6, y + 14, escape(name), label, y + 2, width, row - 6,
        format_value(s["status"]) == "passed" ? "#5b8def" : "#e05b5b", esc(s["job"]),
        esc(s["test"]), seconds, label + width + 4, y + 14, seconds);
    y += row;
  }
  return svg + "</svg>";
}

// A number of a report point; nullopt for a reading the provider did not give (null).
std::optional<double> reading(const Json& point, const char* key) {
  auto it = point.find(key);
  if (it == point.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// Utilization (0–100 %) and memory (0–peak MiB) of one GPU over time: one polyline each
// (class util-line / mem-line), one vertex per sample with that reading. data-points is the
// number of samples, so a test can check the chart against the stored samples.
std::string gpu_chart(const Json& series, const std::string& id) {
  const auto& points = series["points"];
  if (!points.is_array() || points.empty()) return "";
  double t0 = reading(points.front(), "t").value_or(0),
         t1 = reading(points.back(), "t").value_or(0);
  if (t1 <= t0) t1 = t0 + 1;
  double mem_max = 1;
  for (const auto& p : points) mem_max = std::max(mem_max, reading(p, "mem_mib").value_or(0));
  const double w = 560, h = 140, left = 40, top = 10;
  std::string util_line, mem_line;
  for (const auto& p : points) {
    double x = left + (reading(p, "t").value_or(t0) - t0) / (t1 - t0) * w;
    if (auto util = reading(p, "util"))
      util_line +=
          fmt::format("{:.1f},{:.1f} ", x, top + h - std::clamp(*util, 0.0, 100.0) / 100 * h);
    if (auto mem = reading(p, "mem_mib"))
      mem_line += fmt::format("{:.1f},{:.1f} ", x, top + h - *mem / mem_max * h);
  }
  std::string gpu = esc(series.value("gpu", Json("")));
  return fmt::format(
      "<svg class=\"chart gpu-chart\" id=\"{}\" data-gpu=\"{}\" data-points=\"{}\" role=\"img\" "
      "aria-label=\"GPU {} utilization and memory\" width=\"660\" height=\"180\" "
      "viewBox=\"0 0 660 180\">"
      "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafbfc\" stroke=\"#dde1e7\"/>"
      "<text x=\"4\" y=\"{}\">100%</text><text x=\"4\" y=\"{}\">0</text>"
      "<polyline class=\"util-line\" fill=\"none\" stroke=\"#5b8def\" stroke-width=\"1.5\" "
      "points=\"{}\"/>"
      "<polyline class=\"mem-line\" fill=\"none\" stroke=\"#e0a030\" stroke-width=\"1.5\" "
      "points=\"{}\"/>"
      "<text x=\"{}\" y=\"{}\">GPU {} · utilization % (blue) · memory, peak {:.0f} MiB (orange) "
      "· {} samples over {:.1f}s</text></svg>",
      escape(id), gpu, points.size(), gpu, left, top, w, h, top + 10, top + h, util_line, mem_line,
      left, top + h + 22, gpu, mem_max, points.size(), (t1 - t0) / 1000);
}

// A small trend line of a benchmark series; the last point (this run) is marked.
std::string sparkline(const Json& history) {
  if (!history.is_array() || history.size() < 2) return "<span class=\"muted\">-</span>";
  double lo = history[0].get<double>(), hi = lo;
  for (const auto& v : history) {
    lo = std::min(lo, v.get<double>());
    hi = std::max(hi, v.get<double>());
  }
  if (hi <= lo) hi = lo + 1;
  const double w = 120, h = 24;
  std::string points;
  double x = 0, y = 0;
  for (std::size_t i = 0; i < history.size(); ++i) {
    x = static_cast<double>(i) / static_cast<double>(history.size() - 1) * w;
    y = h - 2 - (history[i].get<double>() - lo) / (hi - lo) * (h - 4);
    points += fmt::format("{:.1f},{:.1f} ", x, y);
  }
  return fmt::format(
      "<svg class=\"spark\" width=\"126\" height=\"26\" viewBox=\"-3 0 126 26\"><polyline "
      "fill=\"none\" stroke=\"#5b8def\" stroke-width=\"1.5\" points=\"{}\"/><circle cx=\"{:.1f}\" "
      "cy=\"{:.1f}\" r=\"2.5\" fill=\"#1d2330\"/></svg>",
      points, x, y);
}

std::string jobs_section(const Json& jobs) {
  std::string out =
      "<section id=\"jobs\"><h2>Jobs</h2><table><tr><th>Job</th><th>Status</th><th>Duration</th>"
      "<th>GPUs</th><th>Labels</th><th>Tests</th></tr>";
  for (const auto& job : jobs) {
    std::string status = format_value(job["conclusion"]).empty() ? format_value(job["status"])
                                                                 : format_value(job["conclusion"]);
    std::string gpus;
    for (const auto& g : job["gpus"])
      gpus += fmt::format("{}<span title=\"{}\">{} {}</span>", gpus.empty() ? "" : "<br>",
                          esc(g.value("uuid", Json(""))), esc(g.value("index", Json(""))),
                          esc(g.value("model", Json(""))));
    std::string labels;
    for (const auto& l : job["labels"]) labels += (labels.empty() ? "" : ", ") + esc(l);
    const auto& t = job["tests"];
    std::string tests =
        t["total"].get<int>() == 0
            ? "<span class=\"muted\">-</span>"
            : fmt::format("{} passed, {} failed, {} errors, {} skipped", t["passed"].get<int>(),
                          t["failed"].get<int>(), t["errors"].get<int>(), t["skipped"].get<int>());
    out += fmt::format("<tr class=\"job\"><td><details><summary class=\"job-name\">{}</summary>",
                       esc(job["name"]));
    if (!format_value(job["message"]).empty()) out += fmt::format("<p>{}</p>", esc(job["message"]));
    if (job.contains("failure_class") && job["failure_class"].is_string())
      out += fmt::format("<p class=\"failure-class\">class {}: {}</p>", esc(job["failure_class"]),
                         esc(job["failure_evidence"]));
    out += "<table class=\"steps\">";
    for (const auto& step : job["steps"]) {
      std::string step_status = format_value(step["conclusion"]).empty()
                                    ? format_value(step["status"])
                                    : format_value(step["conclusion"]);
      out += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
                         esc(step["name"]), status_badge(step_status),
                         escape(core::format_duration(
                             std::chrono::milliseconds(step["duration_ms"].get<std::int64_t>()))));
    }
    out += "</table>";
    if (!format_value(job["step_summary"]).empty())
      out += "<div class=\"step-summary\">" + markdown_to_html(format_value(job["step_summary"])) +
             "</div>";
    out += "</details></td>";
    out += fmt::format("<td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                       status_badge(status),
                       escape(core::format_duration(
                           std::chrono::milliseconds(job["duration_ms"].get<std::int64_t>()))),
                       gpus.empty() ? "<span class=\"muted\">-</span>" : gpus, labels, tests);
  }
  return out + "</table></section>";
}

std::string gpu_section(const Json& jobs) {
  std::string out = "<section id=\"gpu\"><h2>GPU utilization and memory</h2>";
  bool any = false;
  int chart = 0;
  for (const auto& job : jobs) {
    bool has_summary = job["gpu_summary"].is_object();
    bool has_samples = !job["gpu_samples"].empty();
    if (!has_summary && !has_samples && job["gpus"].empty()) continue;
    any = true;
    out += fmt::format("<h3>{}</h3>", esc(job["name"]));
    if (has_summary) {
      out += "<table class=\"gpu-summary\">";
      for (const auto& [key, value] : job["gpu_summary"].items())
        out += fmt::format("<tr><th>{}</th><td>{}</td></tr>", escape(key),
                           value.is_primitive() ? esc(value) : escape(value.dump()));
      out += "</table>";
    }
    if (has_samples) {
      for (const auto& series : job["gpu_samples"])
        out += gpu_chart(series, fmt::format("gpu-chart-{}", chart++));
    } else {
      out += "<p class=\"muted\">no GPU samples for this job</p>";
    }
  }
  if (!any) out += "<p class=\"muted\">no GPU samples: no job of this run held a GPU</p>";
  return out + "</section>";
}

std::string tests_section(const Json& tests) {
  std::string out = "<section id=\"tests\"><h2>Tests</h2>";
  if (tests["total"].get<int>() == 0)
    return out +
           "<p class=\"muted\">no test results (JUnit XML) were found for this run</p></section>";
  out += "<div class=\"cards\">";
  for (const char* key : {"total", "passed", "failed", "errors", "skipped", "flaky"})
    out += fmt::format("<div class=\"card\" id=\"tests-{}\"><b>{}</b>{}</div>", key,
                       tests[key].get<int>(), key);
  out += fmt::format("<div class=\"card\"><b>{:.2f}s</b>test time</div></div>",
                     tests["seconds"].get<double>());
  if (!tests["failures"].empty()) {
    out += "<h3>Failures</h3>";
    for (const auto& f : tests["failures"]) {
      out += fmt::format(
          "<details class=\"failure\"><summary>{} <b class=\"test-name\">{}</b> <span "
          "class=\"muted\">({})</span>: {}</summary>",
          status_badge(format_value(f["status"])), esc(f["test"]), esc(f["job"]),
          esc(f["message"]));
      if (!format_value(f["details"]).empty())
        out += fmt::format("<pre>{}</pre>", esc(f["details"]));
      out += "</details>";
    }
  }
  if (!tests["flaky_tests"].empty()) {
    out += "<h3>Flaky (failed in another run of this commit, passed here)</h3><ul>";
    for (const auto& f : tests["flaky_tests"])
      out += fmt::format("<li class=\"flaky\">{} <span class=\"muted\">({})</span></li>",
                         esc(f["test"]), esc(f["job"]));
    out += "</ul>";
  }
  if (tests.contains("quarantined_tests") && !tests["quarantined_tests"].empty()) {
    out += "<h3>Quarantined (still run; their failures alone do not fail a job)</h3><ul>";
    for (const auto& q : tests["quarantined_tests"])
      out +=
          fmt::format("<li class=\"quarantined\">{} <span class=\"muted\">({}: {}){}</span></li>",
                      esc(q["test"]), esc(q["by"]), esc(q["reason"]),
                      q["failed_in"].empty() ? "" : ", failed in this run");
    out += "</ul>";
  }
  out += "<h3>Slowest tests</h3>" + slowest_chart(tests["slowest"]);
  return out + "</section>";
}

std::string benchmarks_section(const Json& benchmarks) {
  std::string out = "<section id=\"benchmarks\"><h2>Benchmarks</h2>";
  if (benchmarks.empty())
    return out + "<p class=\"muted\">no benchmark results in this run</p></section>";
  out +=
      "<table><tr><th>Job</th><th>Benchmark</th><th>Metric</th><th>Value</th><th>Unit</th>"
      "<th>Trend (this branch and testbed)</th></tr>";
  for (const auto& b : benchmarks)
    out += fmt::format(
        "<tr><td>{}</td><td class=\"bench-name\">{}</td><td>{}</td><td class=\"num\">{}</td>"
        "<td>{}</td><td title=\"{}\">{}</td></tr>",
        esc(b["job"]), esc(b["benchmark"]), esc(b["metric"]), esc(b["value"]), esc(b["unit"]),
        esc(b["testbed"]), sparkline(b["history"]));
  return out + "</table></section>";
}

}  // namespace

std::string render_html(const Json& report) {
  const auto& run = report["run"];
  std::string title =
      fmt::format("Kiln run #{}: {}", run["number"].get<std::int64_t>(), format_value(run["name"]));
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; img-src data:\">"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += fmt::format("<title>{}</title><style>{}</style></head><body>", escape(title), k_style);
  out += fmt::format(
      "<header><h1>{} {}</h1><div class=\"meta\">{} · {} · {} · {} · duration {}</div></header>"
      "<main>",
      escape(title), status_badge(format_value(run["status"])), esc(run["workflow"]),
      esc(run["event"]), esc(run["ref"]), escape(format_value(run["sha"]).substr(0, 12)),
      escape(core::format_duration(
          std::chrono::milliseconds(run["duration_ms"].get<std::int64_t>()))));
  out += jobs_section(report["jobs"]);
  out += tests_section(report["tests"]);
  out += gpu_section(report["jobs"]);
  out += benchmarks_section(report["benchmarks"]);
  out +=
      "<footer class=\"muted\">kiln report · self-contained: no scripts, styles or images are "
      "fetched</footer></main></body></html>\n";
  return out;
}

}  // namespace kiln::report
