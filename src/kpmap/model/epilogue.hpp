// What a gradient call does with its gradient slots once they are final: LinearModel's optional
// `then` argument, e.g. the trainer's cast of the finished gradient to the communication wire
// (train/step_comm.hpp, WireCast), done while the slots are still in L1 instead of in a pass of
// its own.
//
// The slots are those of the flat parameter vector [w_0 .. w_{F-1}, b] of this model rank (the
// layout of split_params): slot j is grad_w(j), slot F the bias. A call that adds to slots
// [j0, j1) calls, once each slot holds its sum:
//   then.host(j0, j1)  on host backends, for runs of at most epilogue_run slots, just after
//                      writing them;
//   then(j)            on device backends, once per slot, in the thread that wrote it (in a
//                      kernel of its own after a library call: run_epilogue).
// An Epilogue only reads the slots (through its own View of the gradient) and writes elsewhere.
#pragma once

#include <Kokkos_Core.hpp>

#include <type_traits>

#include "kpmap/core/types.hpp"
#include "kpmap/model/gradient_kernel.hpp"

namespace kpmap::model_detail {

// Slots per host call: 16 KiB of fp32 slots (32 KiB of fp64), inside L1 or L2.
inline constexpr long long epilogue_run = 4096;

// The default: nothing after the gradient.
struct NoEpilogue {
  void host(long long, long long) const {}
  KOKKOS_INLINE_FUNCTION void operator()(long long) const {}
};

template <class Then>
inline constexpr bool has_epilogue_v = !std::is_same_v<Then, NoEpilogue>;

// `then` over slots [first, first + count), as a pass of its own (paths whose last write is a
// library call, e.g. the BLAS gemv); returns once it has completed.
template <class Then>
void run_epilogue(const execution_space& exec, long long first, long long count, const Then& then) {
  if constexpr (has_epilogue_v<Then>) {
    using Range = Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>;
    if constexpr (host_execution_v) {
      Kokkos::parallel_for("kpmap::model::epilogue", Range(exec, 0, (count + epilogue_run - 1) / epilogue_run),
                           [=](long long c) {
                             const long long j0 = c * epilogue_run;
                             then.host(first + j0, first + (count < j0 + epilogue_run ? count : j0 + epilogue_run));
                           });
    } else {
      Kokkos::parallel_for("kpmap::model::epilogue", Range(exec, 0, count),
                           KOKKOS_LAMBDA(long long j) { then(first + j); });
    }
    exec.fence();
  }
}

}  // namespace kpmap::model_detail
