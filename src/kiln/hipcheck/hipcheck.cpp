#include "kiln/hipcheck/hipcheck.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <thread>

#include "kiln/hipcheck/api_table.h"

namespace kiln::hipcheck {

std::optional<FailOn> parse_fail_on(std::string_view text) {
  if (text == "none") return FailOn::none;
  if (text == "unsupported") return FailOn::unsupported;
  if (text == "hazard") return FailOn::hazard;
  if (text == "any") return FailOn::any;
  return std::nullopt;
}

std::string_view fail_on_name(FailOn fail_on) {
  switch (fail_on) {
    case FailOn::none:
      return "none";
    case FailOn::unsupported:
      return "unsupported";
    case FailOn::hazard:
      return "hazard";
    case FailOn::any:
      return "any";
  }
  return "any";
}

bool fails_on(const Finding& finding, FailOn fail_on) {
  if (finding.guarded) return false;  // compiled only for CUDA: the HIP build never sees it
  switch (fail_on) {
    case FailOn::none:
      return false;
    case FailOn::unsupported:
      return finding.category == Category::unsupported;
    case FailOn::hazard:
      return finding.category != Category::convertible;
    case FailOn::any:
      return true;
  }
  return true;
}

Summary count(const FileScan& file) {
  Summary s;
  s.files = 1;
  s.lines = file.lines;
  s.code_lines = file.code_lines;
  for (const Finding& f : file.findings) {
    switch (f.category) {
      case Category::convertible:
        ++s.convertible;
        break;
      case Category::unsupported:
        ++s.unsupported;
        break;
      case Category::hazard:
        ++s.hazards;
        break;
    }
    if (f.status == ApiStatus::deprecated) ++s.deprecated;
    if (f.status == ApiStatus::removed) ++s.removed;
    if (f.baselined) ++s.baselined;
    if (f.guarded) ++s.guarded;
  }
  s.references = s.convertible + s.unsupported;
  return s;
}

void summarize(Report& report) {
  std::uint64_t bytes = report.summary.bytes;
  Summary total;
  total.bytes = bytes;
  for (const FileScan& file : report.files) {
    Summary s = count(file);
    total.files += 1;
    total.lines += s.lines;
    total.code_lines += s.code_lines;
    total.references += s.references;
    total.convertible += s.convertible;
    total.unsupported += s.unsupported;
    total.deprecated += s.deprecated;
    total.removed += s.removed;
    total.hazards += s.hazards;
    total.baselined += s.baselined;
    total.guarded += s.guarded;
  }
  report.summary = total;
}

namespace {

// Runs task(i) for i in [0, count) on up to `jobs` threads; each thread keeps its own scratch.
void parallel_for(std::size_t count, unsigned jobs,
                  const std::function<void(std::size_t, std::vector<Token>&)>& task) {
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  jobs = static_cast<unsigned>(std::min<std::size_t>(jobs, count));
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    std::vector<Token> tokens;
    for (std::size_t i; (i = next.fetch_add(1)) < count;) task(i, tokens);
  };
  if (jobs <= 1) {
    worker();
    return;
  }
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < jobs; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
}

// A CUDA macro defined in one file and used in another is reported where it expands: rescan the
// files whose text contains such a macro's name, with the other files' macros in view.
void resolve_macros(const std::vector<std::string_view>& texts, std::vector<FileScan>& files,
                    unsigned jobs, const ScanOptions& options) {
  MacroMap macros;
  for (const FileScan& file : files)
    for (const CudaMacro& m : file.macros) macros.emplace(m.name, m);  // first path wins
  if (macros.empty()) return;
  std::vector<char> wanted(files.size(), 0);
  parallel_for(files.size(), jobs, [&](std::size_t i, std::vector<Token>&) {
    for (const auto& [name, macro] : macros) {
      if (macro.file != files[i].path && texts[i].find(name) != std::string_view::npos) {
        wanted[i] = 1;
        break;
      }
    }
  });
  std::vector<std::size_t> again;
  for (std::size_t i = 0; i < files.size(); ++i)
    if (wanted[i]) again.push_back(i);
  parallel_for(again.size(), jobs, [&](std::size_t k, std::vector<Token>& tokens) {
    std::size_t i = again[k];
    files[i] = scan_source(files[i].path, texts[i], &macros, tokens, options);
  });
}

}  // namespace

Report scan_sources(const std::vector<std::pair<std::string, std::string>>& sources, unsigned jobs,
                    const ScanOptions& options) {
  std::vector<std::size_t> order(sources.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return sources[a].first < sources[b].first; });
  std::vector<std::string> paths;
  paths.reserve(sources.size());
  for (const auto& source : sources) paths.push_back(source.first);
  ProjectFiles project(paths);
  ScanOptions scan = options;
  if (!scan.project) scan.project = &project;
  Report report;
  report.rocm = options.rocm;
  report.files.resize(sources.size());
  std::vector<std::string_view> texts(sources.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    texts[k] = sources[order[k]].second;
    report.summary.bytes += texts[k].size();
  }
  parallel_for(order.size(), jobs, [&](std::size_t k, std::vector<Token>& tokens) {
    report.files[k] = scan_source(sources[order[k]].first, texts[k], nullptr, tokens, scan);
  });
  resolve_macros(texts, report.files, jobs, scan);
  summarize(report);
  return report;
}

namespace {

Result<std::string> read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return make_error(ErrorCode::io_error, "cannot open the file", {path});
  std::string text;
  char buffer[1 << 16];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.append(buffer, n);
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed) return make_error(ErrorCode::io_error, "cannot read the file", {path});
  return text;
}

}  // namespace

Result<Report> run_check(const Options& options) {
  KILN_TRY(std::vector<std::string> paths, find_sources(options.paths, options.extensions));
  std::vector<std::pair<std::string, std::string>> sources(paths.size());
  std::vector<std::optional<Error>> errors(paths.size());
  // Reading is parallel too: on a cold cache the disk, not the lexer, is the limit.
  parallel_for(paths.size(), options.jobs, [&](std::size_t i, std::vector<Token>&) {
    auto text = read_file(paths[i]);
    if (!text)
      errors[i] = text.error();
    else
      sources[i] = {paths[i], std::move(*text)};
  });
  for (auto& e : errors)
    if (e) return std::unexpected(std::move(*e));
  return scan_sources(sources, options.jobs, options.scan);
}

int exit_code(const Report& report, FailOn fail_on) {
  for (const FileScan& file : report.files)
    for (const Finding& f : file.findings)
      if (!f.baselined && fails_on(f, fail_on)) return 1;
  return 0;
}

}  // namespace kiln::hipcheck
