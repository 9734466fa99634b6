// The `fused` gradient path: one pass over the rows of X. Each row is read from memory once; its
// residual is formed and the row, still in L1, is added to a private gradient of F elements: on
// CPUs one per chunk of rows, the chunks shared out dynamically among the threads and their sums
// added in chunk order (reduce_items); on GPUs a parallel_reduce with a runtime-sized array
// reducer, which Kokkos maps to shared memory.
//
// Why the loops look the way they do: without -ffast-math a compiler may not reorder a sum, so
// a plain dot product runs one dependent add per element. row_dot keeps `lanes` independent
// partial sums, which the compiler turns into SIMD registers, and the gradient update is a
// restrict-qualified axpy. A work item takes 8 consecutive rows: rows shorter than 4 KiB (fp64) or
// 8 KiB (fp32) are summed one after the other, in address order; wider rows 4 at a time,
// interleaved, so that each load of w serves all of them (dot_group). The lines 16 KiB or one
// group of rows further on in X are requested into L2 (prefetch_hint) as the rows are read
// (block_dot; not by the interleaved rows of the AVX-512 version, rows_part). Then one axpy adds all
// 8 rows, still in L1 (16 KiB in fp64 at 256 features), so the private gradient is loaded
// and stored once per 8 rows, while it requests the 8 rows of a block about 8 KiB further on
// (axpy_request_bytes), so that memory keeps streaming during the arithmetic (in the one-pass
// fused reduction, blocks of wide rows in two halves of 4 rows: split_block_bytes). For
// fp32, fp64 and bf16 rows of 8, 16, 32 or 64 features the row length is a compile-time constant
// (reduce_part), so that these short loops unroll. On GCC-compatible host compilers the fp32 /
// fp64 block loops run on vector types (KPMAP_HOST_VECTORS; 16 bytes, 32 in the AVX2 version
// that baseline x86-64 builds run where the CPU has AVX2, 64 in the AVX-512 version for wide
// rows, host_isa.hpp): the same sums in the same order, kept in registers. Rows of LayoutRight
// views take this pointer path; any other layout falls back to View indexing, one row at a time
// (correct, not tuned). Measured bandwidth at every width: docs/performance.md.
//
// 16-bit storage (T = bf16 or fp16, Acc = float): every element is converted to float where it
// is used and nothing is rounded to 16 bits. 16-bit rows of LayoutRight views take their own
// loops (half_kernels.hpp: 32-bit words, gradient sums in pair order).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/model/epilogue.hpp"
#include "kpmap/model/gradient_kernel.hpp"
#include "kpmap/model/half_kernels.hpp"
#include "kpmap/model/host_isa.hpp"
#include "kpmap/model/prefetch.hpp"
#include "kpmap/model/row_loops.hpp"

namespace kpmap::model_detail {

// The bytes of the vector types of the block loops: 16 (SSE2, and what a build for the CPU,
// e.g. -march=native, compiles), 32 in the AVX2 version of a build with KPMAP_AVX2_DISPATCH
// (host_isa.hpp), 64 in its AVX-512 version (wide_rows_avx512). The sums do not depend on it:
// the dot products' partial sums are the same lanes in vectors of any of these sizes, folded by
// halves in the same order, and the axpy's sums are per element.
inline constexpr int host_vector_bytes = 16;

template <class Acc>
inline constexpr int simd_lanes = 64 / static_cast<int>(sizeof(Acc)) > 16 ? 16 : 64 / static_cast<int>(sizeof(Acc));

// sum_j Acc(x[j]) * Acc(w[j]) over contiguous x and w, with `lanes` independent accumulators.
// fused: each product fused with its sum (add_product), in the AVX2 + FMA version.
template <class Acc, bool fused = false, class T, class W>
KOKKOS_INLINE_FUNCTION Acc row_dot(const T* KOKKOS_RESTRICT x, const W* KOKKOS_RESTRICT w, long long n) {
  constexpr int lanes = simd_lanes<Acc>;
  Acc part[lanes] = {};
  long long j = 0;
  for (; j + lanes <= n; j += lanes) {
    for (int k = 0; k < lanes; ++k) {
      part[k] = add_product<fused>(part[k], static_cast<Acc>(x[j + k]), static_cast<Acc>(w[j + k]));
    }
  }
  for (int k = 0; j + k < n; ++k) {
    part[k] = add_product<fused>(part[k], static_cast<Acc>(x[j + k]), static_cast<Acc>(w[j + k]));
  }
  for (int width = lanes / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) part[k] += part[k + width];
  }
  return part[0];
}

// out[q] = sum_j Acc(x[q * stride + j]) * Acc(w[j]) for q < rows: the rows interleaved, so each
// load of w serves all of them, with `lanes` independent partial sums per row, folded as in
// row_dot. The cache lines of the rows `ahead` elements further on in X are requested (see
// rows_block): all of them before the dot product (Requests::before), or each as the rows' line
// at the same place is read (Requests::during: one request per line read, so memory streams at
// the rate of the arithmetic), or none (Requests::none).
// On GCC-compatible host compilers the main loop of rows of Acc runs on vector types of
// vector_bytes (see host_vector_bytes), or of the row's partial sums if they are fewer bytes (32
// for fp32 rows summed one at a time in the AVX-512 version): the same partial sums, lane for
// lane, but GCC keeps them in registers, where with the plain array of 4 rows x 8 floats it kept
// them on the stack (a load and a store per add).
enum class Requests { before, during, none };

template <int rows, int lanes, Requests requests, int vector_bytes = host_vector_bytes, bool fused = false, class Acc,
          class T, class W>
KOKKOS_INLINE_FUNCTION void interleaved_dot(const T* KOKKOS_RESTRICT x, long long stride, const W* KOKKOS_RESTRICT w,
                                            long long n, Acc* out, long long ahead) {
  constexpr long long line = 64 / static_cast<long long>(sizeof(T));
  constexpr long long chunk = line > lanes ? line : lanes;  // whole lines and whole steps of `lanes`
  const long long whole = n - n % chunk;
  const auto request = [&](long long j0, long long j1) {  // the lines of [j0, j1) of every row, ahead
    for (int q = 0; q < rows; ++q) {
      for (long long k = j0; k < j1; k += line) prefetch_hint(x + q * stride + ahead + k);
    }
  };
  if constexpr (requests == Requests::before) request(0, n);
  long long j = 0;
  // step(j0) adds the terms [j0, j0 + lanes) of every row; all_steps runs every whole step.
  const auto all_steps = [&](const auto& step) {
    for (; j < whole;) {
      if constexpr (requests == Requests::during) request(j, j + chunk);
      for (const long long end = j + chunk; j < end; j += lanes) step(j);
    }
    if constexpr (requests == Requests::during) request(whole, n);
    for (; j + lanes <= n; j += lanes) step(j);
  };
#if defined(KPMAP_HOST_VECTORS)
  constexpr int part_bytes = lanes * static_cast<int>(sizeof(Acc));
  constexpr int dot_bytes = part_bytes < vector_bytes ? part_bytes : vector_bytes;
  if constexpr (std::is_same_v<T, Acc> && std::is_same_v<W, Acc> && part_bytes % dot_bytes == 0) {
    typedef Acc V __attribute__((vector_size(dot_bytes)));
    constexpr int per = dot_bytes / static_cast<int>(sizeof(Acc)), vectors = lanes / per;
    V vpart[rows][vectors];
    for (int q = 0; q < rows; ++q) {
      for (int v = 0; v < vectors; ++v) vpart[q][v] = V{};
    }
    const auto step = [&](long long j0) {
      V wv[vectors];
      for (int v = 0; v < vectors; ++v) std::memcpy(&wv[v], w + j0 + v * per, sizeof(V));
      for (int q = 0; q < rows; ++q) {
        for (int v = 0; v < vectors; ++v) {
          V xv;
          std::memcpy(&xv, x + q * stride + j0 + v * per, sizeof(V));
          add_products<fused>(vpart[q][v], xv, wv[v]);
        }
      }
    };
    all_steps(step);
    // The tail and the fold on the vectors themselves, lane for lane the adds of the plain code
    // below: folded in an array, GCC with AVX loads 32 bytes that two 16-byte stores have just
    // written, which store forwarding cannot serve (a stall per row).
    for (int k = 0; j + k < n; ++k) {
      for (int q = 0; q < rows; ++q) {
        vpart[q][k / per][k % per] = add_product<fused>(vpart[q][k / per][k % per], x[q * stride + j + k], w[j + k]);
      }
    }
    for (int q = 0; q < rows; ++q) {
      for (int half = vectors / 2; half > 0; half /= 2) {
        for (int v = 0; v < half; ++v) vpart[q][v] += vpart[q][v + half];
      }
      Acc lane[per];
      for (int k = 0; k < per; ++k) lane[k] = vpart[q][0][k];
      for (int width = per / 2; width > 0; width /= 2) {
        for (int k = 0; k < width; ++k) lane[k] += lane[k + width];
      }
      out[q] = lane[0];
    }
  } else
#endif
  {
    Acc part[rows][lanes];
    for (int q = 0; q < rows; ++q) {
      for (int k = 0; k < lanes; ++k) part[q][k] = 0;
    }
    const auto step = [&](long long j0) {
      for (int q = 0; q < rows; ++q) {
        for (int k = 0; k < lanes; ++k) {
          const Acc xk = static_cast<Acc>(x[q * stride + j0 + k]);
          part[q][k] = add_product<fused>(part[q][k], xk, static_cast<Acc>(w[j0 + k]));
        }
      }
    };
    all_steps(step);
    for (int k = 0; j + k < n; ++k) {
      for (int q = 0; q < rows; ++q) {
        const Acc xk = static_cast<Acc>(x[q * stride + j + k]);
        part[q][k] = add_product<fused>(part[q][k], xk, static_cast<Acc>(w[j + k]));
      }
    }
    for (int q = 0; q < rows; ++q) {
      for (int width = lanes / 2; width > 0; width /= 2) {
        for (int k = 0; k < width; ++k) part[q][k] += part[q][k + width];
      }
      out[q] = part[q][0];
    }
  }
}

// Rows whose dot products are interleaved: rows of at least interleave_bytes<T> (fp64 rows from
// 512 features, fp32 from 2048) 4 at a time, narrower rows one after the other, in address order
// (measured out of cache: docs/performance.md).
template <class T>
inline constexpr long long interleave_bytes = sizeof(T) == 4 ? 8192 : 4096;
template <class T>
KOKKOS_INLINE_FUNCTION constexpr int dot_group(long long row_length) {
  return row_length * static_cast<long long>(sizeof(T)) >= interleave_bytes<T> ? 4 : 1;
}

// Partial sums per row in a block's dot products, `group` rows at a time: 32 bytes for 4-byte
// elements and sums one row at a time, row_dot's 64 bytes otherwise, interleaved fp32 rows
// included (each faster out of cache in fp32: docs/performance.md).
template <class Acc, class T, int group>
inline constexpr int dot_lanes = sizeof(T) == 4 && sizeof(Acc) == 4 && group == 1 ? 8 : simd_lanes<Acc>;

// How far ahead of the rows being read block_dot requests X, in bytes: at least this, and at
// least one group of rows; and the largest group of rows whose lines are all requested before
// its dot product (8 lines: fp32 rows up to 128 features, fp64 up to 64). Larger groups request
// one line per line read, which out of cache streams faster from rows of 1 KiB on: a burst of
// their lines waits for the core's free miss buffers. docs/performance.md.
inline constexpr long long prefetch_distance = 16384;
inline constexpr long long burst_bytes = 512;

// A one-pass block of 8 rows of at least split_block_bytes (fp64 rows from 2048 features, fp32
// from 4096) is summed in two halves of 4 rows, each half's dot products and then its axpy, so
// that the rows the axpy reads back are still in the core's L2 (512 KiB on the machine measured)
// while the next rows are requested: a whole block, the next block's requested rows and the
// requests ahead of the dot products would not fit. The gradient sums are the same: the axpy
// adds the rows to each g[j] in row order either way, and the halves only store g[j] between
// row 3 and row 4.
inline constexpr long long split_block_bytes = 131072;

// The axpy of a block of fp32 / fp64 rows requests the rows of the block this many bytes further
// on, in whole blocks (rounded down, and at least the next block: next_rows): the next block
// from blocks of 8 KiB (fp64 rows of 128 features), 4 blocks on for blocks of 2 KiB. Measured
// out of cache (docs/performance.md), rows of 128 to 512 bytes stream faster with these requests
// than with the next block's. The dot products' requests (prefetch_distance) do not make them
// redundant: without the axpy's, rows of 256 bytes to 2 KiB streamed slower.
inline constexpr long long axpy_request_bytes = 8192;

// out[q] = the dot product of row q with w for q < rows, `group` rows at a time, requesting the
// lines `ahead` elements further on in X (see rows_block): with `burst` (a group of at most
// burst_bytes) all at once before its dot product, else line by line as it is read
// (interleaved_dot); with `request` false, none. A row's sum is the same whatever the requests,
// and whatever the grouping for the same partial sums (dot_lanes): its terms, its partial sums
// and their fold do not depend on the other rows.
template <int rows, int group, int vector_bytes = host_vector_bytes, bool unroll = false, bool fused = false,
          bool request = true, class Acc, class T, class W>
KOKKOS_INLINE_FUNCTION void block_dot(const T* KOKKOS_RESTRICT x, long long stride, const W* KOKKOS_RESTRICT w,
                                      long long n, Acc* out, long long ahead, bool burst) {
  constexpr int lanes = dot_lanes<Acc, T, group>;
  static_assert(rows % group == 0, "rows is a multiple of the group");
  constexpr Requests small = request ? Requests::before : Requests::none;
  constexpr Requests large = request ? Requests::during : Requests::none;
  // The same calls in both branches: through a lambda, the plain loop left block_dot out of line.
  if constexpr (unroll) {
    for_rows<rows / group, true>([&](auto k) {
      const int q = k * group;
      if (burst) {
        interleaved_dot<group, lanes, small, vector_bytes, fused>(x + q * stride, stride, w, n, out + q, ahead);
      } else {
        interleaved_dot<group, lanes, large, vector_bytes, fused>(x + q * stride, stride, w, n, out + q, ahead);
      }
    });
  } else {
    for (int q = 0; q < rows; q += group) {
      if (burst) {
        interleaved_dot<group, lanes, small, vector_bytes, fused>(x + q * stride, stride, w, n, out + q, ahead);
      } else {
        interleaved_dot<group, lanes, large, vector_bytes, fused>(x + q * stride, stride, w, n, out + q, ahead);
      }
    }
  }
}

// g[j] += a * x[j].
template <bool fused = false, class Acc, class T>
KOKKOS_INLINE_FUNCTION void row_axpy(Acc* KOKKOS_RESTRICT g, Acc a, const T* KOKKOS_RESTRICT x, long long n) {
  for (long long j = 0; j < n; ++j) g[j] = add_product<fused>(g[j], a, static_cast<Acc>(x[j]));
}

// g[j] += sum_q a[q] * x[q * stride + j]: one load and store of g per `rows` rows. While the
// rows, already in L1, are added, the same lines of the next `rows` rows (at `next`) are
// requested, so memory keeps streaming during the arithmetic.
// On GCC-compatible host compilers whole cache lines of rows of Acc run on vector types of
// vector_bytes (the same sums in the same order, with no loop control inside a line); the
// remainder, and every other case, runs the plain loop.
template <int rows, int vector_bytes = host_vector_bytes, bool unroll = false, bool fused = false, class Acc,
          class T>
KOKKOS_INLINE_FUNCTION void block_axpy(Acc* KOKKOS_RESTRICT g, const Acc* a, const T* KOKKOS_RESTRICT x,
                                       long long stride, long long n, const T* next) {
  constexpr long long line = 64 / static_cast<long long>(sizeof(T));
#if defined(KPMAP_HOST_VECTORS)
  if constexpr (std::is_same_v<T, Acc>) {
    typedef Acc V __attribute__((vector_size(vector_bytes)));
    constexpr int per = vector_bytes / static_cast<int>(sizeof(Acc)), vectors = static_cast<int>(line) / per;
    V cv[rows];
    broadcast_rows<rows, unroll>(a, cv);
    const long long full = n - n % line;
    for (long long j0 = 0; j0 < full; j0 += line) {
      for (int q = 0; q < rows; ++q) prefetch_hint(next + q * stride + j0);
      for (int v = 0; v < vectors; ++v) {
        V sum;
        std::memcpy(&sum, g + j0 + v * per, sizeof(V));
        for (int q = 0; q < rows; ++q) {
          V xv;
          std::memcpy(&xv, x + q * stride + j0 + v * per, sizeof(V));
          add_products<fused>(sum, cv[q], xv);
        }
        std::memcpy(g + j0 + v * per, &sum, sizeof(V));
      }
    }
    const int rest = static_cast<int>(n % line);  // the last, partial line
    if (rest > 0) {
      for (int q = 0; q < rows; ++q) prefetch_hint(next + q * stride + full);
    }
    for (int k = 0; k < rest; ++k) {
      Acc s = g[full + k];
      for (int q = 0; q < rows; ++q) s = add_product<fused>(s, a[q], x[q * stride + full + k]);
      g[full + k] = s;
    }
    return;
  }
#endif
  Acc c[rows];
  for (int q = 0; q < rows; ++q) c[q] = a[q];
  for (long long j0 = 0; j0 < n; j0 += line) {
    for (int q = 0; q < rows; ++q) prefetch_hint(next + q * stride + j0);
    const long long end = j0 + line < n ? j0 + line : n;
    for (long long j = j0; j < end; ++j) {
      Acc s = g[j];
      for (int q = 0; q < rows; ++q) s = add_product<fused>(s, c[q], static_cast<Acc>(x[q * stride + j]));
      g[j] = s;
    }
  }
}

template <class XView>
inline constexpr bool rows_contiguous_v = std::is_same_v<typename XView::array_layout, Kokkos::LayoutRight>;

// Whether the kernel reads 16-bit rows as words and keeps the gradient sums in pair order
// (half_kernels.hpp): contiguous bf16 or fp16 rows summed in float.
template <class Acc, class XView>
inline constexpr bool pair_order_v = rows_contiguous_v<XView> && std::is_same_v<Acc, float> &&
                                     is_half<typename XView::non_const_value_type>::value;

template <class Acc, bool fused = false, class XView, class WView>
KOKKOS_INLINE_FUNCTION Acc dot_row(const XView& X, long long i, const WView& w) {
  const long long F = static_cast<long long>(X.extent(1));
  if constexpr (rows_contiguous_v<XView>) {
    return row_dot<Acc, fused>(X.data() + i * static_cast<long long>(X.stride(0)), w.data(), F);
  } else {
    Acc s = 0;
    for (long long j = 0; j < F; ++j) s = add_product<fused>(s, static_cast<Acc>(X(i, j)), static_cast<Acc>(w(j)));
    return s;
  }
}

// g[j] += a * X(i, c0 + j) for j < n.
template <class Acc, bool fused = false, class XView>
KOKKOS_INLINE_FUNCTION void axpy_row(Acc* g, Acc a, const XView& X, long long i, long long c0, long long n) {
  if constexpr (rows_contiguous_v<XView>) {
    row_axpy<fused>(g, a, X.data() + i * static_cast<long long>(X.stride(0)) + c0, n);
  } else {
    for (long long j = 0; j < n; ++j) g[j] = add_product<fused>(g[j], a, static_cast<Acc>(X(i, c0 + j)));
  }
}

// Which sums a GradientReduce forms.
//   all:      every column's gradient sum and the residual sums, in one pass over X (fused,
//             backward).
//   residual: each row's residual r_i, stored in `res`, and the residual sums; no column touched
//             (pass 1 of LinearModel::residual / residual_from_z).
//   columns:  the gradient sums of the columns [c0, c0 + width) from the stored r_i (pass 2,
//             LinearModel::gradient_columns, one call per window).
// The split is bitwise the one-pass result on host backends, for any partition of the columns
// into windows, because every part runs the same work items (8 rows each) in the same chunks
// through reduce_items, so each chunk (or, with one chunk, each thread) gets the same items in
// the same order and their sums are joined in the same order; r_i is formed by the same code
// (block_dot / pair_dot as in the one-pass path), and each column's sum is the same sequence
// g_j += r_q x_qj, which block_axpy, pair_axpy and row_axpy perform one column at a time (the
// window only offsets the row pointer; pair order is relative to the window's first column).
enum class Part { all, residual, columns };

// Reduction slots: [0, W) sum of r_i x_ij over the W columns summed (all: the F columns of X;
// columns: the window; residual: none), W sum of r_i, W + 1 sum of r_i^2 (left 0 by columns).
// Residual r_i = x_i . w + b - y_i (Fused tag) or z_i - y_i (FromZ tag, z already holds
// the psum over `model` of the partial products plus b).
struct Fused {};
struct FromZ {};

template <class Tag, class Acc, class XView, class YView, class WView, class BView, class ZView,
          Part part = Part::all, class RView = ZView, long long fixed_f = 0, int vector_bytes = host_vector_bytes,
          bool unroll = false, bool fused = false>
struct GradientReduce {
  using value_type = Acc[];
  using size_type = std::size_t;

  size_type value_count;  // W + 2
  XView X;
  YView y;
  WView w;  // Fused only
  BView b;  // Fused only; extent 0 when the model has no bias
  ZView z;  // FromZ only
  RView res;            // the residuals: written by residual, read by columns
  long long c0 = 0;     // columns only: the window's first column
  long long width = 0;  // columns only: the window's width

  // Rows per work item: the blocked kernels need rows contiguous in memory.
  static constexpr int block = static_cast<int>(fused_block_rows);
  static_assert(!(pair_order_v<Acc, XView> && std::is_same_v<Tag, Fused>) ||
                    std::is_same_v<typename WView::non_const_value_type,
                                   typename XView::non_const_value_type>,
                "16-bit rows are read with weights of their type (the parameters are stored in the "
                "type of X)");

  // The length of a row of X: a compile-time constant in the specialisations for narrow X
  // (fixed_f > 0, see reduce_part), so that the loops over a row unroll and lose their remainders.
  KOKKOS_INLINE_FUNCTION long long row_length() const {
    if constexpr (fixed_f > 0) {
      return fixed_f;
    } else {
      return static_cast<long long>(X.extent(1));
    }
  }

  // The columns whose gradient sums this part forms: [first_col(), first_col() + cols()).
  KOKKOS_INLINE_FUNCTION long long first_col() const { return part == Part::columns ? c0 : 0; }
  KOKKOS_INLINE_FUNCTION long long cols() const {
    if constexpr (part == Part::all) {
      return row_length();
    } else if constexpr (part == Part::columns) {
      return width;
    } else {
      return 0;
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(long long item, value_type acc) const {
    const long long n = static_cast<long long>(X.extent(0));
    const long long i0 = item * block;
    if constexpr (pair_order_v<Acc, XView>) {
      if (i0 + block <= n) return pair_block(i0, acc);
    } else if constexpr (rows_contiguous_v<XView>) {
      if (i0 + block <= n) return rows_block(i0, acc);
    }
    for (long long i = i0; i < i0 + block && i < n; ++i) one_row(i, acc);
  }

  KOKKOS_INLINE_FUNCTION Acc bias() const {  // Fused: b, or 0 for a model without one
    return b.extent(0) > 0 ? static_cast<Acc>(b(0)) : Acc(0);
  }

  KOKKOS_INLINE_FUNCTION Acc residual_offset(long long i) const {  // b - y_i, or z_i - y_i
    if constexpr (std::is_same_v<Tag, Fused>) {
      return bias() - static_cast<Acc>(y(i));
    } else {
      return static_cast<Acc>(z(i)) - static_cast<Acc>(y(i));
    }
  }

  KOKKOS_INLINE_FUNCTION void one_row(long long i, value_type acc) const {
    const long long F = row_length();
    Acc r;
    if constexpr (part == Part::columns) {
      r = res(i);
    } else {
      r = residual_offset(i);
      if constexpr (std::is_same_v<Tag, Fused> && pair_order_v<Acc, XView>) {
        const auto* x = X.data() + i * static_cast<long long>(X.stride(0));
        Acc d;
        pair_dot<1, host_vector_bytes, false, fused>(x, 0, w.data(), F, &d, x, 0);
        r += d;
      } else if constexpr (std::is_same_v<Tag, Fused>) {
        r += dot_row<Acc, fused>(X, i, w);
      }
    }
    if constexpr (part != Part::residual) {
      if constexpr (pair_order_v<Acc, XView>) {  // the gradient sums are in pair order
        const auto* x = X.data() + i * static_cast<long long>(X.stride(0)) + first_col();
        pair_axpy<1, host_vector_bytes, false, fused>(acc, &r, x, 0, cols(), x, 1);
      } else {
        axpy_row<Acc, fused>(acc, r, X, i, first_col(), cols());
      }
    }
    add_residuals<1>(i, &r, acc);
  }

  // The rows of the block that the axpy of block i0 requests (x points at block i0's first row):
  // axpy_request_bytes / (a block's bytes) blocks further on, rounded down, and at least the next
  // block; or x itself where that block would pass the end of X, so that no prefetch pointer
  // leaves it.
  template <class P>
  KOKKOS_INLINE_FUNCTION P* next_rows(long long i0, P* x, long long stride) const {
    const long long bytes = block * stride * static_cast<long long>(sizeof(P));
    const long long blocks = bytes <= 0 || bytes >= axpy_request_bytes ? 1 : axpy_request_bytes / bytes;
    return i0 + (blocks + 1) * block <= static_cast<long long>(X.extent(0)) ? x + blocks * block * stride : x;
  }

  KOKKOS_INLINE_FUNCTION void rows_block(long long i0, value_type acc) const {
    using T = typename XView::non_const_value_type;
    const long long F = row_length();
    const long long stride = static_cast<long long>(X.stride(0));
    Acc r[block];
    for_rows<block, unroll>([&](auto q) {
      if constexpr (part == Part::columns) {
        r[q] = res(i0 + q);
      } else {
        r[q] = residual_offset(i0 + q);
      }
    });
    // The dot products request the rows prefetch_distance bytes, or a group of rows, ahead; the
    // rows themselves at the end of X, so that no pointer leaves it.
    const int group = dot_group<T>(F);
    const long long far = prefetch_distance / static_cast<long long>(sizeof(T));
    const long long ahead = far > group * stride ? far : group * stride;
    const bool inside = (i0 + block) * stride + ahead <= static_cast<long long>(X.extent(0)) * stride;
    static_assert(split_block_bytes / block >= interleave_bytes<T>, "the halves' rows are dot_group 4");
    if (std::is_same_v<Tag, Fused> && part == Part::all &&
        block * F * static_cast<long long>(sizeof(T)) >= split_block_bytes) {  // wide rows: two halves
      rows_part<block / 2, 4>(i0, 0, r, inside ? ahead : 0, acc);
      rows_part<block / 2, 4>(i0, block / 2, r, inside ? ahead : 0, acc);
    } else if (group == 4) {
      rows_part<block, 4>(i0, 0, r, inside ? ahead : 0, acc);
    } else {
      rows_part<block, 1>(i0, 0, r, inside ? ahead : 0, acc);
    }
    add_residuals<block>(i0, r, acc);
  }

  // Two exceptions in the dot products of the compile-time widths, for fp64 rows, which stream
  // faster so out of cache (measured on a Zen 5 host, docs/performance.md); the sums are the same.
  // At 16 features (128-byte rows) the loop over a block's rows stays a loop where the rest of
  // the block is unrolled: unrolled, the 8 rows' dot products and their requests become one
  // straight run. At 32 and 64 features the dot products take the row length at run time (the
  // axpy keeps the constant), which in cache is slower.
  static constexpr bool rolled_dot = fixed_f == 16 && std::is_same_v<Acc, double>;
  KOKKOS_INLINE_FUNCTION long long dot_length() const {
    if constexpr ((fixed_f == 32 || fixed_f == 64) && std::is_same_v<Acc, double>) {
      return static_cast<long long>(X.extent(1));
    } else {
      return row_length();
    }
  }

  // Rows [i0 + h, i0 + h + rows) of the whole block at i0, with their residuals r[h, h + rows):
  // their dot products (Fused, but for columns), `group` rows at a time, added to r, then their
  // axpy, which requests the same rows of a block further on (next_rows). In the AVX-512 version
  // the dot products of interleaved rows followed by the axpy request nothing themselves, which
  // streams faster there (docs/performance.md); the AVX2 version streams slower without them.
  template <int rows, int group>
  KOKKOS_INLINE_FUNCTION void rows_part(long long i0, int h, Acc* r, long long ahead, value_type acc) const {
    const long long stride = static_cast<long long>(X.stride(0));
    const auto* x = X.data() + i0 * stride;
    if constexpr (std::is_same_v<Tag, Fused> && part != Part::columns) {
      constexpr bool request = !(vector_bytes == 64 && group == 4 && part == Part::all);
      // Tested on row_length(), a constant at the compile-time widths. Tested on dot_length()
      // (the run-time length at fp64's 32 and 64 features), the bound let GCC peel the dot
      // product's loop there.
      const bool burst = group * row_length() * static_cast<long long>(sizeof(*x)) <= burst_bytes;
      Acc d[rows];
      block_dot<rows, group, vector_bytes, unroll && !rolled_dot, fused, request>(x + h * stride, stride, w.data(),
                                                                                  dot_length(), d, ahead, burst);
      for_rows<rows, unroll>([&](auto q) { r[h + q] += d[q]; });
    }
    if constexpr (part != Part::residual) {
      block_axpy<rows, vector_bytes, unroll, fused>(acc, r + h, x + h * stride + first_col(), stride, cols(),
                                                    next_rows(i0, x, stride) + h * stride + first_col());
    }
  }

  // How far ahead of block i0 (in elements) pair_block requests rows: prefetch_distance bytes or
  // one block, whichever is further; 0 (the block's own rows) where that would leave X. Measured
  // out of cache with bf16 (docs/performance.md): at 64 features (blocks of 1 KiB), requests
  // 16 KiB ahead stream faster than the next block's.
  KOKKOS_INLINE_FUNCTION long long pair_ahead(long long i0, long long stride) const {
    using T = typename XView::non_const_value_type;
    const long long one_block = block * stride;
    const long long far = prefetch_distance / static_cast<long long>(sizeof(T));
    const long long ahead = far < one_block ? one_block : far;
    return (i0 + block) * stride + ahead <= static_cast<long long>(X.extent(0)) * stride ? ahead : 0;
  }

  // 16-bit rows (half_kernels.hpp). With a dot product, it requests the first half of the rows at
  // pair_ahead and the axpy the second half, so memory streams during both phases: 16-bit rows
  // have at least twice fp32's arithmetic per byte, and requesting every row in the axpy, as
  // rows_block does, left memory idle for longer (measured: docs/performance.md). A pass with
  // only one of the two phases requests every row in it.
  KOKKOS_INLINE_FUNCTION void pair_block(long long i0, value_type acc) const {
    const long long F = row_length();
    const long long stride = static_cast<long long>(X.stride(0));
    const auto* x = X.data() + i0 * stride;
    const auto* next = x + pair_ahead(i0, stride);
#if defined(KPMAP_HALF_VECTORS) && defined(KPMAP_AVX2_DISPATCH)
    using Y = typename YView::non_const_value_type;
    if constexpr (vector_bytes == 64 && part == Part::all && std::is_same_v<Tag, Fused> && std::is_same_v<Y, bf16> &&
                  !std::is_same_v<typename YView::array_layout, Kokkos::LayoutStride>) {
      // The AVX-512 version: the 8 dot products, residuals and their sums on vectors (half_kernels.hpp),
      // the same sums as below.
      alignas(32) Acc r[block];
      pair_residuals8_avx512(x, stride, w.data(), F, next, block / 2, y.data() + i0, bias(), r, acc + F);
      asm volatile("" : "+m"(r));  // the axpy broadcasts each residual from memory (a load, no shuffle)
      const auto* xa = x;
      const auto* nexta = next;
      launder(xa), launder(nexta);
      pair_axpy<block, vector_bytes, unroll, fused>(acc, r, xa, stride, F, nexta, block / 2);
      return;
    }
#endif
    Acc r[block];
    int axpy_prefetch_from = 0;
    if constexpr (part == Part::columns) {
      for_rows<block, unroll>([&](auto q) { r[q] = res(i0 + q); });
    } else {
      if constexpr (std::is_same_v<Tag, Fused>) {
        pair_dot<block, vector_bytes, unroll, fused>(x, stride, w.data(), F, r, next,
                                                     part == Part::all ? block / 2 : block);
        axpy_prefetch_from = block / 2;
      } else {
        for_rows<block, unroll>([&](auto q) { r[q] = 0; });
      }
      for_rows<block, unroll>([&](auto q) { r[q] += residual_offset(i0 + q); });
    }
    if constexpr (part != Part::residual) {
      pair_axpy<block, vector_bytes, unroll, fused>(acc, r, x + first_col(), stride, cols(), next + first_col(),
                                                    axpy_prefetch_from);
    }
    add_residuals<block>(i0, r, acc);
  }

  // The residual sums of rows [i0, i0 + rows) (all, residual), and the residuals themselves
  // (residual); nothing for columns. A block's residuals and their squares are each summed as a
  // tree (tree_sum, tree_squares) and added to the thread's sums once, so that the next block
  // waits on one add per sum and not on one per row (docs/performance.md).
  template <int rows>
  KOKKOS_INLINE_FUNCTION void add_residuals(long long i0, const Acc* r, value_type acc) const {
    if constexpr (part == Part::residual) {
      for_rows<rows, unroll>([&](auto q) { res(i0 + q) = r[q]; });
    }
    if constexpr (part != Part::columns) {
      const long long W = cols();
      if constexpr (rows == 1) {
        acc[W] += r[0];
        acc[W + 1] = add_product<fused>(acc[W + 1], r[0], r[0]);
      } else {
        acc[W] += tree_sum<rows>(r);
        acc[W + 1] += tree_squares<rows, fused>(r);
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void init(value_type acc) const {
    for (size_type k = 0; k < value_count; ++k) acc[k] = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type dst, const value_type src) const {
    for (size_type k = 0; k < value_count; ++k) dst[k] += src[k];
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile Acc* dst, const volatile Acc* src) const {
    for (size_type k = 0; k < value_count; ++k) dst[k] += src[k];
  }
#endif
};

// grad_w += 2 * sums[0, W), grad_b += 2 * sums[W] (when grad_b has a slot); returns sums[W+1],
// where W = grad_w.extent(0) (0: an empty grad_w, for the residual part).
// pair_order: the reduction kept the gradient sums in pair order (pair_order_v).
// then (model/epilogue.hpp): called on the slots as they are written; grad_w(0) is slot `first`
// of the flat gradient (and grad_b(0) slot first + W). On the host the slots go in runs of
// epilogue_run, each added (a loop without branches, which the compiler vectorises) and then
// handed to then.host while still in L1.
template <class Acc, class GWView, class GBView, class Then = NoEpilogue>
double add_gradient(const execution_space& exec, const View1<Acc>& sums, const GWView& grad_w,
                    const GBView& grad_b, bool pair_order, long long first = 0, const Then& then = Then()) {
  using Range = Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>;
  const long long F = static_cast<long long>(grad_w.extent(0));
  const bool has_b = grad_b.extent(0) > 0;
  if constexpr (host_execution_v) {
    const long long slots = F + (has_b ? 1 : 0);
    Kokkos::parallel_for(
        "kpmap::model::add_gradient", Range(exec, 0, (slots + epilogue_run - 1) / epilogue_run), [=](long long c) {
          const long long j0 = c * epilogue_run, j1 = slots < j0 + epilogue_run ? slots : j0 + epilogue_run;
          const long long w1 = j1 < F ? j1 : F;
          if (pair_order) {
            for (long long j = j0; j < w1; ++j) grad_w(j) += Acc(2) * sums(pair_slot(j, F));
          } else {
            for (long long j = j0; j < w1; ++j) grad_w(j) += Acc(2) * sums(j);
          }
          if (j1 > F) grad_b(0) += Acc(2) * sums(F);
          then.host(first + j0, first + j1);
        });
  } else {
    Kokkos::parallel_for(
        "kpmap::model::add_gradient", Range(exec, 0, F + 1), KOKKOS_LAMBDA(long long j) {
          if (j < F) {
            grad_w(j) += Acc(2) * sums(pair_order ? pair_slot(j, F) : j);
          } else if (has_b) {
            grad_b(0) += Acc(2) * sums(F);
          } else {
            return;
          }
          then(first + j);
        });
  }
  Acc loss = 0;
  Kokkos::deep_copy(exec, loss, Kokkos::subview(sums, F + 1));
  exec.fence();
  return static_cast<double>(loss);
}

#if defined(KPMAP_AVX2_DISPATCH)
// f(item, acc) compiled for AVX2 and FMA, or for AVX-512 (host_isa.hpp): flatten inlines every
// call in it, the kernel's loops included, so all of it is code of that target.
template <class Reduce>
__attribute__((target("avx2,fma"), flatten)) void run_avx2(const Reduce& f, long long item,
                                                          typename Reduce::value_type acc) {
  f(item, acc);
}
template <class Reduce>
__attribute__((target(KPMAP_AVX512_TARGET), flatten)) void run_avx512(const Reduce& f, long long item,
                                                                     typename Reduce::value_type acc) {
  f(item, acc);
}

// A GradientReduce with wide vector loops (32 bytes, or 64 in the AVX-512 version), its loops over
// a block's rows unrolled (for_rows) and every product fused with the sum it is added to
// (add_product, add_products), run as the code of `isa` (avx2 or avx512).
// Kokkos calls operator() once per work item of 8 rows.
template <class Reduce, HostIsa isa>
struct WideReduce {
  using value_type = typename Reduce::value_type;
  using size_type = typename Reduce::size_type;

  size_type value_count;
  Reduce f;

  void operator()(long long item, value_type acc) const {
    if constexpr (isa == HostIsa::avx512) {
      run_avx512(f, item, acc);
    } else {
      run_avx2(f, item, acc);
    }
  }
  void init(value_type acc) const { f.init(acc); }
  void join(value_type dst, const value_type src) const { f.join(dst, src); }
#if KOKKOS_VERSION < 40000
  using scalar = std::remove_extent_t<value_type>;
  void join(volatile scalar* dst, const volatile scalar* src) const { f.join(dst, src); }
#endif
};
#endif

// Whether the AVX-512 version runs fp32 / fp64 rows of `features` elements (HostIsa::avx512):
// fp64 rows of at least 4 KiB (512 features), fp32 rows of at least 8 KiB (2048 features); the
// AVX2 version runs narrower ones. Its 64-byte vectors hold a cache line of a row in the axpy, and
// in fp64 a row's 8 partial sums in the dot products (fp32's 8 stay on 32-byte vectors). Measured
// out of cache on a Zen 5 host (docs/performance.md; the sweep over widths in commit 0425ab2's
// message): from these widths on it streams faster than the AVX2 version; at narrower ones (fp64
// up to 256 features, fp32 up to 1024) slower, although it is faster in cache.
template <class Acc>
constexpr bool wide_rows_avx512(long long features) {
  return features * static_cast<long long>(sizeof(Acc)) >= (sizeof(Acc) == 8 ? 4096 : 8192);
}

// sums <- the sum of f over the work items [0, items) (f.value_count values). On a host backend,
// with more than one chunk of `chunk` consecutive items, the chunks go to the threads dynamically
// (Kokkos::Dynamic: a thread that has run out of chunks takes another thread's), each chunk
// summed from zero into its own row of a scratch view, and the chunks' sums are added in chunk
// order: the result depends on the chunks, not on which thread ran which, so it is bitwise the
// same from run to run, and a thread that the host slows down does not hold up the others, as it
// does with a static split (docs/performance.md). One chunk (one thread, or few items), and on
// GPU backends: Kokkos::parallel_reduce.
template <class Reduce>
void reduce_items(const char* label, const execution_space& exec, const Reduce& f, long long items, long long chunk,
                  const View1<std::remove_extent_t<typename Reduce::value_type>>& sums) {
  using Acc = std::remove_extent_t<typename Reduce::value_type>;
  if constexpr (host_execution_v) {
    if (chunk < items) {
      const long long n = static_cast<long long>(f.value_count), chunks = (items + chunk - 1) / chunk;
      const View2<Acc> partial(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::model::chunk_sums"), chunks, n);
      Kokkos::RangePolicy<execution_space, Kokkos::Schedule<Kokkos::Dynamic>, Kokkos::IndexType<long long>> policy(
          exec, 0, chunks);
      policy.set_chunk_size(1);
      Kokkos::parallel_for(label, policy, [=](long long c) {
        Acc* acc = &partial(c, 0);
        f.init(acc);
        const long long end = (c + 1) * chunk < items ? (c + 1) * chunk : items;
        for (long long item = c * chunk; item < end; ++item) f(item, acc);
      });
      Kokkos::parallel_for(
          "kpmap::model::join_chunks", Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, n),
          [=](long long k) {
            Acc s = partial(0, k);
            for (long long c = 1; c < chunks; ++c) s += partial(c, k);
            sums(k) = s;
          });
      return;
    }
  }
  Kokkos::parallel_reduce(label, Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, items), f,
                          sums);
}

// The reduction of `part` over all rows of X by GradientReduce<..., fixed_f>, or its AVX2 or
// AVX-512 version (host_isa.hpp).
template <class Tag, class Acc, Part part, long long fixed_f, class XView, class YView, class WView, class BView,
          class ZView, class RView>
void reduce_part_as(const execution_space& exec, const XView& X, const YView& y, const WView& w, const BView& b,
                    const ZView& z, const RView& res, long long c0, long long width, const View1<Acc>& sums) {
  using functor = GradientReduce<Tag, Acc, XView, YView, WView, BView, ZView, part, RView, fixed_f>;
  const long long W = part == Part::all ? static_cast<long long>(X.extent(1)) : part == Part::columns ? width : 0;
  if (!fused_fits(W, sizeof(Acc))) {
    throw InputError("kpmap::LinearModel: the fused kernel keeps " + std::to_string(W + 2) +
                     " gradient sums per thread, which this GPU backend holds in shared memory: at most " +
                     std::to_string(fused_max_features(sizeof(Acc))) + " features with " +
                     std::to_string(8 * sizeof(Acc)) + "-bit sums (GradientKernel::team takes any width)");
  }
  const functor f{static_cast<std::size_t>(W + 2), X, y, w, b, z, res, c0, width};
  const auto items = (static_cast<long long>(X.extent(0)) + functor::block - 1) / functor::block;
  using T = typename XView::non_const_value_type;
  // Every part the same chunks (sized for the sums of X's full width): the parts split alike.
  const long long chunk = fused_chunk_items(static_cast<long long>(X.extent(0)), static_cast<long long>(X.extent(1)),
                                            sizeof(T), sizeof(Acc), static_cast<long long>(exec.concurrency()));
  const char* label = part == Part::all        ? "kpmap::model::fused_gradient"
                      : part == Part::residual ? "kpmap::model::residual"
                                               : "kpmap::model::gradient_columns";
#if defined(KPMAP_AVX2_DISPATCH)
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename execution_space::memory_space>::accessible) {
    const HostIsa isa = host_isa();
    // The rows the AVX-512 version can run: bf16 rows at any width, and fp32 / fp64 rows of the
    // generic width (the compile-time widths are below wide_rows_avx512's).
    constexpr bool bf16_rows = pair_order_v<Acc, XView> && std::is_same_v<T, bf16>;
    constexpr bool acc_rows = fixed_f == 0 && rows_contiguous_v<XView> && std::is_same_v<T, Acc>;
    if constexpr (bf16_rows || acc_rows) {
      if (isa == HostIsa::avx512 && (bf16_rows || wide_rows_avx512<Acc>(X.extent(1)))) {
        using wide = GradientReduce<Tag, Acc, XView, YView, WView, BView, ZView, part, RView, fixed_f, 64, true, true>;
        const WideReduce<wide, HostIsa::avx512> f512{f.value_count, wide{f.value_count, X, y, w, b, z, res, c0, width}};
        reduce_items(label, exec, f512, items, chunk, sums);
        return;
      }
    }
    if (isa == HostIsa::avx2 || isa == HostIsa::avx512) {
      using wide = GradientReduce<Tag, Acc, XView, YView, WView, BView, ZView, part, RView, fixed_f, 32, true, true>;
      const WideReduce<wide, HostIsa::avx2> f_avx2{f.value_count, wide{f.value_count, X, y, w, b, z, res, c0, width}};
      reduce_items(label, exec, f_avx2, items, chunk, sums);
      return;
    }
  }
#endif
  reduce_items(label, exec, f, items, chunk, sums);
}

// Whether the one-pass reduction has compile-time row lengths: contiguous fp32 / fp64 rows, and
// contiguous bf16 rows summed in float.
template <class Acc, class XView>
inline constexpr bool fixed_widths_v =
    (rows_contiguous_v<XView> && std::is_same_v<Acc, typename XView::non_const_value_type> &&
     (std::is_same_v<Acc, float> || std::is_same_v<Acc, double>)) ||
    (pair_order_v<Acc, XView> && std::is_same_v<typename XView::non_const_value_type, bf16>);

// sums (extent W + 2, see Part) <- the reduction of `part` over all rows of X; res: the
// residuals (written by residual, read by columns); [c0, c0 + width): the columns' window.
// The one-pass reduction over narrow contiguous fp32, fp64 or bf16 rows (8 to 64 features) runs with
// the row length as a compile-time constant: the same arithmetic in the same order (the result
// is bitwise the generic one), with the per-row loops unrolled, where the loop control, the
// remainders and the folds would otherwise cost as much as the row's arithmetic (but for the dot
// products of fp64 rows of 32 and 64 features: GradientReduce::dot_length).
template <class Tag, class Acc, Part part, class XView, class YView, class WView, class BView, class ZView, class RView>
void reduce_part(const execution_space& exec, const XView& X, const YView& y, const WView& w, const BView& b,
                 const ZView& z, const RView& res, long long c0, long long width, const View1<Acc>& sums) {
  if constexpr (part == Part::all && fixed_widths_v<Acc, XView>) {
    switch (X.extent(1)) {
      case 8: return reduce_part_as<Tag, Acc, part, 8>(exec, X, y, w, b, z, res, c0, width, sums);
      case 16: return reduce_part_as<Tag, Acc, part, 16>(exec, X, y, w, b, z, res, c0, width, sums);
      case 32: return reduce_part_as<Tag, Acc, part, 32>(exec, X, y, w, b, z, res, c0, width, sums);
      case 64: return reduce_part_as<Tag, Acc, part, 64>(exec, X, y, w, b, z, res, c0, width, sums);
      default: break;
    }
  }
  reduce_part_as<Tag, Acc, part, 0>(exec, X, y, w, b, z, res, c0, width, sums);
}

// sums (extent F + 2) <- the reduction over all rows of X.
template <class Tag, class Acc, class XView, class YView, class WView, class BView, class ZView>
void reduce_rows(const execution_space& exec, const XView& X, const YView& y, const WView& w, const BView& b,
                 const ZView& z, const View1<Acc>& sums) {
  reduce_part<Tag, Acc, Part::all>(exec, X, y, w, b, z, z, 0, 0, sums);
}

// z_i = x_i . w (+ b when b has a slot), one thread per row.
template <class Acc, class XView, class WView, class BView, class ZView>
void rows_times_w(const execution_space& exec, const XView& X, const WView& w, const BView& b, const ZView& z) {
  const bool has_b = b.extent(0) > 0;
  Kokkos::parallel_for(
      "kpmap::model::forward_partial",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, static_cast<long long>(X.extent(0))),
      KOKKOS_LAMBDA(long long i) {
        Acc s = dot_row<Acc>(X, i, w);
        if (has_b) s += static_cast<Acc>(b(0));
        z(i) = s;
      });
}

}  // namespace kpmap::model_detail
