// The timing loop of one row and the sweep over rows.
#include <mpi.h>

#include <cstdint>
#include <type_traits>

#include "kpmap/bench/bench.hpp"
#include "kpmap/bench/check.hpp"
#include "kpmap/collectives/collectives.hpp"
#include "kpmap/core/error.hpp"

namespace kpmap {

namespace {

// One call of the row's collective, out of place, on rank-1 Views (docs/bench.md: all_gather and
// psum_scatter tiled along dimension 0, all_to_all tiled with split = concat = 0).
template <class T>
void call(Collective c, const Axis& axis, const View1<T>& in, const View1<T>& out, const Permutation& shift) {
  switch (c) {
    case Collective::psum:
      psum(axis, in, out);
      break;
    case Collective::pmean:
      pmean(axis, in, out);
      break;
    case Collective::pmax:
      pmax(axis, in, out);
      break;
    case Collective::pmin:
      pmin(axis, in, out);
      break;
    case Collective::all_gather:
      all_gather(axis, in, out, 0, true);
      break;
    case Collective::psum_scatter:
      psum_scatter(axis, in, out, 0, true);
      break;
    case Collective::all_to_all:
      all_to_all(axis, in, out, 0, 0, true);
      break;
    case Collective::ppermute:
      ppermute(axis, in, out, shift);
      break;
    case Collective::pbroadcast:
      pbroadcast(axis, in, out, 0);
      break;
    case Collective::psum_reproducible:
      if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
        psum(axis, in, out, reproducible);
      } else {
        throw InputError("bench.collectives: psum_reproducible takes fp64 and fp32 only");
      }
      break;
  }
}

// The plain MPI call a collective stands for (bench.baseline: mpi), on raw buffers: the
// elementwise reductions MPI_Allreduce (pmean: the sum, which kpmap then divides),
// all_gather MPI_Allgather, psum_scatter MPI_Reduce_scatter_block, all_to_all MPI_Alltoall,
// ppermute MPI_Sendrecv of the cyclic shift, pbroadcast MPI_Bcast from axis index 0. float and
// double reduce with MPI's predefined ops; 16-bit types have no MPI type, so they use kpmap's
// datatype and op, as kpmap does.
template <class T>
void mpi_call(Collective c, MPI_Comm comm, int n, int a, const T* in, T* out, std::int64_t count_64) {
  constexpr bool half = std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;
  const ReduceOp op = c == Collective::pmax ? ReduceOp::max : c == Collective::pmin ? ReduceOp::min : ReduceOp::sum;
  MPI_Op mpi_reduce = MPI_OP_NULL;
  if constexpr (half) {
    mpi_reduce = mpi_op<T>(op);
  } else {
    mpi_reduce = detail::predefined_op(op);
  }
  const MPI_Datatype type = mpi_datatype<T>();
  const int count = static_cast<int>(count_64);  // bench.max_bytes keeps every count below 2^31
  switch (c) {
    case Collective::all_gather:
      check_mpi(MPI_Allgather(in, count, type, out, count, type, comm), "MPI_Allgather");
      break;
    case Collective::psum_scatter:
      check_mpi(MPI_Reduce_scatter_block(in, out, count, type, mpi_reduce, comm), "MPI_Reduce_scatter_block");
      break;
    case Collective::all_to_all:
      check_mpi(MPI_Alltoall(in, count, type, out, count, type, comm), "MPI_Alltoall");
      break;
    case Collective::ppermute:
      check_mpi(MPI_Sendrecv(in, count, type, (a + 1) % n, 0, out, count, type, (a + n - 1) % n, 0, comm,
                             MPI_STATUS_IGNORE),
                "MPI_Sendrecv");
      break;
    case Collective::pbroadcast:  // the root sends its input, the others receive into their output
      check_mpi(MPI_Bcast(a == 0 ? const_cast<T*>(in) : out, count, type, 0, comm), "MPI_Bcast");
      break;
    default:
      check_mpi(MPI_Allreduce(in, out, count, type, mpi_reduce, comm), "MPI_Allreduce");
  }
}

struct Measured {
  double seconds;           // this rank's mean time per timed iteration
  std::int64_t wrong;       // this rank's wrong elements in the last result
  double baseline_seconds;  // the same for the plain MPI call (0 without bench.baseline)
};

template <class T>
Measured measure(const Axis& axis, Collective c, const Message& msg, int m, const BenchSpec& spec) {
  const MPI_Comm comm = axis.comm();
  const int n = axis.size();
  const int a = axis.index();
  const View1<T> in(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::bench_in"), msg.in);
  const View1<T> out(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::bench_out"), msg.out);
  bench::fill_input(in, a, m);
  bench::poison(out);
  Permutation shift;
  for (int b = 0; b < n; ++b) shift.push_back({b, (b + 1) % n});
  // The plain MPI call gets the same Views, or host copies of them where MPI may not read their
  // memory (device memory without GPU-aware MPI; 16-bit reductions, whose ops run on the host).
  constexpr bool half = std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;
  const auto mpi_in = Kokkos::create_mirror_view(detail::mpi_space_t<memory_space, half>(), in);
  const auto mpi_out = Kokkos::create_mirror_view(detail::mpi_space_t<memory_space, half>(), out);
  Kokkos::deep_copy(mpi_in, in);
  const auto plain = [&] { mpi_call(c, comm, n, a, mpi_in.data(), mpi_out.data(), msg.count); };
  for (int w = 0; w < spec.warmup; ++w) {
    if (spec.baseline) plain();
    call(c, axis, in, out, shift);
  }
  double total = 0, baseline = 0;
  for (int it = 0; it < spec.iterations; ++it) {
    // Interleaved: the plain call, then kpmap's, each after its own barrier.
    if (spec.baseline) {
      Kokkos::fence();
      check_mpi(MPI_Barrier(comm), "MPI_Barrier");
      const double start = MPI_Wtime();
      plain();
      baseline += MPI_Wtime() - start;
    }
    // The check reads the last result only: it must not pass on an earlier iteration's values.
    if (it == spec.iterations - 1) bench::poison(out);
    Kokkos::fence();
    check_mpi(MPI_Barrier(comm), "MPI_Barrier");
    const double start = MPI_Wtime();
    call(c, axis, in, out, shift);
    Kokkos::fence();
    total += MPI_Wtime() - start;
  }
  const bench::CheckCase k{c, a, n, msg.count, m};
  return {total / spec.iterations, bench::count_wrong(k, out), baseline / spec.iterations};
}

Measured measure(Dtype dtype, const Axis& axis, Collective c, const Message& msg, const BenchSpec& spec) {
  const int m = value_modulus(dtype, axis.size());
  switch (dtype) {
    case Dtype::fp64:
      return measure<double>(axis, c, msg, m, spec);
    case Dtype::fp32:
      return measure<float>(axis, c, msg, m, spec);
    case Dtype::bf16:
      return measure<bf16>(axis, c, msg, m, spec);
    case Dtype::fp16:
      return measure<fp16>(axis, c, msg, m, spec);
  }
  throw RuntimeError("bench: unknown element type");
}

// Every group of the axis runs at once: the row is the slowest rank and every rank's errors.
BenchRow reduce_row(const Mesh& mesh, Measured local, BenchRow row) {
  double seconds[2] = {local.seconds, local.baseline_seconds};
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, seconds, 2, MPI_DOUBLE, MPI_MAX, mesh.comm()), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &local.wrong, 1, MPI_INT64_T, MPI_SUM, mesh.comm()), "MPI_Allreduce");
  const auto busbw = [&](double s) {
    return s > 0 ? static_cast<double>(row.bytes) / 1e9 / s * busbw_factor(row.collective, row.ranks) : 0.0;
  };
  row.time_us = seconds[0] * 1e6;
  row.algbw_gbs = seconds[0] > 0 ? static_cast<double>(row.bytes) / 1e9 / seconds[0] : 0.0;
  row.busbw_gbs = busbw(seconds[0]);
  row.wrong = local.wrong;
  row.baseline_time_us = seconds[1] * 1e6;
  row.baseline_busbw_gbs = busbw(seconds[1]);
  return row;
}

}  // namespace

std::vector<BenchRow> run_sweep(const Mesh& mesh, const BenchSpec& spec,
                                const std::function<void(const BenchRow&)>& on_row) {
  std::vector<BenchRow> rows;
  const auto sizes = sweep_sizes(spec);
  for (const auto& axes : spec.axes) {
    const Axis axis = mesh.axis(axes);  // resolved once per row group: the timed calls take the handle
    const int n = axis.size();
    for (Collective c : spec.collectives) {
      for (Dtype dtype : spec.dtypes) {
        std::int64_t previous = -1;
        for (std::int64_t bytes : sizes) {
          const Message msg = message(c, bytes, element_size(dtype), n);
          if (msg.bytes == previous) continue;
          previous = msg.bytes;
          const Measured local = measure(dtype, axis, c, msg, spec);
          rows.push_back(
              reduce_row(mesh, local, {c, dtype, axes.str(), n, msg.bytes, msg.count, 0, 0, 0, 0, 0, 0}));
          if (on_row) on_row(rows.back());
        }
      }
    }
  }
  return rows;
}

}  // namespace kpmap
