// Every cross-rank reduction of a training step goes through StepComm: the strategy
// (allreduce or reduce_scatter + all_gather), the buckets and their overlap with compute change
// this class only.
//
//   sum_partial_products(z): psum over `model` of this model rank's partial X w (+ b).
//   start(k) ... finish():   the weighted pmean over `data` of the step's statistics
//                            stats = [grad sums..., loss_sum, count] (Acc, the kernels'
//                            accumulation type; n + 2 slots for n parameters), bucket by bucket.
//   gradient_cast(...):      the cast of the gradient slots to the wire, as the gradient kernels'
//                            epilogue (model/epilogue.hpp), before start().
//   with_mean_gradient(f):   the mean gradient, read from the reduced wire by the optimizer.
//   gather_params(shard):    reduce_scatter only: all_gather of the updated shards over `data`.
//   own_nonfinite(k), check_finite(...): whether any rank's loss or gradient is not finite, and
//                            the lowest rank that saw it (one pmin of a float flag over the whole mesh
//                            where the reduced statistics differ between ranks, or under dynamic
//                            loss scaling; otherwise only at a step that has one).
//   sum_exact(acc):          precision.reproducible: the psum over `data` of the step's exact
//                            accumulators (and max_over_model, agree_max for their bounds).
//
// The wire. With precision.comm equal to the accumulation type and no loss scaling, the sums
// travel as they are and the optimizer divides them by the psum of the counts as it reads them
// (DividedWire). Otherwise every slot is first cast to the wire type C (precision.comm),
// pre-divided by the step's global row count B (and the gradient and loss slots multiplied by the
// loss scale):
//   wire = C([scale * grad_sums / B..., scale * loss_sum / B, count / B])
// so each rank's contribution is a share of a mean and a 16-bit sum cannot overflow where the
// mean itself fits; after the psum the mean gradient is wire * (1 / (psum(count / B) * scale)),
// unscaled in the master type M as the optimizer reads it (ScaledWire). The loss slot is not
// multiplied by the loss scale but by 2^-e, where 2^e is the previous step's loss rounded to a
// power of two (every rank knows it; before the first step, start_loss_exponent agrees on the
// largest local mean of y^2, the loss at w = 0): the loss then travels as a number near 1, which no
// 16-bit type flushes or overflows, and it keeps the wire type's relative precision (bf16: 8
// significant bits). A loss that still comes back 0 or Inf moves e by 16 for the next step. The
// slots keep their meaning, so a 16-bit wire moves exactly half the bytes of an fp32 one. The cast
// is applied on a one-rank data axis too (nothing moves), so the answer does not depend on how many
// ranks share the batch. The gradient slots are cast by the gradient kernels as they finish them
// (gradient_cast: their epilogue, WireCast), and start() casts the rest; to_wire alone writes the
// same wire.
//
// Strategies. allreduce: the wire is the n + 2 slots in order, psum'ed over `data`; every rank
// gets the whole mean gradient. reduce_scatter: data rank r owns the contiguous shard
// [r s, r s + s) of the n parameters, s = ceil(n / D) (the last shards are padded with zeros
// past n; a shard may be all padding when D > n). Its "extended shard" is [shard's gradient sums,
// loss_sum, count], s + 2 slots: the loss and the count are copied into every rank's block, so one
// psum_scatter gives each rank its shard of the gradient and the whole loss and count. The wire
// holds the D extended shards (D (s + 2) slots) and each rank receives its own.
//
// Buckets (bucket_bytes > 0): c = bucket_bytes / sizeof(C) wire elements per bucket (at least 1).
// allreduce: bucket k is wire slots [k c, k c + c). reduce_scatter: bucket k is offsets
// [k c, k c + c) of every extended shard, laid out rank by rank so that it is one contiguous
// psum_scatter of D equal blocks; the wire is ordered bucket by bucket, and the blocks a rank
// receives, in bucket order, are its extended shard. Every slot is summed over the same ranks
// whatever the buckets, so the buckets do not change the sums.
//
// Overlap: start(k) is called as soon as bucket k's slots (bucket_slots(k)) are final; the
// reduction then runs while the caller computes the next bucket's slots, and progress() between
// buckets drives MPICH (which moves a non-blocking collective only inside MPI calls unless
// MPICH_ASYNC_PROGRESS=1). finish() waits for all of them.
#pragma once

#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kpmap/collectives/collectives.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/data/synthetic.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "kpmap/train/comm_spec.hpp"

namespace kpmap {

// The mean over the global batch, as the step sees it after the reduction.
struct StepTotals {
  double loss = 0;  // mean squared error of the global batch (the unscaled loss)
};

// Where a step's Inf or NaN was seen, the same on every rank (StepComm::check_finite).
struct FiniteCheck {
  int rank = -1;        // the lowest mesh rank that saw one (-1: every value was finite)
  bool in_own = false;  // in that rank's own loss or gradient sums, before the reduction
                        // (false: only the reduced statistics were non-finite, e.g. an overflow)
  bool any() const { return rank >= 0; }
};

namespace step_comm_detail {

// Where each wire position's value comes from (see the header comment): slot(p) is the index
// into stats, or -1 for padding past the last parameter.
struct WireLayout {
  long long n = 0;       // parameters (stats has n + 2 slots)
  long long ranks = 1;   // D, the data-axis size (1 for allreduce: the layout is the identity)
  long long shard = 0;   // s (reduce_scatter), or n + 2 (allreduce: one block of all slots)
  long long bucket = 0;  // c, elements per bucket and block
  bool sharded = false;

  long long block() const { return sharded ? shard + 2 : shard; }  // slots per rank's block
  long long buckets() const { return (block() + bucket - 1) / bucket; }
  long long bucket_width(long long k) const { return std::min(bucket, block() - k * bucket); }  // c_k
  // Bucket k's positions in the wire: [begin, begin + ranks * c_k).
  long long bucket_begin(long long k) const { return ranks * k * bucket; }

  KOKKOS_INLINE_FUNCTION long long slot(long long p) const {
    if (!sharded) return p;
    const long long k = p / (ranks * bucket), q = p - ranks * k * bucket;
    const long long width = bucket < shard + 2 - k * bucket ? bucket : shard + 2 - k * bucket;
    const long long r = q / width, o = k * bucket + q % width;
    if (o >= shard) return n + (o - shard);
    return r * shard + o < n ? r * shard + o : -1;
  }
  // The inverse for gradient slots: the position of slot i < n, and the end of the run of slots
  // from i whose positions follow one another (one rank's block of one bucket).
  KOKKOS_INLINE_FUNCTION long long position(long long i) const {
    if (!sharded) return i;
    const long long r = i / shard, o = i - r * shard, k = o / bucket;
    const long long width = bucket < shard + 2 - k * bucket ? bucket : shard + 2 - k * bucket;
    return ranks * k * bucket + r * width + (o - k * bucket);
  }
  long long run_end(long long i) const {
    if (!sharded) return n;
    const long long r = i / shard, k = (i - r * shard) / bucket;
    return std::min({r * shard + (k + 1) * bucket, (r + 1) * shard, n});
  }
};

// C(value * factor), the product in float for float sums (rounded once more to C), else in double.
template <class Acc, class C>
KOKKOS_INLINE_FUNCTION C scaled_to(Acc value, double factor) {
  if constexpr (std::is_same_v<Acc, float>) {
    return static_cast<C>(value * static_cast<float>(factor));
  } else {
    return static_cast<C>(static_cast<double>(value) * factor);
  }
}

// Whether the execution space runs on the host, and the elements that one index of a host loop
// covers where a vectorised inner loop (the compiler's or detail's SIMD routines) does the work.
inline constexpr bool runs_on_host = std::is_same_v<execution_space::memory_space, Kokkos::HostSpace>;
inline constexpr long long host_run = 4096;

// Whether to_wire's gradient run takes the host's SIMD cast (detail::scaled_to_bf16): fp32 sums,
// a bf16 wire, and an execution space that runs on the host.
template <class Acc, class C>
inline constexpr bool host_bf16_cast = std::is_same_v<Acc, float> && std::is_same_v<C, bf16> && runs_on_host;

// wire(p) = C(stats(slot(p)) * factor) for the positions of bucket k: grad_factor for the
// gradient slots, then the loss slot's and the count slot's factors; 0 for padding.
// gradient_cast: the gradient slots are in the wire already (WireCast); only the rest is cast.
// Each rank's block of the bucket starts with a run of gradient slots that are contiguous in
// stats (r s + k c onwards; with allreduce, one block: slot p is position p): that run takes one
// kernel without branches, which the compiler vectorises (the cast to a 16-bit wire is most of
// its time), or for bf16 on the host an explicit SIMD loop. What follows it in the block
// (padding past n, the loss and count slots) takes the general kernel; it is at most a few
// elements unless a shard is mostly padding.
template <class Acc, class C>
void to_wire(const execution_space& exec, const WireLayout& layout, const View1<Acc>& stats, const View1<C>& wire,
             long long k, double grad_factor, double loss_factor, double count_factor, bool gradient_cast = false) {
  using Range = Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>;
  const long long n = layout.n, width = layout.bucket_width(k), first = k * layout.bucket;
  for (long long r = 0; r < layout.ranks; ++r) {
    const long long begin = layout.bucket_begin(k) + r * width, end = begin + width;
    const long long base = layout.sharded ? r * layout.shard : 0;  // stats index of the block's slot 0
    // gradient slots of this block: o < shard (sharded) and base + o < n
    const long long grad_end = layout.sharded ? std::min(layout.shard, n - base) : n;
    const long long run = std::max(0LL, std::min(first + width, grad_end) - first);
    if (run > 0 && !gradient_cast) {
      const long long offset = base + first - begin;  // stats index - wire position
      if constexpr (host_bf16_cast<Acc, C>) {
        // chunks of host_run slots, each cast by the host's SIMD loop (bitwise scaled_to)
        const float* from = stats.data() + begin + offset;
        bf16* to = wire.data() + begin;
        const float factor = static_cast<float>(grad_factor);
        const long long chunk = host_run;
        Kokkos::parallel_for("kpmap::train::to_wire", Range(exec, 0, (run + chunk - 1) / chunk),
                             [=](long long c) {
                               detail::scaled_to_bf16(from + c * chunk, factor, to + c * chunk,
                                                      std::min(chunk, run - c * chunk));
                             });
      } else {
        Kokkos::parallel_for(
            "kpmap::train::to_wire", Range(exec, begin, begin + run),
            KOKKOS_LAMBDA(long long p) { wire(p) = scaled_to<Acc, C>(stats(p + offset), grad_factor); });
      }
    }
    if (begin + run == end) continue;
    Kokkos::parallel_for(
        "kpmap::train::to_wire", Range(exec, begin + run, end), KOKKOS_LAMBDA(long long p) {
          const long long i = layout.slot(p);
          if (i < 0) {
            wire(p) = static_cast<C>(0.0f);
            return;
          }
          const double factor = i < n ? grad_factor : i == n ? loss_factor : count_factor;
          wire(p) = scaled_to<Acc, C>(stats(i), factor);
        });
  }
}

// The cast of the gradient slots to the wire as the gradient kernel finishes them: the epilogue
// (model/epilogue.hpp) of the step's last gradient call of each slot, so that the slots are cast
// while still in L1 and not in a pass of their own (StepComm::gradient_cast). The same values as
// to_wire's: wire(position(i)) = C(stats(i) * factor) for gradient slot i. The wire type is a
// run-time choice (one type of epilogue, not one per wire type, for the gradient kernels); the
// wire of the other types is empty, and a WireCast without a wire (active false) does nothing.
template <class Acc>
struct WireCast {
  Dtype type = Dtype::fp32;
  bool active = false;
  View1<Acc> stats;
  WireLayout layout;
  double factor = 1.0;
  View1<double> fp64;
  View1<float> fp32;
  View1<bf16> bf16s;
  View1<fp16> fp16s;

  void host(long long j0, long long j1) const {
    if (!active) return;
    for (long long i = j0; i < j1;) {
      const long long end = std::min(j1, layout.run_end(i)), p = layout.position(i);
      switch (type) {
        case Dtype::fp64: cast_run(i, end, fp64.data() + p); break;
        case Dtype::fp32: cast_run(i, end, fp32.data() + p); break;
        case Dtype::fp16: cast_run(i, end, fp16s.data() + p); break;
        case Dtype::bf16:
          if constexpr (std::is_same_v<Acc, float>) {
            detail::scaled_to_bf16(stats.data() + i, static_cast<float>(factor), bf16s.data() + p, end - i);
          } else {
            cast_run(i, end, bf16s.data() + p);
          }
          break;
      }
      i = end;
    }
  }
  KOKKOS_INLINE_FUNCTION void operator()(long long i) const {
    if (!active) return;
    const long long p = layout.position(i);
    const Acc v = stats(i);
    switch (type) {
      case Dtype::fp64: fp64(p) = scaled_to<Acc, double>(v, factor); break;
      case Dtype::fp32: fp32(p) = scaled_to<Acc, float>(v, factor); break;
      case Dtype::bf16: bf16s(p) = scaled_to<Acc, bf16>(v, factor); break;
      case Dtype::fp16: fp16s(p) = scaled_to<Acc, fp16>(v, factor); break;
    }
  }

 private:
  template <class C>
  void cast_run(long long i, long long end, C* to) const {
    const Acc* from = stats.data();
    for (long long q = i; q < end; ++q) to[q - i] = scaled_to<Acc, C>(from[q], factor);
  }
};

// The mean gradient as the optimizer reads it from the reduced wire, element by element
// (Optimizer::apply calls operator() once per parameter): no pass of its own over the gradient
// and no buffer for it. n: the parameters this rank updates (the wire's first n slots).
//
// DividedWire, the uncast wire (C the accumulation type): g(i) = M(wire(i) / count), divided in
// C, as the sums were made.
template <class C, class M>
struct DividedWire {
  View1<const C> wire;
  C count;
  long long n;
  long long size() const { return n; }
  KOKKOS_INLINE_FUNCTION M operator()(long long i) const { return static_cast<M>(wire(i) / count); }
};

// ScaledWire, the cast wire: g(i) = M(P(wire(i)) * factor), factor = 1 / (count * scale). P is
// float when M is float and C no wider (the product's one rounding is far below the wire's own),
// else double. A product and not a quotient: a division by a value known only at run time is the
// slowest instruction of the loop (2-4x its time here).
template <class C, class M>
struct ScaledWire {
  using P = std::conditional_t<std::is_same_v<M, float> && sizeof(C) <= sizeof(float), float, double>;
  View1<const C> wire;
  P factor;
  long long n;
  long long size() const { return n; }
  KOKKOS_INLINE_FUNCTION M operator()(long long i) const { return static_cast<M>(static_cast<P>(wire(i)) * factor); }
};

// x's exponent field plus one in its lowest bit: the top bit of the result is set exactly when
// every exponent bit is (x is an Inf or a NaN). An OR of many of them is a sign test at the end,
// which the compiler vectorises in x's own width (an and, an add and an or per vector).
KOKKOS_INLINE_FUNCTION std::uint16_t exponent_carry(bf16 x) {
  return static_cast<std::uint16_t>((x.bits() & 0x7f80u) + 0x0080u);
}
KOKKOS_INLINE_FUNCTION std::uint16_t exponent_carry(fp16 x) {
  return static_cast<std::uint16_t>((x.bits() & 0x7c00u) + 0x0400u);
}
KOKKOS_INLINE_FUNCTION std::uint32_t exponent_carry(float x) {
  return (detail::float_to_bits(x) & 0x7f800000u) + 0x00800000u;
}
KOKKOS_INLINE_FUNCTION std::uint64_t exponent_carry(double x) {
  return (detail::double_to_bits(x) & 0x7ff0000000000000u) + 0x0010000000000000u;
}

// Whether v holds an Inf or a NaN. On the host each index of the reduction is a run of host_run
// elements, an OR of their exponent_carry that the compiler vectorises in the element's own
// width (a test through float or double converts every element first); on a device each index
// is one element.
template <class C>
bool any_nonfinite(const execution_space& exec, const View1<C>& v) {
  constexpr long long run = runs_on_host ? host_run : 1;
  const long long n = static_cast<long long>(v.extent(0));
  const C* data = v.data();
  long long bad = 0;  // runs (elements on a device) that hold one
  Kokkos::parallel_reduce(
      "kpmap::train::any_nonfinite",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, (n + run - 1) / run),
      KOKKOS_LAMBDA(long long c, long long& sum) {
        const long long end = n < (c + 1) * run ? n : (c + 1) * run;
        using U = decltype(exponent_carry(C()));
        U any = 0;
        for (long long i = c * run; i < end; ++i) any |= exponent_carry(data[i]);
        sum += static_cast<long long>(any >> (8 * sizeof(U) - 1));
      },
      bad);
  return bad > 0;
}

// The buffers of one wire type: what is sent (the wire layout) and, for reduce_scatter over
// more than one rank, what this rank receives (its extended shard).
template <class C>
struct Wire {
  using value_type = C;
  View1<C> send, recv;
  Kokkos::View<C*, Kokkos::HostSpace> tail;  // the reduced loss and row count, read on the host
};

}  // namespace step_comm_detail

template <class Acc>
class StepComm {
 public:
  // wire: the gradient's type on the wire; scaled: a loss scale multiplies the gradient;
  // n_params: the parameters of this model slice.
  StepComm(const Mesh& mesh, Dtype wire, bool scaled, const CommSpec& spec, long long n_params)
      : mesh_(mesh),
        data_(mesh.axis(mesh.has_axis("data") ? AxisNames("data") : AxisNames())),
        model_(mesh.axis(mesh.has_axis("model") ? AxisNames("model") : AxisNames())),
        all_(mesh.axis(all_names(mesh))),
        data_size_(data_.size()),
        model_size_(model_.size()),
        spec_(spec),
        wire_(wire),
        cast_(scaled || wire != dtype_v<Acc>),
        flag_("kpmap::train::finite_flag", 1),
        exponent_("kpmap::train::loss_exponent", 1),
        bound_("kpmap::train::bound", 1) {
    layout_.n = n_params;
    layout_.sharded = sharded();
    layout_.ranks = sharded() ? data_size_ : 1;
    layout_.shard = sharded() ? (n_params + data_size_ - 1) / data_size_ : n_params + 2;
    const long long elements = spec.bucket_bytes / static_cast<long long>(size_of(active_wire()));
    layout_.bucket = elements > 0 ? std::min(elements, layout_.block()) : layout_.block();
    for (long long k = 0; k < layout_.buckets(); ++k) {
      std::vector<Range> slots;
      const long long lo = k * layout_.bucket, hi = lo + layout_.bucket_width(k);
      for (long long r = 0; r < layout_.ranks; ++r) {
        const long long base = sharded() ? r * layout_.shard : 0;
        const long long end = sharded() ? std::min(hi, layout_.shard) : hi;
        const Range range{std::min(base + lo, n_params), std::min(base + end, n_params)};
        if (range.size() > 0) slots.push_back(range);
      }
      bucket_slots_.push_back(slots);
    }
  }

  int data_size() const { return data_size_; }
  int model_size() const { return model_size_; }
  const Mesh& mesh() const { return mesh_; }
  int data_index() const { return data_.index(); }
  int model_index() const { return model_.index(); }
  bool sharded() const { return spec_.strategy == CommStrategy::reduce_scatter; }
  // Whether the statistics are cast (pre-divided, scaled) before they travel.
  bool casts() const { return cast_; }
  // The parameters this rank updates: s elements (padding included) from shard_begin(), or all n.
  long long shard_size() const { return sharded() ? layout_.shard : layout_.n; }
  long long shard_begin() const { return sharded() ? data_index() * layout_.shard : 0; }
  // Zeros past the last parameter in this rank's shard.
  long long shard_padding() const {
    return shard_size() - std::max(0LL, std::min(layout_.n - shard_begin(), shard_size()));
  }
  // Length of the gathered parameter buffer (D s for reduce_scatter).
  long long gathered_size() const { return sharded() ? layout_.ranks * layout_.shard : layout_.n; }
  long long buckets() const { return layout_.buckets(); }
  // The gradient slots (of [0, n)) that bucket k carries: one range for allreduce, one per data
  // rank's shard for reduce_scatter (empty ranges left out).
  const std::vector<Range>& bucket_slots(long long k) const { return bucket_slots_[k]; }
  // Bytes of the wire buffers (0 when the sums travel in place).
  std::size_t wire_bytes() const {
    const long long send = in_place() ? 0 : layout_.ranks * layout_.block();
    const long long recv = receives() ? layout_.block() : 0;
    return static_cast<std::size_t>(send + recv) * size_of(active_wire());
  }

  template <class V>
  void sum_partial_products(const V& z) {
    if (model_size_ == 1) return;
    using T = typename V::non_const_value_type;
    psum(model_, z, z);
    count(z.extent(0) * sizeof(T), {"psum", "model", dtype_v<T>}, z.extent(0) * sizeof(T));
  }

  // Before the step's last gradient call of each slot (the last micro-batch): the epilogue
  // (model/epilogue.hpp) that casts each gradient slot of stats to the wire as the gradient
  // kernel finishes it; start() then casts only the loss and count slots (and padding). With the
  // same rows and scale as start(). An inactive one (nothing to cast) when the statistics
  // themselves are the wire.
  step_comm_detail::WireCast<Acc> gradient_cast(const execution_space& exec, const View1<Acc>& stats, long long rows,
                                                double scale) {
    step_comm_detail::WireCast<Acc> cast;
    if (in_place()) return cast;
    cast.type = active_wire();
    cast.active = true;
    cast.stats = stats;
    cast.layout = layout_;
    cast.factor = grad_factor(rows, scale);
    with_wire([&](auto& w) {
      using C = typename std::decay_t<decltype(w)>::value_type;
      const View1<C>& send = send_buffer(exec, w);
      if constexpr (std::is_same_v<C, double>) cast.fp64 = send;
      if constexpr (std::is_same_v<C, float>) cast.fp32 = send;
      if constexpr (std::is_same_v<C, bf16>) cast.bf16s = send;
      if constexpr (std::is_same_v<C, fp16>) cast.fp16s = send;
    });
    gradient_cast_ = true;
    return cast;
  }

  // Bucket k's slots of stats are final: cast them and start their reduction over `data`.
  // rows: the global batch B; scale: the loss scale.
  void start(const execution_space& exec, const View1<Acc>& stats, long long k, long long rows, double scale) {
    with_wire([&](auto& w) { start_bucket(exec, stats, k, rows, scale, w); });
  }

  // Between buckets (overlap): one MPI_Test per bucket in flight, so that MPI moves them. The
  // buckets keep their staging buffers until finish(), however early MPI completes them.
  void progress() {
    for (Request& request : requests_) request.progress();
  }

  // After start() of every bucket: waits for the reductions and returns the loss. The reduced
  // wire stays in place for locally_finite() and with_mean_gradient().
  StepTotals finish(const execution_space& exec) {
    StepTotals totals;
    with_wire([&](auto& w) { totals = finish_wire(exec, w); });
    return totals;
  }

  // After finish(): f(g) with g the mean gradient in M, unscaled, of extent shard_size(), read
  // from the reduced wire as it is used (step_comm_detail::DividedWire or ScaledWire), e.g.
  // f = [&](const auto& g) { optimizer.apply(exec, step, master, g); }.
  template <class M, class F>
  void with_mean_gradient(F&& f) {
    with_wire([&](auto& w) {
      using C = typename std::decay_t<decltype(w)>::value_type;
      const View1<const C> reduced = result(w);
      const long long n = shard_size();
      const C count = w.tail(1);  // the reduced row-count slot, read by finish()
      if (cast_) {
        using G = step_comm_detail::ScaledWire<C, M>;
        f(G{reduced, static_cast<typename G::P>(1.0 / (static_cast<double>(count) * scale_of_last_)), n});
      } else if constexpr (std::is_same_v<C, Acc>) {
        f(step_comm_detail::DividedWire<C, M>{reduced, count, n});
      }
    });
  }

  // reduce_scatter: every rank's updated shard (extent shard_size()) into `gathered`
  // (extent gathered_size()), with one all_gather over `data`.
  template <class S>
  void gather_params(const execution_space& exec, const View1<S>& shard, const View1<S>& gathered) {
    if (data_size_ == 1) {
      if (shard.data() != gathered.data()) Kokkos::deep_copy(exec, gathered, shard);
      return;
    }
    exec.fence();
    all_gather(data_, shard, gathered, 0, true);
    count(shard.extent(0) * sizeof(S), {"all_gather", "data", dtype_v<S>}, gathered.extent(0) * sizeof(S));
  }

  // Whether this rank's own gradient sums among bucket k's slots (bucket_slots(k), before their
  // reduction) hold an Inf or NaN. Call it just before start(k).
  bool own_nonfinite(const execution_space& exec, const View1<Acc>& stats, long long k) const {
    const auto& slots = bucket_slots_[k];
    if (slots.empty()) return false;  // the bucket carries only the loss and the count
    // One range over the bucket's slots: for reduce_scatter it also covers other buckets' columns,
    // which are this rank's own values too (stats is not reduced in place when sharded).
    const View1<Acc> own = Kokkos::subview(stats, Kokkos::make_pair(slots.front().begin, slots.back().end));
    return step_comm_detail::any_nonfinite(exec, own);
  }

  // After finish(): agrees over the whole mesh on whether the step saw an Inf or NaN and names
  // the lowest rank that did, preferring ranks whose own values (own: own_nonfinite or a
  // non-finite local loss sum) were non-finite. One pmin of a float (exact for rank numbers below
  // 2^23) over the whole mesh: every step
  // when every_step (dynamic loss scaling) or when the reduced statistics differ between ranks
  // (a model axis, reduce_scatter); with allreduce over a data axis only every rank holds the same
  // reduced statistics, which carry any rank's Inf or NaN, so they decide alike and the pmin runs
  // only at a step that has one.
  FiniteCheck check_finite(const execution_space& exec, bool own, bool every_step) {
    const int size = mesh_.size(), rank = mesh_.rank();
    const bool reduced = !locally_finite(exec);
    flag_(0) = static_cast<float>(own ? rank : reduced ? size + rank : 2 * size);
    const bool same_everywhere = !sharded() && model_size_ == 1;
    if (size > 1 && (every_step || !same_everywhere || reduced)) {
      pmin(all_, flag_, flag_);
      count(sizeof(float), {"pmin", all_.str(), Dtype::fp32}, sizeof(float));
    }
    const int first = static_cast<int>(flag_(0));
    if (first >= 2 * size) return {};
    return {first % size, first < size};
  }

  // Before the first step, on every rank: the loss slot's first exponent, the largest of the
  // ranks' `local_loss` (a local estimate of the first loss, e.g. the mean of y^2), agreed with
  // one pmax over the mesh. Only the cast wire uses it.
  void start_loss_exponent(double local_loss) {
    int e = 0;
    if (std::isfinite(local_loss) && local_loss > 0) std::frexp(local_loss, &e);
    exponent_(0) = e;
    if (mesh_.size() > 1) pmax(all_, exponent_, exponent_);
    loss_exponent_ = exponent_(0);
  }

  // The loss slot's exponent now (a checkpoint's TrainState::loss_exponent), and its restore.
  int loss_exponent() const { return loss_exponent_; }
  void set_loss_exponent(int e) { loss_exponent_ = e; }

  // precision.reproducible (model/repro_model.hpp): the psum over `data` of the step's exact
  // accumulators. They hold doubles whose every partial sum is exact, so the result does not
  // depend on MPI's order of additions.
  void sum_exact(const View1<double>& acc) {
    if (data_size_ == 1) return;
    psum(data_, acc, acc);
    count(acc.extent(0) * sizeof(double), {"psum", "data", Dtype::fp64}, acc.extent(0) * sizeof(double));
  }

  // The largest of every model rank's `local` (the bound of a reproducible grid).
  double max_over_model(double local) {
    bound_(0) = local;
    if (model_size_ > 1) {
      pmax(model_, bound_, bound_);
      count(sizeof(double), {"pmax", "model", Dtype::fp64}, sizeof(double));
    }
    return bound_(0);
  }

  // Before the first step: v <- the elementwise largest of every rank's v (pmax over the mesh).
  void agree_max(const Kokkos::View<double*, Kokkos::HostSpace>& v) {
    if (mesh_.size() > 1) pmax(all_, v, v);
  }

  // Whether every slot of the last reduction that this rank holds is finite.
  bool locally_finite(const execution_space& exec) {
    bool ok = true;
    with_wire([&](auto& w) { ok = !step_comm_detail::any_nonfinite(exec, result(w)); });
    return ok;
  }

  // Payload bytes this rank handed to collectives, and the collective calls it made, since the
  // last call (no bytes leave a rank over an axis of size 1, so those calls are skipped and not
  // counted).
  std::size_t take_bytes() { return std::exchange(bytes_, 0); }
  long long take_calls() { return std::exchange(calls_, 0); }
  // The calls since the last take by key and size, as calls per step over `steps` steps.
  std::vector<StepCollective> take_collectives(long long steps) {
    std::vector<StepCollective> log = std::exchange(log_, {});
    for (auto& c : log) c.calls_per_step /= static_cast<double>(steps);
    return log;
  }

 private:
  Dtype active_wire() const { return cast_ ? wire_ : dtype_v<Acc>; }
  // allreduce without a cast: the statistics themselves are the wire.
  bool in_place() const { return !cast_ && !sharded(); }
  bool receives() const { return sharded() && data_size_ > 1; }

  template <class F>
  void with_wire(F&& f) {
    switch (active_wire()) {
      case Dtype::fp64: return f(wire64_);
      case Dtype::fp32: return f(wire32_);
      case Dtype::bf16: return f(wire_bf16_);
      case Dtype::fp16: return f(wire_fp16_);
    }
  }

  // What this rank holds after the reduction: its extended shard, or the whole wire.
  template <class C>
  static const View1<C>& result(const step_comm_detail::Wire<C>& w) {
    return w.recv.extent(0) > 0 ? w.recv : w.send;
  }

  // One collective call: `bytes` handed over, and its key and size in the bench's convention.
  void count(std::size_t bytes, CollectiveKey key, std::size_t size) {
    bytes_ += bytes;
    ++calls_;
    const auto same = [&](const StepCollective& c) {
      return c.key == key && c.bytes == static_cast<std::int64_t>(size);
    };
    const auto it = std::find_if(log_.begin(), log_.end(), same);
    if (it != log_.end()) {
      it->calls_per_step += 1;
    } else {
      log_.push_back({std::move(key), static_cast<std::int64_t>(size), 1.0});
    }
  }

  template <class C>
  void start_bucket(const execution_space& exec, const View1<Acc>& stats, long long k, long long rows, double scale,
                    step_comm_detail::Wire<C>& w) {
    scale_of_last_ = scale;
    if (in_place()) {
      if constexpr (std::is_same_v<C, Acc>) w.send = stats;
    } else {
      const double share = cast_ ? 1.0 / static_cast<double>(rows) : 1.0;
      step_comm_detail::to_wire(exec, layout_, stats, send_buffer(exec, w), k, grad_factor(rows, scale),
                                cast_ ? std::ldexp(share, -loss_exponent_) : 1.0, share, gradient_cast_);
    }
    if (receives() && w.recv.extent(0) == 0) {
      w.recv = View1<C>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kpmap::train::shard"), layout_.block());
    }
    if (data_size_ == 1) return;
    exec.fence();
    const long long begin = layout_.bucket_begin(k), width = layout_.bucket_width(k);
    const auto send = Kokkos::subview(w.send, Kokkos::make_pair(begin, begin + layout_.ranks * width));
    const long long lo = k * layout_.bucket;
    const auto recv = sharded() ? Kokkos::subview(w.recv, Kokkos::make_pair(lo, lo + width)) : send;
    if (spec_.overlap) {
      requests_.push_back(sharded() ? ipsum_scatter(data_, send, recv, 0, true) : ipsum(data_, send, send));
    } else if (sharded()) {
      psum_scatter(data_, send, recv, 0, true);
    } else {
      psum(data_, send, send);
    }
    count(send.extent(0) * sizeof(C), {sharded() ? "psum_scatter" : "psum", "data", dtype_v<C>},
          send.extent(0) * sizeof(C));
  }

  // The gradient slots' factor on the wire: scale / B for a cast wire (as scale * (1 / B), the one
  // expression for gradient_cast and start()), 1 otherwise.
  double grad_factor(long long rows, double scale) const {
    return cast_ ? scale * (1.0 / static_cast<double>(rows)) : 1.0;
  }

  // The wire layout's buffer of w, allocated at the first use.
  template <class C>
  const View1<C>& send_buffer(const execution_space& exec, step_comm_detail::Wire<C>& w) {
    if (w.send.extent(0) == 0) {
      w.send = View1<C>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kpmap::train::wire"),
                        layout_.ranks * layout_.block());
    }
    return w.send;
  }

  template <class C>
  StepTotals finish_wire(const execution_space& exec, step_comm_detail::Wire<C>& w) {
    wait_all(requests_);
    requests_.clear();
    gradient_cast_ = false;
    const View1<C>& reduced = result(w);
    const long long n = shard_size();
    const auto tail = Kokkos::subview(reduced, Kokkos::make_pair(n, n + 2));
    if (w.tail.extent(0) == 0) w.tail = Kokkos::View<C*, Kokkos::HostSpace>("kpmap::train::wire_tail", 2);
    const auto& host_tail = w.tail;
    Kokkos::deep_copy(exec, host_tail, tail);
    exec.fence();
    const double loss_sum = static_cast<double>(host_tail(0)), count = static_cast<double>(host_tail(1));
    if (!cast_) return {loss_sum / count};
    const double loss = std::ldexp(loss_sum, loss_exponent_) / count;
    if (std::isfinite(loss) && loss > 0) {
      std::frexp(loss, &loss_exponent_);
    } else {
      loss_exponent_ += loss == 0 ? -16 : 16;
    }
    return {loss};
  }

  // Every axis name of the mesh, in order: the tuple the finite check and the agreements run over.
  static AxisNames all_names(const Mesh& mesh) {
    std::vector<std::string> names;
    for (const auto& axis : mesh.axes()) names.push_back(axis.name);
    return AxisNames(std::move(names));
  }

  const Mesh& mesh_;
  Axis data_, model_, all_;  // resolved once; data_ and model_ are () where the mesh has no such axis
  int data_size_, model_size_;
  CommSpec spec_;
  Dtype wire_;
  bool cast_;
  step_comm_detail::WireLayout layout_;
  std::vector<std::vector<Range>> bucket_slots_;
  int loss_exponent_ = 0;  // the loss slot travels as loss * 2^-loss_exponent_
  bool gradient_cast_ = false;  // this step's gradient slots are in the wire already (gradient_cast)
  double scale_of_last_ = 1.0;
  step_comm_detail::Wire<double> wire64_;
  step_comm_detail::Wire<float> wire32_;
  step_comm_detail::Wire<bf16> wire_bf16_;
  step_comm_detail::Wire<fp16> wire_fp16_;
  Kokkos::View<float*, Kokkos::HostSpace> flag_;  // a float, so that the bench can time its pmin
  Kokkos::View<int*, Kokkos::HostSpace> exponent_;
  Kokkos::View<double*, Kokkos::HostSpace> bound_;
  std::size_t bytes_ = 0;
  long long calls_ = 0;
  std::vector<StepCollective> log_;
  std::vector<Request> requests_;  // buckets in flight (overlap)
};

}  // namespace kpmap
