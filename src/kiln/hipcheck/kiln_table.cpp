// Kiln's own CUDA -> HIP rows, reviewed by hand: what ROCm releases after HIPIFY's tables
// (October 2024) provide that the tables call unsupported, and CUDA libraries and device forms
// the tables do not list. Each row cites the ROCm header (ROCm/clr, at the release tag) or the
// library that says so; where a row's HIP name is the CUDA name, hipcheck reports nothing for
// that ROCm and newer (the name is not residual CUDA there) and "needs ROCm X" for older ones.
//
// Fields: CUDA name, HIP name ("" = no equivalent), library, -, -, -, -, ROCm version that added
// the HIP name, source.
#include "kiln/hipcheck/api_table.h"

namespace kiln::hipcheck {

namespace {

// ROCm/clr at the tags named; the header declares the function for AMD targets.
constexpr const char* k_warp_sync =
    "ROCm/clr rocm-6.2.0 hipamd/include/hip/amd_detail/amd_warp_sync_functions.h (64-bit masks; "
    "in 6.2 enabled by HIP_ENABLE_WARP_SYNC_BUILTINS)";
constexpr const char* k_bf16 = "ROCm/clr rocm-5.7.0 hipamd/include/hip/amd_detail/amd_hip_bf16.h";
constexpr const char* k_math =
    "ROCm/clr rocm-5.6.0 hipamd/include/hip/amd_detail/amd_math_functions.h";

constexpr const char* k_no_reduce =
    "absent from ROCm/clr hipamd/include/hip/ at tags rocm-5.6.0 to rocm-6.2.0 (checked by name)";
constexpr const char* k_device_compile =
    "ROCm/clr rocm-6.2.0 hipamd/include/hip: nothing defines __CUDA_ARCH__; device compilation "
    "is marked by __HIP_DEVICE_COMPILE__";

}  // namespace

const ApiEntry k_kiln_entries[] = {
    // Warp-level primitives with an explicit (64-bit) mask.
    {"__shfl_sync", "__shfl_sync", Library::device, "", "", false, false, "6.2.0", k_warp_sync},
    {"__shfl_up_sync", "__shfl_up_sync", Library::device, "", "", false, false, "6.2.0",
     k_warp_sync},
    {"__shfl_down_sync", "__shfl_down_sync", Library::device, "", "", false, false, "6.2.0",
     k_warp_sync},
    {"__shfl_xor_sync", "__shfl_xor_sync", Library::device, "", "", false, false, "6.2.0",
     k_warp_sync},
    {"__ballot_sync", "__ballot_sync", Library::device, "", "", false, false, "6.2.0", k_warp_sync},
    {"__any_sync", "__any_sync", Library::device, "", "", false, false, "6.2.0", k_warp_sync},
    {"__all_sync", "__all_sync", Library::device, "", "", false, false, "6.2.0", k_warp_sync},
    {"__match_any_sync", "__match_any_sync", Library::device, "", "", false, false, "6.2.0",
     k_warp_sync},
    {"__match_all_sync", "__match_all_sync", Library::device, "", "", false, false, "6.2.0",
     k_warp_sync},
    // bfloat16 conversions and packing (amd_hip_bf16.h), and the types.
    {"__bfloat1622float2", "__bfloat1622float2", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__bfloat162bfloat162", "__bfloat162bfloat162", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__bfloat162float", "__bfloat162float", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__bfloat16_as_short", "__bfloat16_as_short", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__bfloat16_as_ushort", "__bfloat16_as_ushort", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__double2bfloat16", "__double2bfloat16", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__float22bfloat162_rn", "__float22bfloat162_rn", Library::device, "", "", false, false,
     "5.7.0", k_bf16},
    {"__float2bfloat16", "__float2bfloat16", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__halves2bfloat162", "__halves2bfloat162", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__high2bfloat16", "__high2bfloat16", Library::device, "", "", false, false, "5.7.0", k_bf16},
    {"__high2bfloat162", "__high2bfloat162", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__highs2bfloat162", "__highs2bfloat162", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__hmax2", "__hmax2", Library::device, "", "", false, false, "5.7.0", k_bf16},
    {"__hmin2", "__hmin2", Library::device, "", "", false, false, "5.7.0", k_bf16},
    {"__low2bfloat16", "__low2bfloat16", Library::device, "", "", false, false, "5.7.0", k_bf16},
    {"__low2bfloat162", "__low2bfloat162", Library::device, "", "", false, false, "5.7.0", k_bf16},
    {"__lows2bfloat162", "__lows2bfloat162", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__short_as_bfloat16", "__short_as_bfloat16", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__ushort_as_bfloat16", "__ushort_as_bfloat16", Library::device, "", "", false, false, "5.7.0",
     k_bf16},
    {"__nv_bfloat16", "__hip_bfloat16", Library::device, "", "", false, false, "5.7.0", k_bf16},
    {"__nv_bfloat162", "__hip_bfloat162", Library::device, "", "", false, false, "5.7.0", k_bf16},
    {"nv_bfloat16", "__hip_bfloat16", Library::device, "", "", false, false, "5.7.0", k_bf16},
    {"nv_bfloat162", "__hip_bfloat162", Library::device, "", "", false, false, "5.7.0", k_bf16},
    // Arithmetic with a chosen rounding mode.
    {"__dadd_rd", "__dadd_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dadd_ru", "__dadd_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dadd_rz", "__dadd_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__ddiv_rd", "__ddiv_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__ddiv_ru", "__ddiv_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__ddiv_rz", "__ddiv_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dmul_rd", "__dmul_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dmul_ru", "__dmul_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dmul_rz", "__dmul_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__drcp_rd", "__drcp_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__drcp_ru", "__drcp_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__drcp_rz", "__drcp_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dsqrt_rd", "__dsqrt_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dsqrt_ru", "__dsqrt_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dsqrt_rz", "__dsqrt_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dsub_rd", "__dsub_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dsub_ru", "__dsub_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__dsub_rz", "__dsub_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fadd_rd", "__fadd_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fadd_ru", "__fadd_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fadd_rz", "__fadd_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fdiv_rd", "__fdiv_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fdiv_ru", "__fdiv_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fdiv_rz", "__fdiv_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fma_rd", "__fma_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fma_ru", "__fma_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fma_rz", "__fma_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fmaf_rd", "__fmaf_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fmaf_ru", "__fmaf_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fmaf_rz", "__fmaf_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fmul_rd", "__fmul_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fmul_ru", "__fmul_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fmul_rz", "__fmul_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__frcp_rd", "__frcp_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__frcp_ru", "__frcp_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__frcp_rz", "__frcp_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fsqrt_rd", "__fsqrt_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fsqrt_ru", "__fsqrt_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fsqrt_rz", "__fsqrt_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fsub_rd", "__fsub_rd", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fsub_ru", "__fsub_ru", Library::device, "", "", false, false, "5.6.0", k_math},
    {"__fsub_rz", "__fsub_rz", Library::device, "", "", false, false, "5.6.0", k_math},
    // Warp reductions: not in ROCm/clr's headers up to rocm-6.2.0.
    {"__reduce_add_sync", "", Library::device, "", "", false, false, "", k_no_reduce},
    {"__reduce_min_sync", "", Library::device, "", "", false, false, "", k_no_reduce},
    {"__reduce_max_sync", "", Library::device, "", "", false, false, "", k_no_reduce},
    {"__reduce_and_sync", "", Library::device, "", "", false, false, "", k_no_reduce},
    {"__reduce_or_sync", "", Library::device, "", "", false, false, "", k_no_reduce},
    {"__reduce_xor_sync", "", Library::device, "", "", false, false, "", k_no_reduce},
    // The device-compilation macro: a HIP build does not define __CUDA_ARCH__.
    {"__CUDA_ARCH__", "__HIP_DEVICE_COMPILE__", Library::device, "", "", false, false, "",
     k_device_compile},
};

const std::size_t k_kiln_entry_count = std::size(k_kiln_entries);

}  // namespace kiln::hipcheck
