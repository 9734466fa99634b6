// Which instruction set the fused kernel's host loops run with (docs/performance.md, "AVX2 at run
// time").
//
// A build for baseline x86-64 (no -mavx2, -march=native or the like) with a GCC-compatible
// compiler, for host execution spaces, carries the fused kernel twice: its baseline loops (16-byte
// SSE2 vectors) and the same loops compiled for AVX2 and FMA (32-byte vectors, each product fused
// with the sum it is added to), and runs the AVX2 version where the CPU has AVX2 and FMA. Both
// form the same sums in the same order; the AVX2 version rounds each product once instead of
// twice, so the two agree to rounding (bitwise on integer-valued data). For bf16 rows, and fp64
// rows from 512 features and fp32 rows from 2048 (fused_kernels.hpp, wide_rows_avx512), it
// carries a third version, compiled for AVX-512 (F, BW, VL, DQ) and run where the CPU has it: the
// AVX2 version's operations on 64-byte vectors (a cache line of a row in the axpy; in the dot
// products two bf16 rows side by side, an fp64 row's 8 partial sums), lane for lane the same sums,
// so bitwise the AVX2 version's results; other rows run the AVX2 version there. A build that
// targets the CPU (`native` preset) runs what it was compiled for.
#pragma once

#include "kpmap/core/host_cpu.hpp"

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__AVX2__) && !defined(__CUDACC__) && \
    !defined(__HIPCC__) && !defined(SYCL_LANGUAGE_VERSION)
#define KPMAP_AVX2_DISPATCH 1
// The target of the AVX-512 version (model/half_kernels.hpp, model/fused_kernels.hpp), for
// __attribute__((target(...))).
#define KPMAP_AVX512_TARGET "avx2,fma," KPMAP_AVX512_SUBSETS
#endif

namespace kpmap::model_detail {

enum class HostIsa {
  baseline,      // the baseline loops of a build with dispatch
  avx2,          // their AVX2 + FMA version
  avx512,        // the AVX-512 version for bf16 rows and wide fp32 / fp64 rows, AVX2 + FMA for the others
  build_target,  // a build without dispatch: what the compiler targeted
};

// The version the fused kernels run from now on, in a build with dispatch: avx512 on a CPU with
// AVX-512, else avx2 on a CPU with AVX2 and FMA, else baseline, unless set_host_isa chose another.
HostIsa host_isa();

// "baseline", "avx2", "avx512" or "build target" (the report's versions.host_isa; also the name of the
// version the reproducible kernel's row loops run, repro_rows_isa).
const char* host_isa_name(HostIsa isa);

// Tests and benchmarks: run `isa` from now on. False (and nothing changes) where this build or
// CPU cannot: avx2 or avx512 without dispatch or without the CPU's support, baseline without
// dispatch, build_target with dispatch.
bool set_host_isa(HostIsa isa);

}  // namespace kpmap::model_detail
