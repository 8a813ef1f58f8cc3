#include "kiln/hipcheck/scanner.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/hipcheck/hipcheck.h"

namespace kiln::hipcheck {
namespace {

// "LINE:COL rule name" for each finding, the compact form the tests compare.
std::vector<std::string> brief(const FileScan& scan) {
  std::vector<std::string> out;
  for (const Finding& f : scan.findings)
    out.push_back(fmt::format("{}:{} {} {}", f.line, f.column, rule_info(f.rule).id, f.name));
  return out;
}
std::vector<std::string> brief(std::string_view path, std::string_view source) {
  return brief(scan_source(path, source));
}
using Strings = std::vector<std::string>;

TEST(Scanner, ClassifiesApiUses) {
  FileScan scan = scan_source(
      "a.cpp", "cudaMalloc(&p, n);\ncudaThreadExit();\ncudaBindTexture(0);\ncuCtxAttach(0);\n");
  ASSERT_EQ(scan.findings.size(), 4u);
  const Finding& malloc = scan.findings[0];
  EXPECT_EQ(malloc.category, Category::convertible);
  EXPECT_EQ(malloc.status, ApiStatus::convertible);
  EXPECT_EQ(malloc.replacement, "hipMalloc");
  EXPECT_EQ(malloc.library, "CUDA Runtime");
  EXPECT_EQ(scan.findings[1].status, ApiStatus::deprecated);
  EXPECT_NE(scan.findings[1].message().find("deprecated in CUDA 10.0"), std::string::npos);
  EXPECT_EQ(scan.findings[2].status, ApiStatus::removed);
  EXPECT_EQ(scan.findings[2].category, Category::convertible);
  EXPECT_NE(scan.findings[2].message().find("hipBindTexture is deprecated in HIP"),
            std::string::npos);
  EXPECT_EQ(scan.findings[3].category, Category::unsupported);
  EXPECT_EQ(scan.findings[3].library, "CUDA Driver");
}

// Names and messages are views into the scan's arena or the tables, built when shown: a copy
// of the FileScan keeps them valid after the original and the source text are gone.
TEST(Scanner, FindingsStayValidInACopyAfterTheSourceIsGone) {
  FileScan copy;
  {
    std::string source =
        "#include <cuda_runtime.h>\nmy_kernel<<<1, 32>>>(p);\ncudaMalloc(&p, n);\n"
        "int lane = threadIdx.x & 31;\n#ifndef MY_HIP\ncudaFree(p);\n#endif\n";
    ScanOptions options;
    options.hip_macros = {"MY_HIP"};
    FileScan scan = scan_source("a.cu", source, nullptr, options);
    copy = scan;
    source.assign(source.size(), 'x');  // a view into the source would now read x's
  }
  ASSERT_EQ(copy.findings.size(), 5u);
  EXPECT_EQ(copy.findings[4].guard, "MY_HIP");
  EXPECT_EQ(copy.findings[0].name, "cuda_runtime.h");
  EXPECT_EQ(copy.findings[0].message(),
            "CUDA header <cuda_runtime.h>: include <hip/hip_runtime.h>");
  EXPECT_EQ(copy.findings[1].name, "my_kernel");
  EXPECT_EQ(copy.findings[1].message(),
            "kernel launch my_kernel<<<...>>>: hipcc accepts it; hipify writes "
            "hipLaunchKernelGGL(my_kernel, ...)");
  EXPECT_EQ(copy.findings[2].message(), "cudaMalloc (CUDA Runtime) -> hipMalloc");
  EXPECT_EQ(copy.findings[3].name, "31");
  EXPECT_EQ(copy.findings[3].message(),
            "lane index computed with & 31 assumes 32-lane warps (a thread index kept in lane): "
            "on 64-lane wavefronts lanes 32-63 get the indices of 0-31 (use % warpSize or "
            "__lane_id())");
}

TEST(TextArena, KeepsEarlierTextWhenItGrows) {
  TextArena arena;
  std::string_view first = arena.store("first");
  std::string big(100000, 'b');  // larger than a block
  std::string_view second = arena.store(big);
  std::vector<std::string_view> many;
  for (int i = 0; i < 5000; ++i) many.push_back(arena.store(fmt::format("name{}", i)));
  EXPECT_EQ(first, "first");
  EXPECT_EQ(second, big);
  EXPECT_EQ(many[0], "name0");
  EXPECT_EQ(many[4999], "name4999");
  EXPECT_TRUE(arena.store("").empty());
}

TEST(Scanner, WordBoundariesMembersAndOtherNamespaces) {
  EXPECT_EQ(brief("a.cpp",
                  "my_cudaMalloc(); cudaMallocX(); x.cudaMalloc(); p->cudaFree(q);\n"
                  "ns::cudaFree(q); Tpl<int>::cudaFree(q); ::cudaFree(q); cudaFree(q);\n"),
            (Strings{"2:43 cuda-api cudaFree", "2:56 cuda-api cudaFree"}));
}

TEST(Scanner, NothingInCommentsStringsOrDeadBlocks) {
  EXPECT_TRUE(brief("a.cu",
                    "// cudaMalloc\n/* cudaFree */\nconst char* s = \"cudaMemcpy\";\n"
                    "char c = 'cudaFree';\nauto r = R\"(cudaFree)\";\n#if 0\ncudaFree(p);\n#endif\n"
                    "#include \"not_cuda.h\"\n#pragma cudaFree\n#error cudaFree\n")
                  .empty());
}

TEST(Scanner, VersionTestsInConditionsCount) {
  EXPECT_EQ(brief("a.cpp", "#ifdef cudaStreamNonBlocking\n#endif\n"),
            (Strings{"1:8 cuda-api cudaStreamNonBlocking"}));
}

TEST(Scanner, HeadersWithAndWithoutHipEquivalent) {
  FileScan scan =
      scan_source("a.cpp",
                  "#include <cuda_runtime.h>\n#include \"cublas_v2.h\"\n#include <cuda/barrier>\n"
                  "#include <vector>\n#include \"mycuda.hpp\"\n");
  EXPECT_EQ(brief(scan), (Strings{"1:10 cuda-header cuda_runtime.h", "2:10 cuda-header cublas_v2.h",
                                  "3:10 cuda-header cuda/barrier"}));
  EXPECT_EQ(scan.findings[0].replacement, "hip/hip_runtime.h");
  EXPECT_EQ(scan.findings[2].category, Category::unsupported);
}

// Only the CUDA toolkit's header names are CUDA headers; a quoted include that resolves to a
// file of the scan is the project's own even when its name is a toolkit one.
TEST(Scanner, ProjectHeadersAreNotCudaHeaders) {
  std::string source =
      "#include \"cuda_helpers.h\"\n#include <cuda_utils.cuh>\n#include \"sub/math_constants.h\"\n"
      "#include \"math_constants.h\"\n#include <math_constants.h>\n#include \"cuda_fp16.h\"\n";
  EXPECT_EQ(brief("src/a.cu", source),
            (Strings{"4:10 cuda-header math_constants.h", "5:10 cuda-header math_constants.h",
                     "6:10 cuda-header cuda_fp16.h"}));
  std::vector<std::string> files{"src/a.cu", "src/sub/math_constants.h", "include/cuda_fp16.h"};
  ProjectFiles project(files);
  ScanOptions options;
  options.project = &project;
  // "sub/math_constants.h" is not a toolkit name; cuda_fp16.h and math_constants.h name files
  // below folders of the tree (include directories); <...> is never resolved.
  EXPECT_EQ(brief(scan_source("src/a.cu", source, nullptr, options)),
            (Strings{"5:10 cuda-header math_constants.h"}));
}

// Library families by their API's names, not by the project's names that look alike.
TEST(Scanner, LibraryFamiliesButNotLookAlikes) {
  Report report = scan_sources(
      {{"util.h", "#define NPP_ASSERT(x) check(x)\n"},
       {"a.cu",
        "#include \"util.h\"\nvoid f() { nvmlInit(); int nvmlDev = 0; nvml_check(nvmlDev);\n"
        "  NPP_ASSERT(nppiFree(p)); nvtx_helper(); nvtxRangePop(); Npp8u b; }\n"
        "npp::ImageAllocator<Npp8u> a;\n"}},
      1);
  EXPECT_EQ(brief(report.files[0]),
            (Strings{"2:12 cuda-api nvmlInit", "3:14 cuda-api nppiFree",
                     "3:43 cuda-api nvtxRangePop", "3:59 cuda-api Npp8u", "4:21 cuda-api Npp8u"}));
}

TEST(Scanner, KernelLaunches) {
  EXPECT_EQ(brief("a.cu",
                  "k<<<1, 2>>>(x);\nns::k2<<<g, b, 0, s>>>();\nk3<float, 4><<<1, 1>>>();\n"
                  "a<<<b;\nbool operator<<<T>(int);\n"),
            (Strings{"1:1 kernel-launch k", "2:5 kernel-launch k2", "3:1 kernel-launch k3",
                     "4:1 kernel-launch a"}));
}

TEST(Scanner, InlinePtxButNotHostAssembly) {
  std::string ptx = "void f() { asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(x)); }\n";
  std::string x86 = "void g() { __asm__ __volatile__(\"rdtsc\" : \"=a\"(lo)); }\n";
  EXPECT_EQ(brief("a.cpp", ptx), (Strings{"1:12 inline-ptx asm"}));
  EXPECT_TRUE(brief("a.cpp", x86).empty());
  // In a .cu file any inline assembly is PTX; in HIP sources AMDGCN assembly is fine.
  EXPECT_EQ(brief("a.cu", x86), (Strings{"1:12 inline-ptx __asm__"}));
  EXPECT_TRUE(brief("a.hip", "asm volatile(\"s_waitcnt lgkmcnt(0)\");").empty());
}

TEST(Scanner, GenericDeviceNamesOnlyInCudaFilesAndWhenCalled) {
  EXPECT_TRUE(brief("a.cpp", "int umin(int a, int b); int x = umin(1, 2);").empty());
  EXPECT_EQ(brief("a.cu", "int saturate = 0; float y = saturate(x);"),
            (Strings{"1:29 cuda-api saturate"}));
}

TEST(Scanner, MacroUsesReportedAtDefinitionAndOncePerExpansion) {
  FileScan scan = scan_source("a.cu",
                              "#define CHECK(x) if ((x) != cudaSuccess) cudaDeviceReset()\n"
                              "#define PLAIN(x) (x)\n"
                              "void f() {\n"
                              "  CHECK(cudaFree(p));\n"
                              "  CHECK(PLAIN(1));\n"
                              "  int CHECK = 0;\n"
                              "}\n"
                              "#undef CHECK\n"
                              "void g() { CHECK(1); }\n");
  EXPECT_EQ(brief(scan),
            (Strings{"1:29 cuda-api cudaSuccess", "1:42 cuda-api cudaDeviceReset",
                     "4:3 cuda-macro CHECK", "4:9 cuda-api cudaFree", "5:3 cuda-macro CHECK"}));
  ASSERT_EQ(scan.macros.size(), 1u);
  EXPECT_EQ(scan.macros[0].name, "CHECK");
  EXPECT_TRUE(scan.macros[0].function_like);
  EXPECT_EQ(scan.macros[0].uses, (Strings{"cudaSuccess", "cudaDeviceReset"}));
}

TEST(Scanner, MacroInheritsFromMacroAndUnsupportedWins) {
  FileScan scan = scan_source("a.cu",
                              "#define FLUSH cudaDeviceFlushGPUDirectRDMAWrites\n"
                              "#define WRAP FLUSH(a, b)\n"
                              "WRAP;\n");
  EXPECT_EQ(brief(scan), (Strings{"1:15 cuda-api cudaDeviceFlushGPUDirectRDMAWrites",
                                  "2:14 cuda-macro FLUSH", "3:1 cuda-macro WRAP"}));
  EXPECT_EQ(scan.findings.back().category, Category::unsupported);
}

TEST(Scanner, PortingShimHidesTheCudaName) {
  EXPECT_EQ(brief("a.cpp",
                  "#define cudaMalloc hipMalloc\ncudaMalloc(&p, 1);\n#undef cudaMalloc\n"
                  "cudaMalloc(&p, 1);\n"),
            (Strings{"4:1 cuda-api cudaMalloc"}));
}

TEST(Scanner, MacrosAcrossFilesAreReportedWhereTheyExpand) {
  Report report =
      scan_sources({{"b.cu", "#include \"a.h\"\nvoid f() { SYNC(); int OTHER = 1; }\n"},
                    {"a.h", "#define SYNC() cudaDeviceSynchronize()\n"},
                    {"c.cu", "#include \"a.h\"\n#define SYNC() hipDeviceSynchronize()\nSYNC();\n"},
                    {"d.cu", "void g() { SYNC(); }\n"}},
                   2);
  ASSERT_EQ(report.files.size(), 4u);
  EXPECT_EQ(report.files[0].path, "a.h");
  EXPECT_EQ(brief(report.files[0]), (Strings{"1:16 cuda-api cudaDeviceSynchronize"}));
  EXPECT_EQ(brief(report.files[1]), (Strings{"2:12 cuda-macro SYNC"}));
  EXPECT_NE(report.files[1].findings[0].message().find("defined at a.h:1"), std::string::npos);
  // c.cu defines its own SYNC without CUDA: a.h's does not apply there.
  EXPECT_TRUE(report.files[2].findings.empty());
  // d.cu does not include a.h: its SYNC is some other macro.
  EXPECT_TRUE(report.files[3].findings.empty());
}

// Macros and shims come through the includes of a file, transitively, and only through them.
TEST(Scanner, MacrosAndShimsComeThroughIncludes) {
  Report report = scan_sources(
      {{"inc/check.h", "#define CHECK(x) cudaGetLastError()\n"},
       {"inc/all.h", "#include \"check.h\"\n#include \"compat.h\"\n"},
       {"inc/compat.h",
        "#ifdef USE_ROCM\n#define cudaStream_t hipStream_t\n#endif\ntypedef __hip_bfloat16 "
        "__nv_bfloat16;\n"},
       {"src/k.cu",
        "#include <inc/all.h>\nvoid f(cudaStream_t s, __nv_bfloat16 b) { CHECK(s); }\n"},
       {"other/k.cu", "void f(cudaStream_t s) { CHECK(s); }\n"}},
      1);
  ASSERT_EQ(report.files.size(), 5u);
  EXPECT_EQ(report.files[3].path, "other/k.cu");
  EXPECT_EQ(brief(report.files[3]), (Strings{"1:8 cuda-api cudaStream_t"}));
  EXPECT_EQ(report.files[4].path, "src/k.cu");
  EXPECT_EQ(brief(report.files[4]), (Strings{"2:43 cuda-macro CHECK"}));
}

TEST(Scanner, WarpSizeLiteralsNextToWarpOperations) {
  EXPECT_EQ(
      brief("a.cu",
            "for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xFFFFFFFFu, v, o);\n"
            "v = __shfl_sync(m, v, 0, 32);\n"
            "int n = 32; int h = 16;\n"
            "for (int i = 1; i < 32; i *= 2) {\n  if (x) {\n    v += __shfl_xor(v, i);\n  }\n}\n"
            "for (int i = 0; i < 32; ++i) {\n  y += i;\n}\n"),
      (Strings{"1:14 warp-size-literal 16", "1:55 warp-mask-32bit 0xFFFFFFFFu",
               "2:26 warp-size-literal 32", "4:21 warp-size-literal 32"}));
}

// A lane or warp index is arithmetic on a thread index in device code that is kept in a lane or
// warp variable (or returned by a lane/warp function) or fed to a warp operation.
TEST(Scanner, LaneAndWarpIndexArithmetic) {
  EXPECT_EQ(brief("a.cu",
                  "__device__ void f(int x, int y) {\n"
                  "  int lane = threadIdx.x & 31;\n"
                  "  int tid = threadIdx.x + blockIdx.x * blockDim.x;\n"
                  "  int lane2 = tid % 32, warp_id = tid >> 5;\n"
                  "  int wid = threadIdx.y * 4 + threadIdx.x / 32;\n"
                  "  v = __shfl_sync(m, v, (threadIdx.x + 1) & 31);\n"
                  "  tile[threadIdx.y][threadIdx.x % 32] = x;   // tiling: no lane index\n"
                  "  int row = tid >> 5, cols = x % 32, bits = y >> 5;\n"
                  "  int ok = threadIdx.x % warpSize;\n"
                  "}\n"
                  "__device__ int lane_id() { return threadIdx.x & 31; }\n"),
            (Strings{"2:28 lane-id-32 31", "4:21 lane-id-32 32", "4:42 warp-id-32 5",
                     "5:45 warp-id-32 32", "6:45 lane-id-32 31", "11:49 lane-id-32 31"}));
  // Host code: a bitset's `>> 5` and `& 31` are not lanes, whatever the names.
  EXPECT_TRUE(brief("a.cu",
                    "void set(unsigned* bits, int lane) {\n"
                    "  int warp = lane >> 5;\n  bits[warp] |= 1u << (lane & 31);\n}\n")
                  .empty());
  // Each hazard says why it is one.
  FileScan scan = scan_source("a.cu",
                              "__global__ void k() {\n  int laneId = threadIdx.x % 32;\n"
                              "  float v = __shfl_xor_sync(m, x, threadIdx.x & 31);\n}\n");
  ASSERT_EQ(scan.findings.size(), 2u);
  EXPECT_NE(scan.findings[0].message().find("a thread index kept in laneId"), std::string::npos)
      << scan.findings[0].message();
  EXPECT_NE(scan.findings[1].message().find("the value feeds __shfl_xor_sync"), std::string::npos)
      << scan.findings[1].message();
}

TEST(Scanner, WarpSizeConstants) {
  EXPECT_EQ(brief("a.cu",
                  "#define WARP_SIZE 32\nconstexpr int kWarpSize = 32;\nint warpSz{32};\n"
                  "template <int WarpSize = 32> void f();\n#define BLOCK 32\nint warp_id = 32;\n"),
            (Strings{"1:19 warp-size-constant WARP_SIZE", "2:27 warp-size-constant kWarpSize",
                     "3:12 warp-size-constant warpSz", "4:26 warp-size-constant WarpSize"}));
}

TEST(Scanner, NamedConstantsCarryTheirValueToTheUse) {
  FileScan scan = scan_source("a.cu",
                              "#define MASK 0xffffffff\nconstexpr unsigned BITS = 32;\n"
                              "uint64_t b = __ballot_sync(MASK, p);\n");
  EXPECT_EQ(brief(scan), (Strings{"3:28 warp-mask-32bit MASK"}));
  EXPECT_NE(scan.findings[0].message().find("MASK (= 0xffffffff)"), std::string::npos);
}

// Lane masks written ~0u or uint32_t(-1), held in 32-bit variables, or a ballot kept in 32 bits.
TEST(Scanner, ThirtyTwoBitMasksInOtherForms) {
  FileScan scan =
      scan_source("a.cu",
                  "__device__ void f(float v) {\n"
                  "  unsigned vote = __ballot_sync(~0u, v > 0);\n"
                  "  unsigned mask = 0xffff;\n  uint64_t wide = __activemask();\n"
                  "  v = __shfl_xor_sync(mask, v, 1) + __shfl_xor_sync(wide, v, 1);\n"
                  "  v += __shfl_sync(uint32_t(-1), v, 0) + __shfl_sync(~0ull, v, 0);\n}\n");
  EXPECT_EQ(brief(scan), (Strings{"2:12 warp-mask-32bit vote", "2:33 warp-mask-32bit ~0u",
                                  "4:19 activemask __activemask", "5:23 warp-mask-32bit mask",
                                  "6:20 warp-mask-32bit uint32_t(-1)"}));
  EXPECT_NE(scan.findings[0].message().find("lanes 32-63 are lost"), std::string::npos);
  EXPECT_NE(scan.findings[3].message().find("32-bit variable passed to __shfl_xor_sync"),
            std::string::npos);
}

TEST(Scanner, ActivemaskSyncwarpAndCooperativeGroups) {
  EXPECT_EQ(brief("a.cu",
                  "unsigned m = __activemask();\n__syncwarp();\n"
                  "namespace cg = cooperative_groups;\n"
                  "auto t = cg::tiled_partition<32>(cg::this_thread_block());\n"
                  "cg::memcpy_async(g, d, s, n); cooperative_groups::wait(g); cg::sync(g);\n"),
            (Strings{"1:10 warp-mask-32bit m", "1:14 activemask __activemask",
                     "2:1 syncwarp __syncwarp", "4:30 warp-size-literal 32",
                     "5:5 cooperative-groups cooperative_groups::memcpy_async",
                     "5:51 cooperative-groups cooperative_groups::wait"}));
  EXPECT_EQ(brief("a.cu", "using namespace cooperative_groups;\nwait_prior<1>(g); wait(g);\n"),
            (Strings{"2:1 cooperative-groups cooperative_groups::wait_prior"}));
}

TEST(Scanner, FingerprintsSurviveLineMovesButNotEdits) {
  FileScan a = scan_source("a.cu", "cudaFree(p);\n");
  FileScan b = scan_source("a.cu", "\n\n  cudaFree(p);\n");
  FileScan c = scan_source("a.cu", "cudaFree(q);\n");
  ASSERT_EQ(a.findings.size(), 1u);
  EXPECT_EQ(a.findings[0].fingerprint, b.findings[0].fingerprint);
  EXPECT_NE(a.findings[0].fingerprint, c.findings[0].fingerprint);
  EXPECT_EQ(fingerprint_hex(a.findings[0].fingerprint).size(), 16u);
  EXPECT_EQ(parse_fingerprint(fingerprint_hex(a.findings[0].fingerprint)),
            a.findings[0].fingerprint);
  EXPECT_EQ(parse_fingerprint("0123"), std::nullopt);
}

TEST(Scanner, CountsLines) {
  FileScan scan = scan_source("a.cu", "// c\nint a;\n\n#if 0\nx\n#endif\n");
  EXPECT_EQ(scan.lines, 6u);
  EXPECT_EQ(scan.code_lines, 3u);
}

}  // namespace
}  // namespace kiln::hipcheck
