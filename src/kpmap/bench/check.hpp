// The data of a bench row and the check of its result. Input element i of the rank with axis
// index b holds pattern(b, i) = (b + i) mod m, an integer that is exact in every element type
// (m = value_modulus), so every result has a closed form whatever the reduction order:
//   psum/pmean/pmax/pmin: out[i] = R[i mod m], R[j] = sum / mean / max / min over b < n of
//                                  pattern(b, j) (reduction_table)
//   all_gather:           out[i] = pattern(i / c, i mod c)              (c = Message::count)
//   psum_scatter:         out[i] = R[(a c + i) mod m]                   (a: my axis index)
//   all_to_all:           out[i] = pattern(i / c, a c + i mod c)
//   ppermute:             out[i] = pattern((a - 1) mod n, i)            (the cyclic shift b -> b+1)
//   pbroadcast:           out[i] = pattern(0, i)                        (source 0)
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <vector>

#include "kpmap/bench/bench.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"

namespace kpmap::bench {

// What one rank knows about its row.
struct CheckCase {
  Collective collective;
  int index;           // a: this rank's axis index
  int n;               // the axis size
  std::int64_t chunk;  // c: Message::count
  int m;               // value_modulus
};

KOKKOS_INLINE_FUNCTION std::int64_t pattern(std::int64_t rank, std::int64_t i, int m) {
  return (rank + i) % m;
}

// R[j] for j < m (see above); for a collective that does not reduce, the sum (unused).
std::vector<double> reduction_table(Collective c, int n, int m);

using Table = Kokkos::View<const double*, device_type>;

KOKKOS_INLINE_FUNCTION double expected(const CheckCase& k, const Table& table, std::int64_t i) {
  const std::int64_t c = k.chunk;
  switch (k.collective) {
    case Collective::all_gather:
      return static_cast<double>(pattern(i / c, i % c, k.m));
    case Collective::psum_scatter:
      return table((k.index * c + i) % k.m);
    case Collective::all_to_all:
      return static_cast<double>(pattern(i / c, k.index * c + i % c, k.m));
    case Collective::ppermute:
      return static_cast<double>(pattern((k.index + k.n - 1) % k.n, i, k.m));
    case Collective::pbroadcast:
      return static_cast<double>(pattern(0, i, k.m));
    default:
      return table(i % k.m);  // the elementwise reductions
  }
}

using Range = Kokkos::RangePolicy<execution_space, Kokkos::IndexType<std::int64_t>>;

template <class T>
void fill_input(const View1<T>& in, int index, int m) {
  Kokkos::parallel_for(
      "kpmap::bench_fill", Range(0, static_cast<std::int64_t>(in.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) {
        in(i) = static_cast<T>(static_cast<double>(pattern(index, i, m)));
      });
}

// -1 is no result's value: an output the collective did not write is counted as wrong.
template <class T>
void poison(const View1<T>& out) {
  Kokkos::parallel_for(
      "kpmap::bench_poison", Range(0, static_cast<std::int64_t>(out.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) { out(i) = static_cast<T>(-1.0); });
}

// The elements of this rank's result `out` that differ from the closed form (exact comparison:
// the expected value rounded once to T, as the collectives round pmean's quotient).
template <class T>
std::int64_t count_wrong(const CheckCase& k, const View1<T>& out) {
  const std::vector<double> r = reduction_table(k.collective, k.n, k.m);
  Kokkos::View<double*, device_type> table(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::bench_table"), r.size());
  const auto host = Kokkos::create_mirror_view(table);
  for (std::size_t j = 0; j < r.size(); ++j) host(j) = r[j];
  Kokkos::deep_copy(table, host);
  const Table t = table;
  const CheckCase kc = k;
  std::int64_t wrong = 0;
  Kokkos::parallel_reduce(
      "kpmap::bench_check", Range(0, static_cast<std::int64_t>(out.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& w) {
        const double want = static_cast<double>(static_cast<T>(expected(kc, t, i)));
        if (!(static_cast<double>(out(i)) == want)) ++w;
      },
      wrong);
  return wrong;
}

}  // namespace kpmap::bench
