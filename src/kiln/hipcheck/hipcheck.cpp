#include "kiln/hipcheck/hipcheck.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_set>

#include <fmt/format.h>

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
    bool open = !f.baselined && !f.guarded;
    switch (f.category) {
      case Category::convertible:
        ++s.convertible;
        s.open_convertible += open;
        break;
      case Category::unsupported:
        ++s.unsupported;
        s.open_unsupported += open;
        break;
      case Category::hazard:
        ++s.hazards;
        s.open_hazards += open;
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

void add_counts(Summary& total, const Summary& s) {
  total.files += s.files;
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
  total.open_convertible += s.open_convertible;
  total.open_unsupported += s.open_unsupported;
  total.open_hazards += s.open_hazards;
}

void summarize(Report& report) {
  Summary total;
  total.bytes = report.summary.bytes;
  for (const FileScan& file : report.files) add_counts(total, count(file));
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

// The operands of the #include lines of `text` ("x.h" with its quotes, <y.h> with its angle
// brackets). A line scan, not the lexer: it runs over every file before the scan proper.
std::vector<std::string_view> include_operands(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    std::size_t p = at;
    while (p < end && (text[p] == ' ' || text[p] == '\t')) ++p;
    if (p < end && text[p] == '#') {
      ++p;
      while (p < end && (text[p] == ' ' || text[p] == '\t')) ++p;
      std::string_view rest = text.substr(p, end - p);
      for (std::string_view word : {"include_next", "include", "import"}) {
        if (!rest.starts_with(word)) continue;
        rest.remove_prefix(word.size());
        while (!rest.empty() && (rest[0] == ' ' || rest[0] == '\t')) rest.remove_prefix(1);
        if (!rest.empty() && (rest[0] == '"' || rest[0] == '<')) {
          std::size_t close = rest.find(rest[0] == '"' ? '"' : '>', 1);
          if (close != std::string_view::npos) out.push_back(rest.substr(0, close + 1));
        }
        break;
      }
    }
    at = end + 1;
  }
  return out;
}

// What the files a file includes give it: the CUDA macros and shims of every project file it
// reaches through #include (not itself).
struct Context {
  MacroMap macros;
  std::vector<std::string> shims;
};

class IncludeGraph {
 public:
  IncludeGraph(const Project& project, const ProjectFiles& files, unsigned jobs)
      : edges_(project.paths.size()), included_(project.paths.size(), 0) {
    parallel_for(project.paths.size(), jobs, [&](std::size_t i, std::vector<Token>&) {
      for (std::string_view operand : include_operands(project.texts[i])) {
        std::string_view header = operand.substr(1, operand.size() - 2);
        if (auto target = files.find(project.paths[i], header); target && *target != i)
          edges_[i].push_back(*target);
      }
    });
    for (const auto& targets : edges_)
      for (std::size_t t : targets) included_[t] = 1;
  }
  bool included(std::size_t i) const { return included_[i] != 0; }

  // Breadth-first over the includes of file `from`; `exports[k]` is file k's first scan.
  Context context(std::size_t from, const std::vector<FileScan>& exports) const {
    Context c;
    if (edges_[from].empty()) return c;
    std::vector<std::size_t> queue{from};
    std::unordered_set<std::size_t> seen{from};
    for (std::size_t q = 0; q < queue.size(); ++q) {
      for (std::size_t t : edges_[queue[q]]) {
        if (!seen.insert(t).second) continue;
        queue.push_back(t);
        for (const CudaMacro& m : exports[t].macros) c.macros.emplace(m.name, m);  // nearest wins
        c.shims.insert(c.shims.end(), exports[t].shims.begin(), exports[t].shims.end());
      }
    }
    return c;
  }

 private:
  std::vector<std::vector<std::size_t>> edges_;
  std::vector<char> included_;
};

// Hands finished files to the sink in order while workers scan ahead, at most `window` files.
class OrderedQueue {
 public:
  explicit OrderedQueue(std::size_t window) : window_(window) {}
  // A worker about to scan file i waits until it is within the window of the next to emit.
  void wait_turn(std::size_t i) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return i < next_ + window_; });
  }
  void done(std::size_t i, FileScan scan, Summary counts) {
    std::lock_guard lock(mutex_);
    ready_.emplace(i, std::pair(std::move(scan), counts));
    ready_cv_.notify_all();
  }
  // The consumer: the next file in order, waiting for it.
  std::pair<FileScan, Summary> take() {
    std::unique_lock lock(mutex_);
    ready_cv_.wait(lock, [&] { return ready_.contains(next_); });
    auto node = ready_.extract(next_);
    ++next_;
    room_.notify_all();
    return std::move(node.mapped());
  }

 private:
  std::size_t window_;
  std::size_t next_ = 0;
  std::mutex mutex_;
  std::condition_variable room_, ready_cv_;
  std::map<std::size_t, std::pair<FileScan, Summary>> ready_;
};

}  // namespace

Summary scan_project(const Project& project, unsigned jobs, const ScanOptions& options,
                     const FileFilter& filter, const FileSink& sink) {
  std::size_t n = project.paths.size();
  if (jobs == 0) jobs = std::max(1u, std::thread::hardware_concurrency());
  ProjectFiles files(project.paths);
  ScanOptions scan = options;
  if (!scan.project) scan.project = &files;

  // 1. Which project files each file includes; the included ones are scanned first for the CUDA
  //    macros and shims they give their includers (their findings are dropped here).
  IncludeGraph graph(project, files, jobs);
  std::vector<FileScan> exports(n);
  parallel_for(n, jobs, [&](std::size_t i, std::vector<Token>& tokens) {
    if (!graph.included(i)) return;
    FileScan first = scan_source(project.paths[i], project.texts[i], nullptr, tokens, scan);
    exports[i].macros = std::move(first.macros);
    exports[i].shims = std::move(first.shims);
  });

  // 2. Every file with its includes' macros, in order, a window of files at a time.
  Summary total;
  for (const std::string& text : project.texts) total.bytes += text.size();
  OrderedQueue queue(std::max<std::size_t>(8, 4 * jobs));
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    std::vector<Token> tokens;
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      queue.wait_turn(i);
      Context context = graph.context(i, exports);
      FileScan result = scan_source(project.paths[i], project.texts[i], &context.macros, tokens,
                                    scan, &context.shims);
      if (filter) filter(result);
      Summary counts = count(result);
      queue.done(i, std::move(result), counts);
    }
  };
  unsigned threads =
      static_cast<unsigned>(std::min<std::size_t>(jobs, std::max<std::size_t>(n, 1)));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::size_t i = 0; i < n; ++i) {
    auto [file, counts] = queue.take();
    add_counts(total, counts);
    sink(file, counts);
  }
  for (std::thread& t : pool) t.join();
  return total;
}

Project make_project(std::vector<std::pair<std::string, std::string>> sources) {
  std::sort(sources.begin(), sources.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  Project project;
  for (auto& [path, text] : sources) {
    project.paths.push_back(std::move(path));
    project.texts.push_back(std::move(text));
  }
  return project;
}

namespace {

Report collect(const Project& project, unsigned jobs, const ScanOptions& options) {
  Report report;
  report.rocm = options.rocm;
  report.summary =
      scan_project(project, jobs, options, nullptr,
                   [&](const FileScan& file, const Summary&) { report.files.push_back(file); });
  return report;
}

// A binary file (a NUL byte in its first 8000 bytes, as git decides) is not source code.
bool looks_binary(std::string_view text) {
  return text.substr(0, 8000).find('\0') != std::string_view::npos;
}

// Read straight into the string, sized from fstat once (a file that grows or shrinks meanwhile
// is still read to its end): no bounce buffer and no regrowth, which showed in the profile of a
// large tree.
Result<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::io_error, "cannot open the file", {path});
  struct stat st{};
  std::size_t expected = ::fstat(fd, &st) == 0 && st.st_size > 0
                             ? static_cast<std::size_t>(st.st_size)
                             : std::size_t{0};
  std::string text;
  text.resize(expected + 1);  // one byte more, to see the end without a second call
  std::size_t size = 0;
  bool failed = false;
  for (;;) {
    if (size == text.size()) text.resize(text.size() * 2 + (1 << 16));
    ssize_t n = ::read(fd, text.data() + size, text.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) failed = true;
    if (n <= 0) break;
    size += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (failed) return make_error(ErrorCode::io_error, "cannot read the file", {path});
  text.resize(size);
  return text;
}

}  // namespace

Report scan_sources(const std::vector<std::pair<std::string, std::string>>& sources, unsigned jobs,
                    const ScanOptions& options) {
  return collect(make_project(sources), jobs, options);
}

Result<Project> read_project(const Options& options) {
  Project project;
  KILN_TRY(project.paths, find_sources(options.paths, options.extensions, &project.warnings));
  std::size_t n = project.paths.size();
  project.texts.resize(n);
  std::vector<std::optional<Error>> errors(n);
  std::vector<char> binary(n, 0);
  // Reading is parallel too: on a cold cache the disk, not the lexer, is the limit.
  parallel_for(n, options.jobs, [&](std::size_t i, std::vector<Token>&) {
    auto text = read_file(project.paths[i]);
    if (!text)
      errors[i] = text.error();
    else if (looks_binary(*text))
      binary[i] = 1;
    else
      project.texts[i] = std::move(*text);
  });
  for (auto& e : errors)
    if (e) return std::unexpected(std::move(*e));
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (binary[i]) {
      project.warnings.push_back(
          fmt::format("{}: warning: a binary file (it has NUL bytes); skipped", project.paths[i]));
      continue;
    }
    if (kept != i) {  // a self-move would empty the string
      project.paths[kept] = std::move(project.paths[i]);
      project.texts[kept] = std::move(project.texts[i]);
    }
    ++kept;
  }
  project.paths.resize(kept);
  project.texts.resize(kept);
  return project;
}

Result<Report> run_check(const Options& options) {
  KILN_TRY(Project project, read_project(options));
  return collect(project, options.jobs, options.scan);
}

int exit_code(const Summary& s, FailOn fail_on) {
  switch (fail_on) {
    case FailOn::none:
      return 0;
    case FailOn::unsupported:
      return s.open_unsupported ? 1 : 0;
    case FailOn::hazard:
      return s.open_unsupported + s.open_hazards ? 1 : 0;
    case FailOn::any:
      return s.open_unsupported + s.open_hazards + s.open_convertible ? 1 : 0;
  }
  return 0;
}

int exit_code(const Report& report, FailOn fail_on) { return exit_code(report.summary, fail_on); }

}  // namespace kiln::hipcheck
