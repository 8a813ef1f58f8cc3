#include "kiln/hipcheck/rocm.h"

#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kiln/hipcheck/api_table.h"
#include "kiln/hipcheck/scanner.h"

namespace kiln::hipcheck {
namespace {

TEST(Rocm, ParsesVersions) {
  EXPECT_EQ(parse_rocm_version("6.2"), (RocmVersion{6, 2}));
  EXPECT_EQ(parse_rocm_version("6.2.0"), (RocmVersion{6, 2}));
  EXPECT_EQ(parse_rocm_version("10.11"), (RocmVersion{10, 11}));
  for (const char* bad : {"", "6", "6.", ".2", "6.x", "-6.2", "6.2.", "6.2.0.1", "6.2 ", "+6.2"})
    EXPECT_FALSE(parse_rocm_version(bad)) << bad;
  EXPECT_LT((RocmVersion{5, 7}), (RocmVersion{6, 0}));
  EXPECT_EQ((RocmVersion{6, 2}).to_string(), "6.2");
}

TEST(Rocm, NewestKnownIsTheNewestVersionInTheTables) {
  // HIPIFY's October 2024 tables name HIP 6.3.0 for a few rows (cudaGraphExecGetFlags).
  EXPECT_EQ(newest_known_rocm(), (RocmVersion{6, 3}));
  EXPECT_TRUE(choose_rocm_version("6.3").version);
  EXPECT_TRUE(choose_rocm_version("5.7").version);
  auto newer = choose_rocm_version("7.0");
  EXPECT_FALSE(newer.version);
  EXPECT_NE(newer.error.find("newer than Kiln knows"), std::string::npos) << newer.error;
  auto bad = choose_rocm_version("six");
  EXPECT_FALSE(bad.version);
  EXPECT_EQ(bad.error, "'six' is not a ROCm version (expected X.Y, e.g. 6.2)");
}

// Every row of Kiln's table is reviewed: it cites where it comes from, names one CUDA name
// once, and changes what HIPIFY's tables say (otherwise it would not be needed).
TEST(Rocm, KilnRowsCiteTheirSourceAndChangeTheTables) {
  std::set<std::string> seen;
  for (const ApiEntry& e : ApiTable::kiln().entries()) {
    EXPECT_TRUE(e.source && *e.source) << e.cuda_name;
    EXPECT_TRUE(seen.insert(e.cuda_name).second) << "twice: " << e.cuda_name;
    EXPECT_EQ(ApiTable::kiln().lookup(e.cuda_name), &e);
    if (*e.hip_added) {
      EXPECT_TRUE(parse_rocm_version(e.hip_added)) << e.cuda_name;
    }
    if (const ApiEntry* hipify = ApiTable::instance().lookup(e.cuda_name)) {
      EXPECT_STRNE(hipify->hip_name, e.hip_name) << e.cuda_name << " says what HIPIFY says";
    }
  }
  EXPECT_GT(seen.size(), 60u);
}

std::vector<std::string> judged(std::string_view source, RocmVersion rocm) {
  ScanOptions options;
  options.rocm = rocm;
  std::vector<std::string> out;
  for (const Finding& f : scan_source("k.cu", source, nullptr, options).findings)
    if (f.rule == Rule::cuda_api)
      out.push_back(fmt::format("{} {} {}", f.name, category_name(f.category), f.message()));
  return out;
}

TEST(Rocm, SupportIsJudgedForTheChosenRelease) {
  std::string_view shfl = "__device__ float f(float v) { return __shfl_xor_sync(m, v, 1); }\n";
  EXPECT_TRUE(judged(shfl, {6, 2}).empty());  // the same name in ROCm 6.2: not residual CUDA
  EXPECT_EQ(judged(shfl, {6, 1}),
            std::vector<std::string>{"__shfl_xor_sync unsupported __shfl_xor_sync (CUDA device "
                                     "functions) -> __shfl_xor_sync needs ROCm 6.2"});

  std::string_view bf16 = "__device__ float g(__nv_bfloat16 b) { return __bfloat162float(b); }\n";
  EXPECT_EQ(
      judged(bf16, {6, 0}),
      std::vector<std::string>{
          "__nv_bfloat16 convertible __nv_bfloat16 (CUDA device functions) -> __hip_bfloat16"});
  EXPECT_EQ(judged(bf16, {5, 6}).size(), 2u);
  EXPECT_EQ(judged(bf16, {5, 6})[1],
            "__bfloat162float unsupported __bfloat162float (CUDA device functions) -> "
            "__bfloat162float needs ROCm 5.7");

  // HIPIFY's own version column counts too.
  std::string_view graph = "void h() { cudaGraphExecGetFlags(e, &f); }\n";
  EXPECT_EQ(
      judged(graph, {6, 3}),
      std::vector<std::string>{"cudaGraphExecGetFlags convertible cudaGraphExecGetFlags "
                               "(CUDA Runtime) -> hipGraphExecGetFlags; hipGraphExecGetFlags is "
                               "experimental in HIP"});
  EXPECT_EQ(judged(graph, {6, 2}),
            std::vector<std::string>{"cudaGraphExecGetFlags unsupported cudaGraphExecGetFlags "
                                     "(CUDA Runtime) -> hipGraphExecGetFlags needs ROCm 6.3; "
                                     "hipGraphExecGetFlags is experimental in HIP"});
  // No HIP name at all: unsupported whatever the release.
  EXPECT_EQ(judged("void h() { cudaDeviceFlushGPUDirectRDMAWrites(t, s); }\n", {6, 3}).size(), 1u);
}

}  // namespace
}  // namespace kiln::hipcheck
