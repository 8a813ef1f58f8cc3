// Step output throughput: masking a log line, the whole per-line path of StepOutput, and
// reading a child's output through core::Subprocess. Results: docs/performance.md.
#include <benchmark/benchmark.h>

#include <string>

#include "kiln/core/subprocess.h"
#include "kiln/exec/log_sink.h"
#include "kiln/exec/masker.h"
#include "kiln/exec/step_output.h"

namespace {

using namespace kiln;

const std::string k_line =
    "[ 42%] Building CUDA object src/kernels/CMakeFiles/kernels.dir/gemm_sm90.cu.o -arch=sm_90";

void add_secrets(exec::Masker& masker, int count) {
  for (int i = 0; i < count; ++i) masker.add(fmt::format("secret-value-{:04d}-abcdef", i));
}

void BM_MaskLine(benchmark::State& state) {
  exec::Masker masker;
  add_secrets(masker, static_cast<int>(state.range(0)));
  for (auto _ : state) benchmark::DoNotOptimize(masker.mask(k_line));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * k_line.size()));
}
BENCHMARK(BM_MaskLine)->Arg(0)->Arg(10)->Arg(100);

class NullSink : public exec::LogSink {
 public:
  void write(const exec::LogEvent& event) override { benchmark::DoNotOptimize(event.text.data()); }
};

void BM_StepOutputLine(benchmark::State& state) {
  exec::Masker masker;
  add_secrets(masker, 10);
  NullSink sink;
  exec::StepOutput output(sink, masker);
  for (auto _ : state) output.on_line(core::Stream::out, k_line, false);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}
BENCHMARK(BM_StepOutputLine);

// 64 MiB of 100-byte lines from a child, read line by line.
void BM_SubprocessRead(benchmark::State& state) {
  for (auto _ : state) {
    auto child = core::Subprocess::spawn(
        {.argv = {"sh", "-c",
                  "yes 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' | head -c 67108864"}});
    std::size_t lines = 0;
    auto r = child->pump([&](core::Stream, std::string_view, bool) { ++lines; });
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(lines);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 67108864);
}
BENCHMARK(BM_SubprocessRead)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace
