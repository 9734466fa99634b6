// Which instruction set the fused kernel's host loops run with (docs/performance.md, "AVX2 at run
// time").
//
// A build for baseline x86-64 (no -mavx2, -march=native or the like) with a GCC-compatible
// compiler, for host execution spaces, carries the fused kernel twice: its baseline loops (16-byte
// SSE2 vectors) and the same loops compiled for AVX2 and FMA (32-byte vectors, each product fused
// with the sum it is added to), and runs the AVX2 version where the CPU has AVX2 and FMA. Both
// form the same sums in the same order; the AVX2 version rounds each product once instead of
// twice, so the two agree to rounding (bitwise on integer-valued data). A build that targets the
// CPU (`native` preset) runs what it was compiled for.
#pragma once

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__AVX2__) && !defined(__CUDACC__) && \
    !defined(__HIPCC__) && !defined(SYCL_LANGUAGE_VERSION)
#define KPMAP_AVX2_DISPATCH 1
#endif

namespace kpmap::model_detail {

enum class HostIsa {
  baseline,      // the baseline loops of a build with dispatch
  avx2,          // their AVX2 + FMA version
  build_target,  // a build without dispatch: what the compiler targeted
};

// The version the fused kernels run from now on: avx2 in a build with dispatch on a CPU with
// AVX2 and FMA, unless set_host_isa chose baseline.
HostIsa host_isa();

// "baseline", "avx2" or "build target" (the report's versions.host_isa; also the name of the
// version the reproducible kernel's row loops run, repro_rows_isa).
const char* host_isa_name(HostIsa isa);

// Tests and benchmarks: run `isa` from now on. False (and nothing changes) where this build or
// CPU cannot: avx2 without dispatch or without AVX2, baseline without dispatch, build_target with
// dispatch.
bool set_host_isa(HostIsa isa);

}  // namespace kpmap::model_detail
