// The gradient kernels a LinearModel can run (train.kernel), and which one runs by default.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <string>

#include "kpmap/core/types.hpp"

namespace kpmap {

// fused:          one RangePolicy pass over the rows (model/fused_kernels.hpp), tuned for CPUs.
// kokkos_kernels: KokkosBlas gemv N and T (model/blas_kernels.hpp).
// team:           a TeamPolicy kernel shaped for GPUs (model/team_kernels.hpp): teams over blocks
//                 of rows, vector lanes over features, per-team partial gradients summed in a
//                 fixed order by a second kernel.
enum class GradientKernel { fused, kokkos_kernels, team };

// Whether kpmap::execution_space runs on the host (Serial, OpenMP, Threads) rather than on a GPU
// (Cuda, HIP, SYCL): whether host code can read its memory space.
inline constexpr bool host_execution_v =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, execution_space::memory_space>::accessible;

// The kernel of train.kernel auto (the default): fused on host execution spaces, team on GPU
// ones.
constexpr GradientKernel default_gradient_kernel() {
  return host_execution_v ? GradientKernel::fused : GradientKernel::team;
}

// The widest rows (features per model rank) the fused kernel takes on a GPU backend, with
// gradient sums of `sum_bytes` each: its parallel_reduce keeps F + 2 sums per thread, which a GPU
// holds in shared memory, and Kokkos' CUDA backend refuses a reduction whose smallest block (32
// threads and 2 more slots) needs more than the 48 KiB a block may use: 34 (F + 2) sum_bytes <=
// 49152, so 178 features with fp64 sums and 359 with fp32 ones. CUDA's rule, applied to every
// GPU backend (HIP's blocks have 64 KiB: the limit is conservative there).
constexpr long long fused_device_max_features(std::size_t sum_bytes) {
  return static_cast<long long>(49152 / (34 * sum_bytes)) - 2;
}
// The same on this build's execution space; -1 (no limit) on host backends.
constexpr long long fused_max_features(std::size_t sum_bytes) {
  return host_execution_v ? -1 : fused_device_max_features(sum_bytes);
}
// Whether the fused kernel takes rows of `features` features with sums of `sum_bytes` each on
// this build's execution space.
constexpr bool fused_fits(long long features, std::size_t sum_bytes) {
  return fused_max_features(sum_bytes) < 0 || features <= fused_max_features(sum_bytes);
}

// The rows of one work item of the fused kernel (model/fused_kernels.hpp, GradientReduce::block).
inline constexpr long long fused_block_rows = 8;

// Work items per chunk of the fused kernel's reduction (model/fused_kernels.hpp reduce_items) on
// `threads` host threads, for items of item_bytes bytes of X and sums of sum_bytes: a 32nd of a
// thread's share, so that the chunks of a thread the host slows down go to the others, but at
// least 256 KiB of X and 64 times the sums (the chunks' sums and their join stay small beside X);
// all items in one chunk on one thread.
inline long long reduce_chunk_items(long long items, long long item_bytes, long long sum_bytes, long long threads) {
  if (threads <= 1) return items < 1 ? 1 : items;
  const long long share = (items + 32 * threads - 1) / (32 * threads);
  const long long least_bytes = 64 * sum_bytes > 256 * 1024 ? 64 * sum_bytes : 256 * 1024;
  const long long least = (least_bytes + item_bytes - 1) / item_bytes;
  return share > least ? share : least;
}

// The same for the fused kernel's reduction over `rows` rows of `features` elements of x_bytes
// each, with sums of sum_bytes (F + 2 of them per chunk), on `threads` threads; and how many
// chunks that makes: 0 where it runs as one parallel_reduce (one chunk, or a GPU backend).
inline long long fused_chunk_items(long long rows, long long features, std::size_t x_bytes, std::size_t sum_bytes,
                                   long long threads) {
  const long long items = (rows + fused_block_rows - 1) / fused_block_rows;
  return reduce_chunk_items(items, fused_block_rows * features * static_cast<long long>(x_bytes),
                            (features + 2) * static_cast<long long>(sum_bytes), threads);
}
inline long long fused_chunks(long long rows, long long features, std::size_t x_bytes, std::size_t sum_bytes,
                              long long threads) {
  const long long items = (rows + fused_block_rows - 1) / fused_block_rows;
  const long long chunk = fused_chunk_items(rows, features, x_bytes, sum_bytes, threads);
  return host_execution_v && chunk < items ? (items + chunk - 1) / chunk : 0;
}

std::string to_string(GradientKernel kernel);
// A kernel's name, or "auto" for default_gradient_kernel(); throws InputError naming
// train.kernel and the allowed values.
GradientKernel parse_gradient_kernel(const std::string& name);

}  // namespace kpmap
