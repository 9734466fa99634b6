// The collective sweep of mode bench (docs/bench.md): nccl-tests' byte, count and busbw
// conventions against numbers written out by hand; every row of a small sweep on every mesh the
// rank count allows has #wrong == 0; and the check itself counts exactly the elements that were
// corrupted. Expected results are brute-force sums over the axis of the documented data
// pattern (b + i) mod m, computed here, never by the code under test.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "kpmap/bench/bench.hpp"
#include "kpmap/bench/check.hpp"
#include "kpmap/bench/table.hpp"
#include "kpmap/collectives/collectives.hpp"
#include "support/world.hpp"

namespace {

using kpmap::test::world_size;

using kpmap::Collective;
using kpmap::Dtype;

const std::vector<Collective> every_collective{
    Collective::psum,       Collective::pmean,      Collective::pmax,
    Collective::pmin,       Collective::all_gather, Collective::psum_scatter,
    Collective::all_to_all, Collective::ppermute,   Collective::pbroadcast, Collective::psum_reproducible};

// --- conventions (pure functions) ------------------------------------------------------------

TEST(BenchConventions, BytesAndCountsFollowNcclTests) {
  struct Case {
    Collective c;
    std::int64_t request;
    std::size_t esize;
    int n;
    std::int64_t count, in, out, bytes;
  };
  const Case cases[] = {
      // size = the whole buffer; count = nccl-tests' count argument
      {Collective::psum, 1024, 4, 4, 256, 256, 256, 1024},
      {Collective::pmean, 1024, 8, 4, 128, 128, 128, 1024},
      {Collective::all_gather, 1024, 4, 4, 64, 64, 256, 1024},    // count: per-rank input
      {Collective::psum_scatter, 1024, 4, 4, 64, 256, 64, 1024},  // count: per-rank output
      {Collective::all_to_all, 1024, 4, 4, 64, 256, 256, 1024},   // count: one peer's chunk
      {Collective::ppermute, 96, 2, 3, 48, 48, 48, 96},
      {Collective::pbroadcast, 100, 2, 3, 50, 50, 50, 100},
      // rounding: down to whole elements and whole blocks, but at least one element per rank
      {Collective::all_to_all, 40, 4, 4, 2, 8, 8, 32},
      {Collective::psum_scatter, 100, 2, 3, 16, 48, 16, 96},
      {Collective::all_gather, 8, 8, 4, 1, 1, 4, 32},
      {Collective::psum, 3, 4, 2, 1, 1, 1, 4},
      {Collective::all_gather, 1024, 4, 1, 256, 256, 256, 1024},
  };
  for (const auto& k : cases) {
    const auto m = kpmap::message(k.c, k.request, k.esize, k.n);
    const auto what =
        kpmap::to_string(k.c) + " " + std::to_string(k.request) + " B, n " + std::to_string(k.n);
    EXPECT_EQ(m.count, k.count) << what;
    EXPECT_EQ(m.in, k.in) << what;
    EXPECT_EQ(m.out, k.out) << what;
    EXPECT_EQ(m.bytes, k.bytes) << what;
  }
}

TEST(BenchConventions, BusBandwidthFactorsAreNcclTests) {
  for (int n : {1, 2, 3, 4, 8}) {
    const double allreduce = 2.0 * (n - 1) / n, gather = double(n - 1) / n;
    for (Collective c : {Collective::psum, Collective::pmean, Collective::pmax, Collective::pmin}) {
      EXPECT_DOUBLE_EQ(kpmap::busbw_factor(c, n), allreduce) << kpmap::to_string(c) << " n " << n;
    }
    for (Collective c : {Collective::all_gather, Collective::psum_scatter, Collective::all_to_all}) {
      EXPECT_DOUBLE_EQ(kpmap::busbw_factor(c, n), gather) << kpmap::to_string(c) << " n " << n;
    }
    EXPECT_EQ(kpmap::busbw_factor(Collective::ppermute, n), 1.0);
    EXPECT_EQ(kpmap::busbw_factor(Collective::pbroadcast, n), 1.0);
  }
  EXPECT_DOUBLE_EQ(kpmap::busbw_factor(Collective::psum, 4), 1.5);
  EXPECT_DOUBLE_EQ(kpmap::busbw_factor(Collective::all_to_all, 4), 0.75);
}

TEST(BenchConventions, ValuesStayExactWhenSummed) {
  EXPECT_EQ(kpmap::value_modulus(Dtype::bf16, 1), 257);
  EXPECT_EQ(kpmap::value_modulus(Dtype::bf16, 2), 129);
  EXPECT_EQ(kpmap::value_modulus(Dtype::bf16, 4), 65);
  EXPECT_EQ(kpmap::value_modulus(Dtype::bf16, 257), 1);
  EXPECT_EQ(kpmap::value_modulus(Dtype::fp16, 4), 513);
  EXPECT_EQ(kpmap::value_modulus(Dtype::fp32, 4), 1024);
  EXPECT_EQ(kpmap::value_modulus(Dtype::fp64, 4096), 1024);
  // n values below m sum to at most n (m - 1): within the exact integers of the type.
  const std::pair<Dtype, double> exact[] = {{Dtype::bf16, 256}, {Dtype::fp16, 2048}, {Dtype::fp32, 16777216}};
  for (const auto& [dtype, limit] : exact) {
    for (int n = 1; n <= 3000; ++n) ASSERT_LE(n * (kpmap::value_modulus(dtype, n) - 1.0), limit) << n;
  }
}

TEST(BenchConventions, SizesGrowGeometrically) {
  kpmap::BenchSpec s;
  s.min_bytes = 8, s.max_bytes = 128, s.factor = 4;
  EXPECT_EQ(kpmap::sweep_sizes(s), (std::vector<std::int64_t>{8, 32, 128}));
  s.max_bytes = 100;
  EXPECT_EQ(kpmap::sweep_sizes(s), (std::vector<std::int64_t>{8, 32}));
  s.min_bytes = s.max_bytes = 5;
  EXPECT_EQ(kpmap::sweep_sizes(s), (std::vector<std::int64_t>{5}));
  s.min_bytes = 1, s.max_bytes = 2147483647, s.factor = std::int64_t(1) << 62;  // no overflow
  EXPECT_EQ(kpmap::sweep_sizes(s), (std::vector<std::int64_t>{1}));
}

// --- the sweep --------------------------------------------------------------------------------

std::vector<kpmap::MeshAxis> test_mesh() {
  const int n = world_size();
  if (n == 4) return {{"data", 2}, {"model", 2}};
  if (n == 2) return {{"data", 2}, {"model", 1}};
  return {{"data", n}};
}

int axis_size(const std::vector<kpmap::MeshAxis>& mesh, const kpmap::AxisNames& axes) {
  int size = 1;
  for (const auto& name : axes.names()) {
    for (const auto& a : mesh) size *= a.name == name ? a.size : 1;
  }
  return size;
}

void expect_rows(const std::vector<kpmap::MeshAxis>& mesh, const kpmap::BenchSpec& spec,
                 const std::vector<kpmap::BenchRow>& rows) {
  const std::size_t per_axis = spec.collectives.size() * spec.dtypes.size();
  ASSERT_EQ(rows.size(), spec.axes.size() * per_axis);  // one size per sweep here
  std::vector<double> times;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const auto& axes = spec.axes[r / per_axis];
    const int n = axis_size(mesh, axes);
    const std::size_t esize = row.dtype == Dtype::fp64 ? 8 : row.dtype == Dtype::fp32 ? 4 : 2;
    const auto what = kpmap::to_string(row.collective) + " over " + row.axis;
    EXPECT_EQ(row.collective, spec.collectives[(r / spec.dtypes.size()) % spec.collectives.size()]) << what;
    EXPECT_EQ(row.dtype, spec.dtypes[r % spec.dtypes.size()]) << what;
    EXPECT_EQ(row.axis, axes.str()) << what;
    EXPECT_EQ(row.ranks, n) << what;
    EXPECT_EQ(row.wrong, 0) << what;
    // The one requested size is a multiple of n * esize here, so nothing is rounded.
    const bool blocked = row.collective == Collective::all_gather ||
                         row.collective == Collective::psum_scatter ||
                         row.collective == Collective::all_to_all;
    EXPECT_EQ(row.bytes, spec.min_bytes) << what;
    EXPECT_EQ(row.count, spec.min_bytes / static_cast<std::int64_t>(esize) / (blocked ? n : 1)) << what;
    EXPECT_GT(row.time_us, 0.0) << what;
    EXPECT_NEAR(row.algbw_gbs, row.bytes / 1e9 / (row.time_us * 1e-6), 1e-9 * row.algbw_gbs) << what;
    const double factor = blocked ? double(n - 1) / n
                          : row.collective == Collective::ppermute || row.collective == Collective::pbroadcast
                              ? 1.0
                              : 2.0 * (n - 1) / n;
    EXPECT_NEAR(row.busbw_gbs, row.algbw_gbs * factor, 1e-12 * row.algbw_gbs) << what;
    times.push_back(row.time_us);
  }
  // Every rank reports the same rows (the time is agreed over the mesh).
  std::vector<double> low = times, high = times;
  MPI_Allreduce(MPI_IN_PLACE, low.data(), static_cast<int>(low.size()), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, high.data(), static_cast<int>(high.size()), MPI_DOUBLE, MPI_MAX,
                MPI_COMM_WORLD);
  EXPECT_EQ(low, high);
}

// A few dozen collective calls at 4 ranks: every collective once over the whole mesh, then the
// other element types over a single axis and a tuple in reversed order.
TEST(BenchSweep, EveryRowIsExactWithItsConventions) {
  const auto axes = test_mesh();
  const kpmap::Mesh mesh(MPI_COMM_WORLD, axes);
  kpmap::BenchSpec all;
  all.collectives = every_collective;
  all.dtypes = {Dtype::fp32};
  all.axes = {world_size() == 4 ? kpmap::AxisNames{"data", "model"} : kpmap::AxisNames("data")};
  all.min_bytes = all.max_bytes = 64;
  all.warmup = 1;
  all.iterations = 2;
  int seen = 0;
  const auto rows = kpmap::run_sweep(mesh, all, [&](const kpmap::BenchRow&) { ++seen; });
  EXPECT_EQ(seen, static_cast<int>(rows.size()));
  expect_rows(axes, all, rows);

  kpmap::BenchSpec types = all;
  types.collectives = {Collective::psum, Collective::all_to_all};
  types.dtypes = {Dtype::fp64, Dtype::bf16, Dtype::fp16};
  types.axes = {kpmap::AxisNames("data")};
  if (axes.size() == 2) types.axes.push_back(kpmap::AxisNames{"model", "data"});
  types.warmup = 0;
  types.iterations = 1;
  expect_rows(axes, types, kpmap::run_sweep(mesh, types));
}

// The fields of one CSV line; a field in double quotes may hold commas.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out{""};
  bool quoted = false;
  for (char ch : line) {
    if (ch == '"') {
      quoted = !quoted;
    } else if (ch == ',' && !quoted) {
      out.emplace_back();
    } else {
      out.back() += ch;
    }
  }
  return out;
}

// bench.baseline: mpi adds the plain MPI call's time and busbw (positive, with the row's busbw
// factor) and the overhead to every row, the JSON and the CSV (one line per row after a header).
TEST(BenchSweep, BaselineColumnsAndCsv) {
  const auto axes = test_mesh();
  const kpmap::Mesh mesh(MPI_COMM_WORLD, axes);
  kpmap::BenchSpec spec;
  spec.collectives = {Collective::psum,       Collective::pmax,     Collective::all_gather, Collective::psum_scatter,
                      Collective::all_to_all, Collective::ppermute, Collective::pbroadcast};
  spec.dtypes = {Dtype::fp32, Dtype::bf16};
  spec.axes = {world_size() == 4 ? kpmap::AxisNames{"data", "model"} : kpmap::AxisNames("data")};
  spec.min_bytes = spec.max_bytes = 64;
  spec.warmup = 1;
  spec.iterations = 2;
  spec.baseline = true;
  const auto rows = kpmap::run_sweep(mesh, spec);
  ASSERT_EQ(rows.size(), spec.collectives.size() * spec.dtypes.size());
  for (const auto& row : rows) {
    const auto what = kpmap::to_string(row.collective) + " " + kpmap::to_string(row.dtype);
    EXPECT_EQ(row.wrong, 0) << what;
    EXPECT_GT(row.time_us, 0.0) << what;
    EXPECT_GT(row.baseline_time_us, 0.0) << what;
    const double factor = kpmap::busbw_factor(row.collective, row.ranks);
    EXPECT_NEAR(row.baseline_busbw_gbs, row.bytes / 1e9 / (row.baseline_time_us * 1e-6) * factor,
                1e-12 * row.baseline_busbw_gbs)
        << what;
    if (row.ranks > 1) {
      EXPECT_GT(row.baseline_busbw_gbs, 0.0) << what;
    }
    EXPECT_DOUBLE_EQ(kpmap::overhead(row), row.time_us / row.baseline_time_us - 1.0) << what;
  }
  const kpmap::Json json = kpmap::bench_json(rows, true);
  ASSERT_EQ(json.size(), rows.size());
  EXPECT_EQ(json[0]["baseline_time_us"].get<double>(), rows[0].baseline_time_us);
  EXPECT_EQ(json[0]["overhead"].get<double>(), kpmap::overhead(rows[0]));
  EXPECT_FALSE(kpmap::bench_json(rows, false)[0].contains("overhead"));

  std::istringstream csv(kpmap::bench_csv(rows, true));
  std::vector<std::string> lines;
  for (std::string line; std::getline(csv, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), rows.size() + 1);
  EXPECT_EQ(lines[0],
            "collective,dtype,axis,ranks,bytes,count,time_us,algbw_gbs,busbw_gbs,wrong,baseline_time_us,"
            "baseline_busbw_gbs,overhead");
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const auto f = csv_fields(lines[r + 1]);
    ASSERT_EQ(f.size(), 13u) << lines[r + 1];
    EXPECT_EQ(f[0], kpmap::to_string(rows[r].collective));
    EXPECT_EQ(f[1], kpmap::to_string(rows[r].dtype));
    EXPECT_EQ(f[2], rows[r].axis);
    EXPECT_EQ(std::stoll(f[4]), rows[r].bytes);
    EXPECT_EQ(std::stod(f[6]), rows[r].time_us);
    EXPECT_EQ(std::stod(f[10]), rows[r].baseline_time_us);
    EXPECT_GT(std::stod(f[10]), 0.0);
  }
  std::istringstream plain(kpmap::bench_csv(rows, false));
  std::string header;
  std::getline(plain, header);
  EXPECT_EQ(header, "collective,dtype,axis,ranks,bytes,count,time_us,algbw_gbs,busbw_gbs,wrong");
}

// --- the check --------------------------------------------------------------------------------

// Brute force from the definitions: what element i of axis index a's output must be.
double brute_force(Collective c, int a, int n, std::int64_t chunk, int m, std::int64_t i) {
  const auto v = [m](std::int64_t b, std::int64_t j) { return static_cast<double>((b + j) % m); };
  const auto reduce = [&](std::int64_t j) {
    double sum = 0, hi = -1, lo = 1e300;
    for (int b = 0; b < n; ++b) sum += v(b, j), hi = std::max(hi, v(b, j)), lo = std::min(lo, v(b, j));
    return c == Collective::pmax ? hi : c == Collective::pmin ? lo : c == Collective::pmean ? sum / n : sum;
  };
  switch (c) {
    case Collective::all_gather:
      return v(i / chunk, i % chunk);
    case Collective::psum_scatter:
      return reduce(a * chunk + i);
    case Collective::all_to_all:
      return v(i / chunk, a * chunk + i % chunk);
    case Collective::ppermute:
      return v((a + n - 1) % n, i);
    case Collective::pbroadcast:
      return v(0, i);
    default:
      return reduce(i);
  }
}

template <class T>
void run_once(Collective c, const kpmap::Mesh& mesh, const kpmap::View1<T>& in, const kpmap::View1<T>& out) {
  const int n = mesh.size();
  kpmap::Permutation shift;
  for (int b = 0; b < n; ++b) shift.push_back({b, (b + 1) % n});
  switch (c) {
    case Collective::psum:
      kpmap::psum(mesh, "i", in, out);
      break;
    case Collective::pmean:
      kpmap::pmean(mesh, "i", in, out);
      break;
    case Collective::pmax:
      kpmap::pmax(mesh, "i", in, out);
      break;
    case Collective::pmin:
      kpmap::pmin(mesh, "i", in, out);
      break;
    case Collective::all_gather:
      kpmap::all_gather(mesh, "i", in, out, 0, true);
      break;
    case Collective::psum_scatter:
      kpmap::psum_scatter(mesh, "i", in, out, 0, true);
      break;
    case Collective::all_to_all:
      kpmap::all_to_all(mesh, "i", in, out, 0, 0, true);
      break;
    case Collective::ppermute:
      kpmap::ppermute(mesh, "i", in, out, shift);
      break;
    case Collective::pbroadcast:
      kpmap::pbroadcast(mesh, "i", in, out, 0);
      break;
    case Collective::psum_reproducible:
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        kpmap::psum(mesh, "i", in, out, kpmap::reproducible);
      }
      break;
  }
}

// For each collective: the real result matches the brute force and the check finds 0 wrong;
// then k elements (a different k on each rank) are overwritten and the check finds exactly k;
// an output the collective never wrote (poisoned) is wrong everywhere.
template <class T>
void check_counts(Dtype dtype) {
  const kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", world_size()}});
  const int n = mesh.size(), a = mesh.rank();
  const int m = kpmap::value_modulus(dtype, n);
  for (Collective c : every_collective) {
    if (c == Collective::psum_reproducible && sizeof(T) == 2) continue;  // fp64 and fp32 only
    const auto msg = kpmap::message(c, 48 * n * static_cast<std::int64_t>(sizeof(T)), sizeof(T), n);
    const kpmap::View1<T> in("kpmap::test_in", msg.in), out("kpmap::test_out", msg.out);
    kpmap::bench::fill_input(in, a, m);
    run_once(c, mesh, in, out);
    const kpmap::bench::CheckCase k{c, a, n, msg.count, m};
    const auto what = kpmap::to_string(c) + " n " + std::to_string(n);
    EXPECT_EQ(kpmap::bench::count_wrong(k, out), 0) << what;

    // Counted rather than asserted: a rank that left early would hang the others' collectives.
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
    std::int64_t differ = 0;
    for (std::int64_t i = 0; i < msg.out; ++i) {
      const double want = static_cast<double>(static_cast<T>(brute_force(c, a, n, msg.count, m, i)));
      differ += static_cast<double>(host(i)) != want;
    }
    EXPECT_EQ(differ, 0) << what << ": elements that differ from the brute force";
    const std::int64_t corrupt = std::min<std::int64_t>(msg.out, 2 * a + 1);
    for (std::int64_t j = 0; j < corrupt; ++j) host(j * msg.out / corrupt) = static_cast<T>(-2.0);
    Kokkos::deep_copy(out, host);
    EXPECT_EQ(kpmap::bench::count_wrong(k, out), corrupt) << what;
    kpmap::bench::poison(out);
    EXPECT_EQ(kpmap::bench::count_wrong(k, out), msg.out) << what;
  }
}

TEST(BenchCheck, CountsExactlyTheCorruptedElementsFp32) { check_counts<float>(Dtype::fp32); }
TEST(BenchCheck, CountsExactlyTheCorruptedElementsBf16) { check_counts<kpmap::bf16>(Dtype::bf16); }

}  // namespace
