// Micro-benchmarks of GitHub filter patterns: a realistic on.push.paths list of ten patterns
// against 1000 file paths of a C++/CUDA repository, compiling such a list, a branch filter, and
// one pathological pattern (`**/` thirty times, then `a*`) against deep paths, matching and not
// (a backtracking matcher takes exponential time on the one that does not match).
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "kiln/workflow/glob.h"

namespace {

using kiln::workflow::FilterList;
using kiln::workflow::Glob;

const std::vector<std::string> k_paths_filter = {
    "src/**",   "include/**/*.h", "**/*.cu",  "**/*.cuh", "CMakeLists.txt",
    "cmake/**", "tests/**",       "!**/*.md", "!docs/**", ".github/workflows/*.yml"};

std::vector<std::string> realistic_paths() {
  const char* dirs[] = {"src/kernels",
                        "src/runtime/alloc",
                        "include/kiln/gpu",
                        "tests/unit",
                        "docs/guide",
                        "tools/scripts",
                        "third_party/fmt/include/fmt",
                        "benchmarks",
                        ".github/workflows",
                        "python/kiln/ops"};
  const char* names[] = {"matmul", "softmax",   "layernorm", "allocator", "stream",
                         "README", "CHANGELOG", "conv2d",    "attention", "reduce"};
  const char* exts[] = {".cu", ".cuh", ".cpp", ".h", ".md", ".py", ".yml", ".txt", ".hip", ".json"};
  std::vector<std::string> paths;
  for (int i = 0; i < 1000; ++i)
    paths.push_back(std::string(dirs[i % 10]) + "/" + names[(i / 10) % 10] + "_" +
                    std::to_string(i / 100) + exts[(i * 7) % 10]);
  return paths;
}

void BM_PathsFilter1000Files(benchmark::State& state) {
  auto list = FilterList::compile(k_paths_filter);
  auto paths = realistic_paths();
  for (auto _ : state) {
    int matched = 0;
    for (const std::string& path : paths) matched += list->matches(path) ? 1 : 0;
    benchmark::DoNotOptimize(matched);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(paths.size()));
}
BENCHMARK(BM_PathsFilter1000Files);

void BM_CompilePathsFilter(benchmark::State& state) {
  for (auto _ : state) {
    auto list = FilterList::compile(k_paths_filter);
    benchmark::DoNotOptimize(list);
  }
}
BENCHMARK(BM_CompilePathsFilter);

void BM_BranchFilter(benchmark::State& state) {
  auto list = FilterList::compile({"main", "releases/**", "!releases/**-alpha", "v[12].[0-9]+"});
  const std::vector<std::string> branches = {"main", "releases/2.1", "releases/2.1-alpha",
                                             "feature/gpu-telemetry", "v1.10"};
  for (auto _ : state) {
    int matched = 0;
    for (const std::string& branch : branches) matched += list->matches(branch) ? 1 : 0;
    benchmark::DoNotOptimize(matched);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(branches.size()));
}
BENCHMARK(BM_BranchFilter);

void pathological(benchmark::State& state, const char* last) {
  std::string pattern;
  for (int i = 0; i < 30; ++i) pattern += "**/";
  pattern += "a*";
  auto glob = Glob::compile(pattern);
  std::string path;
  for (int i = 0; i < state.range(0); ++i) path += "d/";
  path += last;
  bool expected = last[0] == 'a';
  for (auto _ : state)
    if (glob->matches(path) != expected) state.SkipWithError("wrong answer");
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(path.size()));
}

void BM_PathologicalNoMatch(benchmark::State& state) { pathological(state, "b"); }
BENCHMARK(BM_PathologicalNoMatch)->Arg(16)->Arg(256);

void BM_PathologicalMatch(benchmark::State& state) { pathological(state, "abc"); }
BENCHMARK(BM_PathologicalMatch)->Arg(16)->Arg(256);

}  // namespace
