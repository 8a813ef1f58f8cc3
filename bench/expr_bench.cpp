// Micro-benchmarks of the expression language: parsing, evaluating a parsed condition, and
// interpolating templates, against contexts shaped like a real push event.
#include <benchmark/benchmark.h>

#include <string>

#include "kiln/workflow/expr/expr.h"

namespace {

using kiln::expr::Context;
using kiln::expr::Expression;
using kiln::expr::Value;

constexpr std::string_view k_condition =
    "github.event_name == 'push' && contains(github.ref, 'main')";

Context push_context() {
  Context context;
  Value commits = Value::array();
  for (int i = 0; i < 20; ++i)
    commits.push_back({{"id", "c" + std::to_string(i)},
                       {"message", "commit message " + std::to_string(i)},
                       {"author", {{"name", "Ann"}, {"email", "ann@example.com"}}}});
  Value github = {{"event_name", "push"},      {"ref", "refs/heads/main"},
                  {"sha", "0123456789abcdef"}, {"repository", "octo/kiln"},
                  {"run_number", 42},          {"actor", "ann"}};
  github["event"] = {{"commits", commits}, {"forced", false}, {"ref", "refs/heads/main"}};
  for (int i = 0; i < 30; ++i) github["extra_" + std::to_string(i)] = i;
  context.contexts["github"] = github;
  context.contexts["env"] = {{"CUDA_VERSION", "12.4"}, {"BUILD_TYPE", "Release"}};
  context.contexts["matrix"] = {{"os", "ubuntu-22.04"}, {"gpus", 2}};
  return context;
}

void BM_Parse(benchmark::State& state) {
  for (auto _ : state) {
    auto parsed = Expression::parse(k_condition);
    benchmark::DoNotOptimize(parsed);
  }
}
BENCHMARK(BM_Parse);

void BM_EvaluateParsedCondition(benchmark::State& state) {
  Context context = push_context();
  auto parsed = Expression::parse(k_condition);
  for (auto _ : state) {
    auto result = parsed->evaluate_truthy(context);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_EvaluateParsedCondition);

void BM_EvaluateCondition(benchmark::State& state) {  // parse + evaluate, as `if:` does
  Context context = push_context();
  for (auto _ : state) {
    auto result = kiln::expr::evaluate_condition(k_condition, context);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_EvaluateCondition);

void BM_EvaluateTemplate(benchmark::State& state) {
  Context context = push_context();
  std::string text = "${{ github.event_name == 'push' && contains(github.ref, 'main') }}";
  for (auto _ : state) {
    auto result = kiln::expr::evaluate_template(text, context);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_EvaluateTemplate);

void BM_InterpolateTwoExpressions(benchmark::State& state) {
  Context context = push_context();
  std::string text =
      "build ${{ github.repository }} at ${{ github.sha }} with CUDA "
      "${{ env.CUDA_VERSION }} on ${{ matrix.os }}";
  for (auto _ : state) {
    auto result = kiln::expr::interpolate(text, context);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_InterpolateTwoExpressions);

void BM_ParsedTemplateText(benchmark::State& state) {
  Context context = push_context();
  auto parsed = kiln::expr::Template::parse(
      "build ${{ github.repository }} at ${{ github.sha }} with CUDA "
      "${{ env.CUDA_VERSION }} on ${{ matrix.os }}");
  for (auto _ : state) {
    auto result = parsed->evaluate_text(context);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_ParsedTemplateText);

void BM_ObjectFilter(benchmark::State& state) {
  Context context = push_context();
  auto parsed = Expression::parse("contains(github.event.commits.*.author.name, 'ann')");
  for (auto _ : state) {
    auto result = parsed->evaluate_truthy(context);
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_ObjectFilter);

// Parsing cost against length: should grow linearly.
void BM_ParseConjunction(benchmark::State& state) {
  std::string text = "github.ref == 'x'";
  for (int64_t i = 1; i < state.range(0); ++i) text += " && github.ref == 'x'";
  for (auto _ : state) {
    auto parsed = Expression::parse(text);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_ParseConjunction)->RangeMultiplier(8)->Range(8, 2048)->Complexity();

}  // namespace
