// hipcheck throughput on a generated corpus of a million lines (1000 files of 1000 lines),
// assembled from snippets of a CUDA project: kernels with warp operations, host code with
// runtime and library calls, comments, strings, macros, and plain C++. Two mixes: "typical"
// (about one finding per 12 lines, most of the code plain C++) and "dense" (about one finding
// per 3 lines, nearly every snippet CUDA). Reports bytes/s and lines/s, on one thread and in
// parallel.
//
//   cmake --build build --target hipcheck_bench && ./build/bench/hipcheck_bench
// Results: docs/performance.md, section "hipcheck".
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kiln/hipcheck/hipcheck.h"
#include "kiln/hipcheck/lexer.h"

namespace {

using Sources = std::vector<std::pair<std::string, std::string>>;

constexpr int k_lines_per_file = 1000;

// 1000 files; KILN_HIPCHECK_BENCH_FILES=N makes a smaller corpus (the same first N files), for
// runs under callgrind, whose instruction counts are repeatable where times are not.
int corpus_files() {
  static const int files = [] {
    const char* env = std::getenv("KILN_HIPCHECK_BENCH_FILES");
    int n = env ? std::atoi(env) : 0;
    return n > 0 ? n : 1000;
  }();
  return files;
}

// One file of `lines` lines, assembled from snippets that look like real CUDA code.
std::string generate_file(std::mt19937& rng, int lines, bool dense) {
  // The first k_cuda_snippets entries use CUDA; the rest are plain C++.
  constexpr std::size_t k_cuda_snippets = 6;
  static const char* const k_snippets[] = {
      "__global__ void reduce_kernel(const float* __restrict__ in, float* out, int n) {\n"
      "  __shared__ float partial[32];\n"
      "  int tid = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  int lane = threadIdx.x & 31;\n"
      "  int warp = threadIdx.x >> 5;\n"
      "  float v = tid < n ? in[tid] : 0.0f;\n"
      "  for (int offset = 16; offset > 0; offset /= 2) {\n"
      "    v += __shfl_down_sync(0xffffffff, v, offset);\n"
      "  }\n"
      "  if (lane == 0) partial[warp] = v;\n"
      "  __syncthreads();\n"
      "}\n",
      "static void check(cudaError_t status, const char* what) {\n"
      "  if (status != cudaSuccess) {\n"
      "    std::fprintf(stderr, \"%s failed: %s\\n\", what, cudaGetErrorString(status));\n"
      "    std::exit(1);\n"
      "  }\n"
      "}\n",
      "void upload(const std::vector<float>& host, float** device, cudaStream_t stream) {\n"
      "  size_t bytes = host.size() * sizeof(float);\n"
      "  check(cudaMallocAsync(reinterpret_cast<void**>(device), bytes, stream), \"alloc\");\n"
      "  check(cudaMemcpyAsync(*device, host.data(), bytes, cudaMemcpyHostToDevice, stream),\n"
      "        \"copy\");\n"
      "}\n",
      "  reduce_kernel<<<blocks, threads, 0, stream>>>(input, output, count);\n",
      "  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_T, m, n, k, &alpha, a, lda, b, ldb, &beta, c, "
      "ldc);\n",
      "  CUDA_CHECK(cudaStreamSynchronize(stream));\n",
      // plain C++ from here
      "template <typename T, int BlockSize>\n"
      "struct Tile {\n"
      "  T values[BlockSize];\n"
      "  int count = 0;\n"
      "  void push(const T& v) { values[count++] = v; }\n"
      "};\n",
      "  for (int i = 0; i < rows; ++i) {\n"
      "    double acc = 0.0;\n"
      "    for (int j = 0; j < cols; ++j) acc += matrix[i * cols + j] * vector[j];\n"
      "    result[i] = static_cast<float>(acc);\n"
      "  }\n",
      "// Computes the partial sums of one block; see the design notes for the layout.\n",
      "/* The reduction uses shuffles within a warp and shared memory across warps,\n"
      "   so that only one atomic per block reaches global memory. */\n",
      "  const std::string label = \"cudaMemcpy of the input tensor (cudaFree later)\";\n",
      "#define CUDA_CHECK(call) check((call), #call)\n",
      "class Registry {\n"
      " public:\n"
      "  explicit Registry(std::size_t capacity) : slots_(capacity) {}\n"
      "  bool insert(std::string key, int value) {\n"
      "    auto [it, inserted] = index_.emplace(std::move(key), slots_.size());\n"
      "    if (inserted) slots_.push_back(value);\n"
      "    return inserted;\n"
      "  }\n"
      " private:\n"
      "  std::vector<int> slots_;\n"
      "  std::unordered_map<std::string, std::size_t> index_;\n"
      "};\n",
      "static std::string join(const std::vector<std::string>& parts, char separator) {\n"
      "  std::string out;\n"
      "  for (std::size_t i = 0; i < parts.size(); ++i) {\n"
      "    if (i > 0) out += separator;\n"
      "    out += parts[i];\n"
      "  }\n"
      "  return out;\n"
      "}\n",
      "  auto it = std::find_if(items.begin(), items.end(), [&](const Item& item) {\n"
      "    return item.name == wanted && item.version >= minimum_version;\n"
      "  });\n",
      "\n",
      "  int total = 1'000'000; char sep = ','; // plain host code\n",
  };
  std::string out;
  int emitted = 0;
  while (emitted < lines) {
    // Dense: CUDA snippets only. Typical: one snippet in six is CUDA.
    std::size_t pick = dense ? rng() % k_cuda_snippets
                       : rng() % 6 == 0
                           ? rng() % k_cuda_snippets
                           : k_cuda_snippets + rng() % (std::size(k_snippets) - k_cuda_snippets);
    const char* s = k_snippets[pick];
    int n = 0;
    for (const char* p = s; *p; ++p) n += *p == '\n';
    if (emitted + n > lines) {
      out += "int filler_line = 0;\n";
      ++emitted;
      continue;
    }
    out += s;
    emitted += n;
  }
  return out;
}

Sources generate_corpus(bool dense) {
  std::mt19937 rng(42);
  Sources s;
  for (int i = 0; i < corpus_files(); ++i)
    s.emplace_back("gen/dir" + std::to_string(i % 20) + "/file" + std::to_string(i) + ".cu",
                   generate_file(rng, k_lines_per_file, dense));
  return s;
}

const Sources& corpus(bool dense = false) {
  static const Sources typical = generate_corpus(false);
  static const Sources dense_corpus = generate_corpus(true);
  return dense ? dense_corpus : typical;
}

std::int64_t corpus_bytes(bool dense = false) {
  std::int64_t bytes = 0;
  for (const auto& [path, text] : corpus(dense)) bytes += static_cast<std::int64_t>(text.size());
  return bytes;
}

void set_counters(benchmark::State& state, unsigned threads, bool dense = false) {
  const double k_lines = double(corpus_files()) * k_lines_per_file;
  state.SetBytesProcessed(state.iterations() * corpus_bytes(dense));
  state.counters["lines/s"] = benchmark::Counter(k_lines * static_cast<double>(state.iterations()),
                                                 benchmark::Counter::kIsRate);
  state.counters["threads"] = threads;
}

// The lexer alone, one thread: the floor under everything else.
void BM_Lex(benchmark::State& state) {
  const Sources& sources = corpus();
  std::vector<kiln::hipcheck::Token> tokens;
  for (auto _ : state) {
    for (const auto& [path, text] : sources) {
      kiln::hipcheck::lex(text, tokens);
      benchmark::DoNotOptimize(tokens.data());
    }
  }
  set_counters(state, 1);
}
BENCHMARK(BM_Lex)->Unit(benchmark::kMillisecond)->UseRealTime();

// The whole scan (lexer, table, rules, macros across files) of in-memory sources.
void BM_Scan(benchmark::State& state) {
  unsigned threads = static_cast<unsigned>(state.range(0));
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const Sources& sources = corpus();  // generated before timing starts
  std::uint64_t findings = 0;
  for (auto _ : state) {
    kiln::hipcheck::Report report = kiln::hipcheck::scan_sources(sources, threads);
    findings = report.summary.references + report.summary.hazards;
    benchmark::DoNotOptimize(findings);
  }
  set_counters(state, threads);
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_Scan)->Arg(1)->Arg(2)->Arg(4)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

// The dense mix: the cost of findings (messages, fingerprints) on top of the scan.
void BM_ScanDense(benchmark::State& state) {
  unsigned threads = static_cast<unsigned>(state.range(0));
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  const Sources& sources = corpus(true);
  std::uint64_t findings = 0;
  for (auto _ : state) {
    kiln::hipcheck::Report report = kiln::hipcheck::scan_sources(sources, threads);
    findings = report.summary.references + report.summary.hazards;
    benchmark::DoNotOptimize(findings);
  }
  set_counters(state, threads, true);
  state.counters["findings"] = static_cast<double>(findings);
}
BENCHMARK(BM_ScanDense)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

// What `kiln hipcheck DIR` does: walk the directory, read the files, scan them.
void BM_RunCheckFromDisk(benchmark::State& state) {
  namespace fs = std::filesystem;
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / "kiln_hipcheck_bench_corpus";
    fs::remove_all(d);
    for (const auto& [path, text] : corpus()) {
      fs::path p = d / path;
      fs::create_directories(p.parent_path());
      std::ofstream(p, std::ios::binary) << text;
    }
    return d;
  }();
  unsigned threads = static_cast<unsigned>(state.range(0));
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  kiln::hipcheck::Options options;
  options.paths = {dir.string()};
  options.jobs = threads;
  for (auto _ : state) {
    auto report = kiln::hipcheck::run_check(options);
    if (!report)
      state.SkipWithError(report.error().to_string().c_str());
    else
      benchmark::DoNotOptimize(report->summary.references);
  }
  set_counters(state, threads);
}
BENCHMARK(BM_RunCheckFromDisk)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
