// The `team` gradient path: a hierarchical kernel shaped for GPUs.
//
// The fused kernel (fused_kernels.hpp) is a parallel_reduce whose value is the whole gradient:
// F + 2 values per thread, which on a GPU live in shared memory (the block shrinks as F grows,
// and a few thousand features no longer fit), and one thread per row of a LayoutRight X, so
// neighbouring threads read addresses a row apart. This path instead runs a TeamPolicy:
//
// - Teams over blocks of rows: team t owns rows [t R, t R + R) (team_rows), in chunks of
//   team_chunk rows whose residuals it keeps in team scratch (level 0).
// - Residuals: one row per thread of the team, the row's dot product split over the vector lanes
//   (a ThreadVectorRange reduction), so consecutive lanes read consecutive elements of the row.
// - Gradient, stage 1: the team's threads and lanes own features (lane j of a block of V
//   features reads X(i, j), coalesced across lanes) and add the chunk's rows r_i X(i, j) into the
//   team's row of a [teams x (W + 2)] partial buffer in global memory, in row order; the two
//   last slots take the team's sum r_i and sum r_i^2. Nothing per thread is sized by F, so any F
//   works (tested up to 65536).
// - Gradient, stage 2 (team_combine): one thread per slot sums the teams' partials in team order,
//   so the result does not depend on scheduling; add_gradient (fused_kernels.hpp) then adds
//   2x the sums to the gradient and reads the loss back.
//
// On host execution spaces (one thread per team, vector length 1) the same split runs with the
// fused kernel's row loops: dot_row for a residual, axpy_row over blocks of host_block features
// for the gradient, which adds each column's terms in the same order (row by row) as the lanes
// of a GPU do.
//
// The partial buffer holds at most one row per team_chunk rows of X (team_count), in Acc.
#pragma once

#include <Kokkos_Core.hpp>

#include "kpmap/core/types.hpp"
#include "kpmap/model/fused_kernels.hpp"
#include "kpmap/model/gradient_kernel.hpp"

namespace kpmap::model_detail {

// Rows whose residuals a team holds in scratch at a time, and the rows per team below team_max.
inline constexpr long long team_chunk = 32;
// The most teams of a call: enough to fill a GPU, few enough that the partial buffer stays small.
inline constexpr long long team_max = 1024;
// Features per TeamThreadRange item on the host (contiguous axpy over the partial row).
inline constexpr long long host_block = 512;

// The rows each team owns for n rows (about team_chunk, more when team_max teams are not
// enough), and the number of teams: every team has at least one row.
inline long long team_rows(long long n) {
  const long long by_rows = (n + team_chunk - 1) / team_chunk;
  const long long teams = by_rows < team_max ? by_rows : team_max;
  return teams > 0 ? (n + teams - 1) / teams : 0;
}
inline long long team_count(long long n) {
  const long long rows = team_rows(n);
  return rows > 0 ? (n + rows - 1) / rows : 0;
}

using team_policy = Kokkos::TeamPolicy<execution_space>;
using team_member = team_policy::member_type;
template <class Acc>
using TeamScratch =
    Kokkos::View<Acc*, execution_space::scratch_memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
template <class Acc>
using PartialMatrix =
    Kokkos::View<Acc**, Kokkos::LayoutRight, device_type, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// Vector lanes per thread: 1 on the host, a warp (at most 32) on a GPU.
inline int team_vector_length() {
  if constexpr (host_execution_v) {
    return 1;
  } else {
    const int most = team_policy::vector_length_max();
    return most < 32 ? most : 32;
  }
}

// The policy of `teams` teams: on the host one thread per team (the teams are the parallelism,
// and no thread waits at a team barrier for another that the OS has descheduled), on a GPU the
// team size Kokkos chooses with team_vector_length() lanes.
inline team_policy make_team_policy(const execution_space& exec, long long teams) {
  if constexpr (host_execution_v) {
    return team_policy(exec, static_cast<int>(teams), 1, 1);
  } else {
    return team_policy(exec, static_cast<int>(teams), Kokkos::AUTO, team_vector_length());
  }
}

// x_i . w over the columns of X: the row's elements over the vector lanes of the calling thread
// (GPU), or the fused kernel's row loop (host). Every lane gets the sum.
template <class Acc, class XView, class WView>
KOKKOS_INLINE_FUNCTION Acc team_row_dot(const team_member& team, const XView& X, long long i,
                                        const WView& w) {
  if constexpr (host_execution_v) {
    (void)team;
    return dot_row<Acc>(X, i, w);
  } else {
    Acc d = 0;
    Kokkos::parallel_reduce(
        Kokkos::ThreadVectorRange(team, static_cast<long long>(X.extent(1))),
        [&](long long j, Acc& s) { s += static_cast<Acc>(X(i, j)) * static_cast<Acc>(w(j)); }, d);
    return d;
  }
}

// Which sums a TeamGradient forms (as fused_kernels.hpp's Part): all (residuals and every
// column), residual (the residuals, stored in res, and their sums), columns (the window
// [c0, c0 + width) from the stored residuals). Tag Fused: r_i = x_i . w + b - y_i; FromZ:
// r_i = z_i - y_i.
template <class Tag, class Acc, Part part, class XView, class YView, class WView, class BView, class ZView,
          class RView>
struct TeamGradient {
  XView X;
  YView y;
  WView w;                     // Fused only
  BView b;                     // Fused only; extent 0 when the model has no bias
  ZView z;                     // FromZ only
  RView res;                   // written by residual, read by columns
  PartialMatrix<Acc> partial;  // [teams][W + 2]
  long long rows_per_team = 0;
  long long c0 = 0;     // columns only
  long long width = 0;  // W: the columns summed (all: F, residual: 0, columns: the window)
  int lanes = 1;        // features per TeamThreadRange item on a GPU (the vector length)

  KOKKOS_INLINE_FUNCTION Acc residual(const team_member& team, long long i) const {
    if constexpr (part == Part::columns) {
      (void)team;
      return res(i);
    } else if constexpr (std::is_same_v<Tag, Fused>) {
      const Acc offset = (b.extent(0) > 0 ? static_cast<Acc>(b(0)) : Acc(0)) - static_cast<Acc>(y(i));
      return offset + team_row_dot<Acc>(team, X, i, w);
    } else {
      (void)team;
      return static_cast<Acc>(z(i)) - static_cast<Acc>(y(i));
    }
  }

  // The columns [j0, j1) of the team's partial row += sum_q r(q) X(i0 + q, c0 + j) over the
  // chunk's rows, in row order.
  KOKKOS_INLINE_FUNCTION void add_columns(const team_member& team, Acc* g, const TeamScratch<Acc>& r,
                                          long long i0, long long rows, long long j0, long long j1) const {
    if constexpr (host_execution_v) {
      (void)team;
      for (long long q = 0; q < rows; ++q) axpy_row(g + j0, r(q), X, i0 + q, c0 + j0, j1 - j0);
    } else {
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, j1 - j0), [&](long long k) {
        const long long j = j0 + k;
        Acc s = g[j];
        for (long long q = 0; q < rows; ++q) s += r(q) * static_cast<Acc>(X(i0 + q, c0 + j));
        g[j] = s;
      });
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(const team_member& team) const {
    const long long t = team.league_rank();
    const long long n = static_cast<long long>(X.extent(0));
    const long long first = t * rows_per_team;
    const long long last = first + rows_per_team < n ? first + rows_per_team : n;
    const long long W = width;
    Acc* g = &partial(t, 0);
    const TeamScratch<Acc> r(team.team_scratch(0), team_chunk);
    const long long block = host_execution_v ? host_block : lanes;
    const long long blocks = (W + block - 1) / block;
    auto columns = [&](long long jb) {
      const long long j0 = jb * block;
      return Kokkos::make_pair(j0, j0 + block < W ? j0 + block : W);
    };
    // Zero the partial row: each block by the thread that adds into it, the sums by one.
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blocks), [&](long long jb) {
      const auto c = columns(jb);
      Kokkos::parallel_for(Kokkos::ThreadVectorRange(team, c.second - c.first),
                           [&](long long k) { g[c.first + k] = 0; });
    });
    Kokkos::single(Kokkos::PerTeam(team), [&]() { g[W] = g[W + 1] = 0; });
    for (long long i0 = first; i0 < last; i0 += team_chunk) {
      const long long rows = i0 + team_chunk < last ? team_chunk : last - i0;
      Kokkos::parallel_for(Kokkos::TeamThreadRange(team, rows), [&](long long q) {
        const Acc v = residual(team, i0 + q);
        Kokkos::single(Kokkos::PerThread(team), [&]() {
          r(q) = v;
          if constexpr (part == Part::residual) res(i0 + q) = v;
        });
      });
      team.team_barrier();
      if constexpr (part != Part::residual) {
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, blocks), [&](long long jb) {
          const auto c = columns(jb);
          add_columns(team, g, r, i0, rows, c.first, c.second);
        });
      }
      if constexpr (part != Part::columns) {
        Kokkos::single(Kokkos::PerTeam(team), [&]() {
          Acc s = g[W], s2 = g[W + 1];
          for (long long q = 0; q < rows; ++q) {
            s += r(q);
            s2 = add_product(s2, r(q), r(q));
          }
          g[W] = s, g[W + 1] = s2;
        });
      }
      team.team_barrier();  // the next chunk overwrites r
    }
  }
};

// sums(k) = sum over teams t (in order) of partial(t, k), for every slot k.
template <class Acc>
void team_combine(const execution_space& exec, const PartialMatrix<Acc>& partial, const View1<Acc>& sums) {
  const long long teams = static_cast<long long>(partial.extent(0));
  Kokkos::parallel_for(
      "kpmap::model::team_combine",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(
          exec, 0, static_cast<long long>(partial.extent(1))),
      KOKKOS_LAMBDA(long long k) {
        Acc s = 0;
        for (long long t = 0; t < teams; ++t) s += partial(t, k);
        sums(k) = s;
      });
}

// sums (extent W + 2, see Part) <- the team kernel's reduction of `part` over the rows of X;
// `work` holds at least team_count(rows) * (W + 2) elements.
template <class Tag, class Acc, Part part, class XView, class YView, class WView, class BView, class ZView,
          class RView>
void team_reduce(const execution_space& exec, const XView& X, const YView& y, const WView& w, const BView& b,
                 const ZView& z, const RView& res, long long c0, long long width, const View1<Acc>& work,
                 const View1<Acc>& sums) {
  using functor = TeamGradient<Tag, Acc, part, XView, YView, WView, BView, ZView, RView>;
  const long long n = static_cast<long long>(X.extent(0));
  const long long W = part == Part::all       ? static_cast<long long>(X.extent(1))
                      : part == Part::columns ? width
                                              : 0;
  const long long teams = team_count(n);
  const PartialMatrix<Acc> partial(work.data(), teams, W + 2);
  const int lanes = team_vector_length();
  functor f{X, y, w, b, z, res, partial, team_rows(n), c0, W, lanes};
  const char* label = part == Part::all        ? "kpmap::model::team_gradient"
                      : part == Part::residual ? "kpmap::model::team_residual"
                                               : "kpmap::model::team_gradient_columns";
  const auto policy = make_team_policy(exec, teams)
                          .set_scratch_size(0, Kokkos::PerTeam(TeamScratch<Acc>::shmem_size(team_chunk)));
  Kokkos::parallel_for(label, policy, f);
  team_combine(exec, partial, sums);
}

// z_i = x_i . w (+ b when b has a slot): teams over blocks of rows, a row per thread, its
// elements over the vector lanes.
template <class Acc, class XView, class WView, class BView, class ZView>
void team_forward(const execution_space& exec, const XView& X, const WView& w, const BView& b,
                  const ZView& z) {
  const long long n = static_cast<long long>(X.extent(0));
  const long long rows = team_rows(n);
  const bool has_b = b.extent(0) > 0;
  Kokkos::parallel_for(
      "kpmap::model::team_forward", make_team_policy(exec, team_count(n)),
      KOKKOS_LAMBDA(const team_member& team) {
        const long long first = team.league_rank() * rows;
        const long long last = first + rows < n ? first + rows : n;
        Kokkos::parallel_for(Kokkos::TeamThreadRange(team, first, last), [&](long long i) {
          Acc s = team_row_dot<Acc>(team, X, i, w);
          if (has_b) s += static_cast<Acc>(b(0));
          Kokkos::single(Kokkos::PerThread(team), [&]() { z(i) = s; });
        });
      });
}

}  // namespace kpmap::model_detail
