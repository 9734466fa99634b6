// The team gradient kernel (model/team_kernels.hpp) at the widths that broke the fused kernel's
// per-thread reducer on GPUs: F = 1, 3, 17, 1000 and 65536, row counts not multiples of its
// 32-row chunks, and more rows than its 1024 teams hold in one chunk each; every storage type
// (fp64, fp32, bf16 and fp16 with float sums) and every entry point (fused, forward_partial +
// backward on a 2-block model split, residual / residual_from_z + gradient_columns windows).
//
// The data are small integers (x in {0, 1}, w in {-1, 0, 1}, y in [-8, 8], b = 3), exact in every
// storage type, with every partial sum below 2^24: the residuals and gradients are then exact
// in float whatever the order of the sums, so they must equal an integer serial reference
// (plain loops in int64) exactly, and so must the fused kernel's. A sum rounded to 16 bits, a
// lost row or a wrong column cannot hide. The loss (sum of r^2, up to 2^39) is compared within
// the rounding of n float adds.
//
// The same checks cover the fused kernel's compile-time row lengths (8, 16, 32, 64 features in
// fp32 and fp64, model/fused_kernels.hpp reduce_part) and the widths around them, and a test on
// real-valued data asserts that each specialisation gives bitwise the generic kernel's sums.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ios>
#include <limits>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "kpmap/core/half.hpp"
#include "kpmap/model/host_isa.hpp"
#include "kpmap/model/linear_model.hpp"
#include "model_common.hpp"

namespace {

using kpmap::GradientKernel;
using kpmap::View1;
using kpmap::test::to_host;

std::uint64_t mix(std::uint64_t a) {  // splitmix64
  a += 0x9e3779b97f4a7c15ull;
  a = (a ^ (a >> 30)) * 0xbf58476d1ce4e5b9ull;
  a = (a ^ (a >> 27)) * 0x94d049bb133111ebull;
  return a ^ (a >> 31);
}

struct Data {
  long long n, F;
  bool bias;
  std::vector<int> x, w, y;  // x row-major
  int b = 3;
};

Data make_data(long long n, long long F, bool bias) {
  Data d{n, F, bias, {}, {}, {}};
  d.x.resize(static_cast<std::size_t>(n * F));
  for (std::size_t k = 0; k < d.x.size(); ++k) d.x[k] = static_cast<int>(mix(k) % 2);
  const int weights[4] = {-1, 0, 1, 1};  // mean 1/4: residuals grow with F
  for (long long j = 0; j < F; ++j) d.w.push_back(weights[mix(1000003 * j + 7) % 4]);
  for (long long i = 0; i < n; ++i) d.y.push_back(static_cast<int>(mix(7000001 * i + 3) % 17) - 8);
  if (!bias) d.b = 0;
  return d;
}

// The serial reference, in integers: r_i, z_i = x_i . w + b, sum_i r_i x_ij, sum r, sum r^2.
struct Reference {
  std::vector<long long> r, z, gw;
  long long gb = 0, loss = 0;
};

Reference reference(const Data& d) {
  Reference ref;
  ref.gw.assign(static_cast<std::size_t>(d.F), 0);
  for (long long i = 0; i < d.n; ++i) {
    long long z = d.b;
    for (long long j = 0; j < d.F; ++j) z += static_cast<long long>(d.x[i * d.F + j]) * d.w[j];
    const long long r = z - d.y[i];
    ref.z.push_back(z);
    ref.r.push_back(r);
    ref.gb += r;
    ref.loss += r * r;
    for (long long j = 0; j < d.F; ++j) ref.gw[j] += r * d.x[i * d.F + j];
  }
  return ref;
}

template <class T, class Layout>
Kokkos::View<T**, Layout, kpmap::device_type> matrix(const Data& d, long long c0, long long c1) {
  Kokkos::View<T**, Layout, kpmap::device_type> X("X", d.n, c1 - c0);
  auto h = Kokkos::create_mirror_view(X);
  for (long long i = 0; i < d.n; ++i) {
    for (long long j = c0; j < c1; ++j) h(i, j - c0) = static_cast<T>(static_cast<double>(d.x[i * d.F + j]));
  }
  Kokkos::deep_copy(X, h);
  return X;
}

template <class E>
View1<E> vector_of(const std::vector<int>& v, long long c0, long long c1) {
  std::vector<double> values(v.begin() + c0, v.begin() + c1);
  return kpmap::test::device_vector<E>(values);
}

constexpr double start = 1;  // the gradients' starting value (the model adds onto it)

template <class T, class Acc, class Layout>
struct Check {
  const Data& d;
  const Reference& ref;
  std::string what;

  // grad_w, grad_b = start + 2 * the reference sums, exactly; the loss to n float roundings.
  void gradient(const View1<Acc>& grads, double loss, const std::string& path) const {
    const auto h = to_host(grads);
    long long wrong = 0, first = -1;
    for (long long j = 0; j < d.F; ++j) {
      if (static_cast<double>(h(j)) != start + 2.0 * static_cast<double>(ref.gw[j])) {
        if (wrong++ == 0) first = j;
      }
    }
    EXPECT_EQ(wrong, 0) << what << path << ": first wrong column " << first << " of " << d.F << ": "
                        << (first >= 0 ? static_cast<double>(h(first)) : 0.0) << " vs "
                        << (first >= 0 ? start + 2.0 * static_cast<double>(ref.gw[first]) : 0.0);
    if (d.bias) {
      EXPECT_EQ(static_cast<double>(h(d.F)), start + 2.0 * static_cast<double>(ref.gb)) << what << path;
    }
    const double eps = std::is_same_v<Acc, double> ? 0x1.0p-53 : 0x1.0p-24;
    const double exact = static_cast<double>(ref.loss);
    EXPECT_NEAR(loss, exact, static_cast<double>(d.n + 1) * eps * exact) << what << path << " loss";
  }

  View1<Acc> grads() const {
    return kpmap::test::device_vector<Acc>(
        std::vector<double>(static_cast<std::size_t>(d.F + (d.bias ? 1 : 0)), start));
  }
  View1<T> params() const {
    std::vector<int> theta = d.w;
    if (d.bias) theta.push_back(d.b);
    return vector_of<T>(theta, 0, static_cast<long long>(theta.size()));
  }

  void run(GradientKernel kernel) const {
    kpmap::execution_space exec;
    const long long F = d.F;
    const auto X = matrix<T, Layout>(d, 0, F);
    const View1<T> y = vector_of<T>(d.y, 0, d.n), params = this->params();
    const auto [w, b] = kpmap::split_params(params, F);
    kpmap::LinearModel<T, Acc> model(kernel);
    const std::string k = " " + to_string(kernel) + " ";

    {  // one model rank, one pass
      const View1<Acc> g = grads();
      const auto [gw, gb] = kpmap::split_params(g, F);
      gradient(g, model.fused(exec, X, y, w, b, gw, gb), k + "fused()");
    }
    // Model-parallel: two column blocks, z summed on the host (the psum over `model`).
    const long long half = F / 2;
    const long long blocks[3] = {0, half, F};
    std::vector<double> z(static_cast<std::size_t>(d.n), 0.0);
    for (int m = 0; m < 2; ++m) {
      const View1<Acc> zm("z", d.n);
      const View1<T> wm = vector_of<T>(d.w, blocks[m], blocks[m + 1]);
      model.forward_partial(exec, matrix<T, Layout>(d, blocks[m], blocks[m + 1]), wm,
                            m == 0 ? b : Kokkos::subview(b, Kokkos::make_pair(0LL, 0LL)), zm);
      const auto h = to_host(zm);
      for (long long i = 0; i < d.n; ++i) z[i] += static_cast<double>(h(i));
    }
    long long z_wrong = 0;
    for (long long i = 0; i < d.n; ++i) z_wrong += z[i] != static_cast<double>(ref.z[i]);
    EXPECT_EQ(z_wrong, 0) << what << k << "forward_partial";
    const View1<Acc> zv = kpmap::test::device_vector<Acc>(z);
    {
      const View1<Acc> g = grads();
      const auto [gw, gb] = kpmap::split_params(g, F);
      double loss = 0;
      for (int m = 0; m < 2; ++m) {
        const auto gwm = Kokkos::subview(gw, Kokkos::make_pair(blocks[m], blocks[m + 1]));
        const auto gbm =
            Kokkos::subview(gb, Kokkos::make_pair(0LL, m == 0 ? static_cast<long long>(gb.extent(0)) : 0LL));
        loss = model.backward(exec, matrix<T, Layout>(d, blocks[m], blocks[m + 1]), zv, y, gwm, gbm);
      }
      gradient(g, loss, k + "forward_partial + backward");
    }
    // Two passes: residuals, then three column windows, last first.
    for (bool from_z : {false, true}) {
      const View1<Acc> g = grads();
      const auto [gw, gb] = kpmap::split_params(g, F);
      const View1<Acc> r("r", d.n);
      const double loss =
          from_z ? model.residual_from_z(exec, X, zv, y, r, gb) : model.residual(exec, X, y, w, b, r, gb);
      const auto rh = to_host(r);
      long long r_wrong = 0;
      for (long long i = 0; i < d.n; ++i)
        r_wrong += static_cast<double>(rh(i)) != static_cast<double>(ref.r[i]);
      EXPECT_EQ(r_wrong, 0) << what << k << (from_z ? "residual_from_z" : "residual");
      const long long cuts[4] = {0, F / 3, F / 3 + F / 4, F};
      for (int c = 2; c >= 0; --c) {
        model.gradient_columns(exec, X, r, cuts[c],
                               Kokkos::subview(gw, Kokkos::make_pair(cuts[c], cuts[c + 1])));
      }
      gradient(g, loss, k + (from_z ? "residual_from_z + gradient_columns" : "residual + gradient_columns"));
    }
  }
};

template <class T, class Acc, class Layout = Kokkos::LayoutRight>
void check(long long n, long long F, bool bias) {
  const Data d = make_data(n, F, bias);
  const Reference ref = reference(d);
  const std::string what = std::string(std::is_same_v<T, double>        ? "fp64"
                                       : std::is_same_v<T, float>       ? "fp32"
                                       : std::is_same_v<T, kpmap::bf16> ? "bf16"
                                                                        : "fp16") +
                           (std::is_same_v<Layout, Kokkos::LayoutRight> ? " LayoutRight" : " LayoutLeft") +
                           " n " + std::to_string(n) + " F " + std::to_string(F) +
                           (bias ? " bias" : " no bias");
  // Not vacuous: at the large widths some gradient (1 + 2 sum, odd) needs more significant bits
  // than bf16 (8) or fp16 (11) have, so a sum kept in 16 bits would show.
  long long largest = 0;
  for (long long g : ref.gw) largest = std::max(largest, g < 0 ? -g : g);
  if (F >= 1000 && n >= 33) {
    EXPECT_GT(largest, 1024) << what;
  }
  const Check<T, Acc, Layout> c{d, ref, what};
  c.run(GradientKernel::team);
  // the same exact values from the other kernel, where it takes that width (kpmap::fused_fits)
  if (kpmap::fused_fits(F, sizeof(Acc))) c.run(GradientKernel::fused);
}

template <class T, class Acc>
void check_widths() {
  for (long long F : {1LL, 3LL, 17LL, 1000LL}) {
    for (long long n : {1LL, 5LL, 33LL, 70LL}) check<T, Acc>(n, F, true);
    check<T, Acc>(33, F, false);
  }
  check<T, Acc>(3, 65536, true);
  check<T, Acc>(37, 65536, true);
  // 1024 teams of 33 or 32 rows: two chunks for most teams, the last team shorter.
  check<T, Acc>(33000, 3, true);
  check<T, Acc, Kokkos::LayoutLeft>(70, 17, true);  // View indexing instead of row pointers
}

TEST(TeamKernel, ExactAtEveryWidthFp64) { check_widths<double, double>(); }
TEST(TeamKernel, ExactAtEveryWidthFp32) { check_widths<float, float>(); }
TEST(TeamKernel, ExactAtEveryWidthBf16) { check_widths<kpmap::bf16, float>(); }
TEST(TeamKernel, ExactAtEveryWidthFp16) { check_widths<kpmap::fp16, float>(); }

// The fused kernel at its compile-time row lengths and one either side: fused() and backward() on
// a 2-block split (whose blocks are specialised too at twice a specialised width) run the
// specialisations, the residual + column-window passes the generic code; all exact. 2048 and
// 4096 features: fused() sums the blocks of 8 rows in two halves (split_block_bytes) in fp64 at
// both and in fp32 at 4096, the passes whole blocks.
template <class T>
void check_fused_widths() {
  for (long long F :
       {7LL, 8LL, 9LL, 15LL, 16LL, 17LL, 31LL, 32LL, 33LL, 63LL, 64LL, 65LL, 128LL, 2048LL, 4096LL}) {
    if (!kpmap::fused_fits(F, sizeof(T))) continue;
    for (long long n : {1LL, 8LL, 13LL, 70LL}) {
      const Data d = make_data(n, F, n != 13);
      const Reference ref = reference(d);
      const std::string what = std::string(std::is_same_v<T, double> ? "fp64" : "fp32") + " n " + std::to_string(n) +
                               " F " + std::to_string(F);
      Check<T, T, Kokkos::LayoutRight>{d, ref, what}.run(GradientKernel::fused);
    }
  }
}

TEST(FusedKernel, ExactAtTheCompileTimeWidthsFp64) { check_fused_widths<double>(); }
TEST(FusedKernel, ExactAtTheCompileTimeWidthsFp32) { check_fused_widths<float>(); }

// An n x F LayoutRight matrix of real values (kpmap::test::hashed's stream), rounded to T.
template <class T>
Kokkos::View<T**, Kokkos::LayoutRight, kpmap::device_type> hashed_matrix(long long n, long long F, std::uint64_t stream,
                                                                         bool integral = false) {
  std::vector<double> xs = kpmap::test::hashed(static_cast<std::size_t>(n * F), stream);
  if (integral) {
    for (double& e : xs) e = std::round(e);
  }
  Kokkos::View<T**, Kokkos::LayoutRight, kpmap::device_type> X("X", n, F);
  auto h = Kokkos::create_mirror_view(X);
  for (long long i = 0; i < n; ++i) {
    for (long long j = 0; j < F; ++j) h(i, j) = static_cast<T>(xs[i * F + j]);
  }
  Kokkos::deep_copy(X, h);
  return X;
}

// Each compile-time row length gives bitwise the sums of the generic kernel (fixed_f = 0) on
// real-valued data, for both residual forms (x.w + b - y and z - y): the specialisation only
// unrolls, it does not reorder a sum. T: the storage type, Acc: the sums' (bf16 rows: float).
template <class T, class Acc = T>
void check_fixed_width_is_generic() {
  namespace md = kpmap::model_detail;
  kpmap::execution_space exec;
  for (long long F : {8LL, 16LL, 32LL, 64LL}) {
    for (long long n : {5LL, 8LL, 77LL, 1000LL}) {
      const auto X = hashed_matrix<T>(n, F, 3);
      const View1<T> y = kpmap::test::device_vector<T>(kpmap::test::hashed(n, 4));
      const View1<T> z = kpmap::test::device_vector<T>(kpmap::test::hashed(n, 5));
      const View1<T> params = kpmap::test::device_vector<T>(kpmap::test::hashed(F + 1, 6));
      const auto [w, b] = kpmap::split_params(params, F);
      const View1<Acc> fixed("fixed", F + 2), generic("generic", F + 2);
      const char* type = std::is_same_v<T, double> ? "fp64" : std::is_same_v<T, float> ? "fp32" : "bf16";
      const std::string what = std::string(type) + " n " + std::to_string(n) + " F " + std::to_string(F);
      const auto expect_same = [&](const char* form) {
        const auto a = to_host(fixed), g = to_host(generic);
        long long differ = 0;
        for (long long k = 0; k < F + 2; ++k) differ += std::memcmp(&a(k), &g(k), sizeof(Acc)) != 0;
        EXPECT_EQ(differ, 0) << what << " " << form;
      };
      md::reduce_part<md::Fused, Acc, md::Part::all>(exec, X, y, w, b, y, y, 0, 0, fixed);
      md::reduce_part_as<md::Fused, Acc, md::Part::all, 0>(exec, X, y, w, b, y, y, 0, 0, generic);
      exec.fence();
      expect_same("x.w + b - y");
      md::reduce_part<md::FromZ, Acc, md::Part::all>(exec, X, y, w, b, z, z, 0, 0, fixed);
      md::reduce_part_as<md::FromZ, Acc, md::Part::all, 0>(exec, X, y, w, b, z, z, 0, 0, generic);
      exec.fence();
      expect_same("z - y");
    }
  }
}

TEST(FusedKernel, CompileTimeWidthIsBitwiseGenericFp64) { check_fixed_width_is_generic<double>(); }
TEST(FusedKernel, CompileTimeWidthIsBitwiseGenericFp32) { check_fixed_width_is_generic<float>(); }
TEST(FusedKernel, CompileTimeWidthIsBitwiseGenericBf16) { check_fixed_width_is_generic<kpmap::bf16, float>(); }

// Under test_team_kernel.threads2 the run must have two threads.
TEST(FusedChunks, ThreadCount) { kpmap::test::expect_thread_count(); }

// The chunked reduction (model/fused_kernels.hpp reduce_items) is each chunk of consecutive work
// items summed from zero, the chunks' sums added in chunk order, whichever thread ran which
// chunk: bitwise the same as running the work items on the host one after the other, chunk by
// chunk, and folding the chunks in order. Chunks of 1, 3 and 7 items (the last one short).
template <class T, class Acc = T>
void check_chunks_join_in_order() {
  namespace md = kpmap::model_detail;
  if constexpr (!kpmap::host_execution_v) {
    GTEST_SKIP() << "the reference runs the work items on the host";
  } else {
    kpmap::execution_space exec;
    const long long n = 203, F = 37;  // 26 work items of 8 rows, the last one of 3 rows
    const auto X = hashed_matrix<T>(n, F, 7);
    const View1<T> y = kpmap::test::device_vector<T>(kpmap::test::hashed(n, 8));
    const View1<T> params = kpmap::test::device_vector<T>(kpmap::test::hashed(F + 1, 9));
    const auto [w, b] = kpmap::split_params(params, F);
    using functor = md::GradientReduce<md::Fused, Acc, std::remove_const_t<decltype(X)>, View1<T>,
                                       std::remove_const_t<decltype(w)>, std::remove_const_t<decltype(b)>, View1<T>>;
    const functor f{static_cast<std::size_t>(F + 2), X, y, w, b, y, y, 0, 0};
    const long long items = (n + functor::block - 1) / functor::block;
    for (long long chunk : {1LL, 3LL, 7LL}) {
      const View1<Acc> sums("sums", F + 2);
      md::reduce_items("test", exec, f, items, chunk, sums);
      exec.fence();
      std::vector<Acc> expect, part(static_cast<std::size_t>(F + 2));
      for (long long c0 = 0; c0 < items; c0 += chunk) {
        f.init(part.data());
        for (long long item = c0; item < std::min(items, c0 + chunk); ++item) f(item, part.data());
        if (c0 == 0) {
          expect = part;
        } else {
          for (std::size_t k = 0; k < part.size(); ++k) expect[k] += part[k];
        }
      }
      const auto got = to_host(sums);
      long long differ = 0;
      for (long long k = 0; k < F + 2; ++k) differ += std::memcmp(&got(k), &expect[k], sizeof(Acc)) != 0;
      EXPECT_EQ(differ, 0) << "chunks of " << chunk << " items";
    }
  }
}

TEST(FusedChunks, JoinInChunkOrderFp64) { check_chunks_join_in_order<double>(); }
TEST(FusedChunks, JoinInChunkOrderFp32) { check_chunks_join_in_order<float>(); }
TEST(FusedChunks, JoinInChunkOrderBf16) { check_chunks_join_in_order<kpmap::bf16, float>(); }

// The chunk size on `threads` threads: a 32nd of a thread's share, at least 256 KiB of X and 64
// times the sums, one chunk on one thread (values worked out by hand).
TEST(FusedChunks, ChunkSizes) {
  // 4 Mi rows of 64 bf16 features (1 KiB work items), 66 float sums
  EXPECT_EQ(kpmap::reduce_chunk_items(524288, 1024, 264, 1), 524288);  // one thread: one chunk
  EXPECT_EQ(kpmap::reduce_chunk_items(524288, 1024, 264, 2), 8192);    // 524288 / 64
  EXPECT_EQ(kpmap::reduce_chunk_items(524288, 1024, 264, 128), 256);   // 256 KiB, not 128 items
  EXPECT_GE(kpmap::reduce_chunk_items(100, 1024, 264, 2), 100);        // 100 KiB of X: one chunk
  // 4096 fp64 features (256 KiB work items) on 1024 threads: 64 x 32784 bytes of sums, 9 items
  EXPECT_EQ(kpmap::reduce_chunk_items(100000, 262144, 32784, 1024), 9);
}

// The fused reduction gives the same bits every time, also while another thread keeps one of the
// cores busy, so that the threads run at different speeds and the chunks go to them differently
// (X of 4 MiB in fp32: 16 chunks on two threads).
template <class T, class Acc = T>
void check_same_bits_under_load() {
  namespace md = kpmap::model_detail;
  kpmap::execution_space exec;
  const long long n = 16384, F = 64;
  const auto X = hashed_matrix<T>(n, F, 11);
  const View1<T> y = kpmap::test::device_vector<T>(kpmap::test::hashed(n, 12));
  const View1<T> params = kpmap::test::device_vector<T>(kpmap::test::hashed(F + 1, 13));
  const auto [w, b] = kpmap::split_params(params, F);
  const View1<Acc> first("first", F + 2), again("again", F + 2);
  md::reduce_part<md::Fused, Acc, md::Part::all>(exec, X, y, w, b, y, y, 0, 0, first);
  exec.fence();
  const auto expect = to_host(first);
  std::atomic<bool> stop{false};
  for (int round = 0; round < 8; ++round) {
    std::thread busy;
    if (round % 2 == 1) {
      busy = std::thread([&stop] {
        while (!stop.load(std::memory_order_relaxed)) {
        }
      });
    }
    md::reduce_part<md::Fused, Acc, md::Part::all>(exec, X, y, w, b, y, y, 0, 0, again);
    exec.fence();
    if (busy.joinable()) {
      stop = true;
      busy.join();
      stop = false;
    }
    const auto got = to_host(again);
    long long differ = 0;
    for (long long k = 0; k < F + 2; ++k) differ += std::memcmp(&got(k), &expect(k), sizeof(Acc)) != 0;
    EXPECT_EQ(differ, 0) << "round " << round;
  }
}

TEST(FusedChunks, SameBitsUnderLoadFp32) { check_same_bits_under_load<float>(); }
TEST(FusedChunks, SameBitsUnderLoadBf16) { check_same_bits_under_load<kpmap::bf16, float>(); }

// The fp32 / fp64 block loops (block_dot one row or 4 rows at a time, its requests before a
// group's dot product or during it; block_axpy), which on GCC-compatible host compilers run on
// vector types, against plain serial loops in the order the kernel documents: row q's
// dot product keeps `lanes` partial sums (term j in partial j % lanes) folded pairwise by
// halves, and each gradient element adds the rows' products in row order. Real-valued data, a
// negative zero among the coefficients, widths with and without a partial cache line or a
// partial group of partial sums: the sums must be bitwise equal. With the loops of the baseline
// (16-byte vectors) and of the AVX2 version (32-byte vectors, loops over rows unrolled;
// model/host_isa.hpp), compiled for the baseline target (each product rounded, then added) and,
// as the AVX2 version runs them, for AVX2 and FMA (each product fused with its sum); and the
// AVX-512 version's (64-byte vectors; fp32 dot products on 32-byte ones) as it runs them.
// f() compiled for the baseline target, or (with_fma) inlined into a function compiled for AVX2
// and FMA, as the fused kernel's AVX2 version runs its loops (run_avx2), for the loops with
// `fused` products. with_fma needs a build with dispatch on a CPU with AVX2 and FMA (fma_runs).
// with_avx512: inlined into a function compiled for AVX-512, as the AVX-512 version runs its
// loops (run_avx512); it needs a CPU with AVX-512 (avx512_runs).
bool fma_runs() {
  namespace md = kpmap::model_detail;
  return md::host_isa() == md::HostIsa::avx2 || md::host_isa() == md::HostIsa::avx512;
}
bool avx512_runs() { return kpmap::model_detail::host_isa() == kpmap::model_detail::HostIsa::avx512; }
#if defined(KPMAP_AVX2_DISPATCH)
template <class F>
__attribute__((target("avx2,fma"), flatten)) void run_with_fma(const F& f) {
  f();
}
template <class F>
__attribute__((target(KPMAP_AVX512_TARGET), flatten)) void run_with_avx512(const F& f) {
  f();
}
#endif
template <bool with_fma, bool with_avx512 = false, class F>
void run_loops(const F& f) {
#if defined(KPMAP_AVX2_DISPATCH)
  if constexpr (with_avx512) return run_with_avx512(f);
  if constexpr (with_fma) return run_with_fma(f);
#endif
  f();
}

// a * b + c, rounded once (fused) or twice: the reference for loops run with or without FMA.
template <bool fused, class T>
T madd(T a, T b, T c) {
  if constexpr (fused) {
    return std::fma(a, b, c);
  } else {
    const T product = a * b;  // rounded here: the test is compiled for the baseline target
    return product + c;
  }
}

template <class T, int vector_bytes, bool unroll, bool fused = false>
void check_block_loops() {
  if (fused && !fma_runs()) GTEST_SKIP() << "no AVX2 + FMA version in this build or on this CPU";
  if (vector_bytes == 64 && !avx512_runs()) GTEST_SKIP() << "no AVX-512 version in this build or on this CPU";
  namespace md = kpmap::model_detail;
  constexpr int rows = 8, lanes1 = md::dot_lanes<T, T, 1>, lanes4 = md::dot_lanes<T, T, 4>;
  for (long long F : {1LL, 5LL, 8LL, 16LL, 24LL, 67LL, 256LL, 1000LL, 1029LL}) {
    const long long stride = F + 3;  // rows not aligned to 16 bytes
    const std::vector<double> xs = kpmap::test::hashed(static_cast<std::size_t>(rows * stride), 7);
    const std::vector<double> ws = kpmap::test::hashed(static_cast<std::size_t>(F), 8);
    const std::vector<double> gs = kpmap::test::hashed(static_cast<std::size_t>(F), 9);
    std::vector<T> x(xs.begin(), xs.end()), w(ws.begin(), ws.end()), g(gs.begin(), gs.end()), ref_g = g;
    T a[rows], d1[rows], d4[rows], d1_lines[rows], d4_lines[rows];  // requests all at once, line by line
    for (int q = 0; q < rows; ++q) a[q] = static_cast<T>(q - 3) / T(7);
    a[3] = -T(0);
    run_loops<fused, vector_bytes == 64>([&] {
      md::block_dot<rows, 1, vector_bytes, unroll, fused>(x.data(), stride, w.data(), F, d1, 0, true);
      md::block_dot<rows, 4, vector_bytes, unroll, fused>(x.data(), stride, w.data(), F, d4, 0, true);
      md::block_dot<rows, 1, vector_bytes, unroll, fused>(x.data(), stride, w.data(), F, d1_lines, 0, false);
      md::block_dot<rows, 4, vector_bytes, unroll, fused>(x.data(), stride, w.data(), F, d4_lines, 0, false);
      md::block_axpy<rows, vector_bytes, unroll, fused>(g.data(), a, x.data(), stride, F, x.data());
    });
    long long differ = 0;
    // Row q's sum with `lanes` partial sums, folded by halves.
    const auto plain_dot = [&](int q, auto lanes) {
      T part[decltype(lanes)::value] = {};
      for (long long j = 0; j < F; ++j) part[j % lanes] = madd<fused>(x[q * stride + j], w[j], part[j % lanes]);
      for (int width = lanes / 2; width > 0; width /= 2) {
        for (int k = 0; k < width; ++k) part[k] += part[k + width];
      }
      return part[0];
    };
    for (int q = 0; q < rows; ++q) {
      const T s1 = plain_dot(q, std::integral_constant<int, lanes1>()),
              s4 = plain_dot(q, std::integral_constant<int, lanes4>());
      differ += std::memcmp(&s1, &d1[q], sizeof(T)) != 0;
      differ += std::memcmp(&s4, &d4[q], sizeof(T)) != 0;
      differ += std::memcmp(&s1, &d1_lines[q], sizeof(T)) != 0;
      differ += std::memcmp(&s4, &d4_lines[q], sizeof(T)) != 0;
    }
    for (long long j = 0; j < F; ++j) {
      T sum = ref_g[j];
      for (int q = 0; q < rows; ++q) sum = madd<fused>(a[q], x[q * stride + j], sum);
      differ += std::memcmp(&sum, &g[j], sizeof(T)) != 0;
    }
    EXPECT_EQ(differ, 0) << "F " << F;
  }
}

TEST(FusedKernel, BlockLoopsAreThePlainSumsFp64) { check_block_loops<double, 16, false>(); }
TEST(FusedKernel, BlockLoopsAreThePlainSumsFp32) { check_block_loops<float, 16, false>(); }
TEST(FusedKernel, BlockLoopsAreThePlainSumsAvx2LoopsFp64) { check_block_loops<double, 32, true>(); }
TEST(FusedKernel, BlockLoopsAreThePlainSumsAvx2LoopsFp32) { check_block_loops<float, 32, true>(); }
#if defined(KPMAP_AVX2_DISPATCH)  // fused products exist in the AVX2 + FMA version only
TEST(FusedKernel, BlockLoopsAreThePlainSumsAvx2FmaFp64) { check_block_loops<double, 32, true, true>(); }
TEST(FusedKernel, BlockLoopsAreThePlainSumsAvx2FmaFp32) { check_block_loops<float, 32, true, true>(); }
TEST(FusedKernel, BlockLoopsAreThePlainSumsAvx512Fp64) { check_block_loops<double, 64, true, true>(); }
TEST(FusedKernel, BlockLoopsAreThePlainSumsAvx512Fp32) { check_block_loops<float, 64, true, true>(); }
#endif

// The fused kernel's AVX2 version (model/host_isa.hpp) against its baseline loops, through every
// entry point of the fused path (fused, backward, residual and residual_from_z,
// gradient_columns windows), for every storage type. Widths: the compile-time ones, partial cache
// lines and lane groups, rows interleaved 4 at a time (fp64 1029, fp32 2051), blocks summed in
// halves (4096).
// On integer-valued data (every value in {-1, 0, 1}: every product and partial sum is an exact
// small integer, so neither the order nor the fused products change a bit) the results must be
// bitwise equal: no term lost, doubled or added to the wrong sum. On real-valued data the two
// round their products differently (once with FMA, twice without) and must agree to rounding:
// each result within 1e-3 (float sums) or 1e-11 (double) of the largest magnitude in its group
// (a gradient, the residuals, a loss). Where the AVX2 version runs, the exact tests above run it;
// this test carries their checks over to the baseline loops. Skipped where the build or the CPU
// has no AVX2 version.
template <class T, class Acc>
std::vector<std::vector<double>> fused_path_results(long long n, long long F, bool integral) {
  kpmap::execution_space exec;
  const auto values = [&](long long count, std::uint64_t stream) {
    std::vector<double> v = kpmap::test::hashed(static_cast<std::size_t>(count), stream);
    if (integral) {
      for (double& e : v) e = std::round(e);
    }
    return v;
  };
  const auto X = hashed_matrix<T>(n, F, 11, integral);
  const View1<T> y = kpmap::test::device_vector<T>(values(n, 12));
  const View1<Acc> z = kpmap::test::device_vector<Acc>(values(n, 13));
  const View1<T> params = kpmap::test::device_vector<T>(values(F + 1, 14));
  const auto [w, b] = kpmap::split_params(params, F);
  kpmap::LinearModel<T, Acc> model(GradientKernel::fused);
  std::vector<std::vector<double>> out;
  const auto keep = [&](const View1<Acc>& v, double loss) {
    const auto hv = to_host(v);
    out.emplace_back();
    for (std::size_t k = 0; k < hv.extent(0); ++k) out.back().push_back(static_cast<double>(hv(k)));
    out.push_back({loss});
  };
  const auto gradient = [&] { return View1<Acc>("g", F + 1); };
  {
    const View1<Acc> g = gradient();
    const auto [gw, gb] = kpmap::split_params(g, F);
    keep(g, model.fused(exec, X, y, w, b, gw, gb));
  }
  {
    const View1<Acc> g = gradient();
    const auto [gw, gb] = kpmap::split_params(g, F);
    keep(g, model.backward(exec, X, z, y, gw, gb));
  }
  for (bool from_z : {false, true}) {
    const View1<Acc> g = gradient(), r("r", n);
    const auto [gw, gb] = kpmap::split_params(g, F);
    const double loss = from_z ? model.residual_from_z(exec, X, z, y, r, gb) : model.residual(exec, X, y, w, b, r, gb);
    const long long cuts[3] = {0, F / 3, F};
    for (int c = 0; c < 2; ++c) {
      model.gradient_columns(exec, X, r, cuts[c], Kokkos::subview(gw, Kokkos::make_pair(cuts[c], cuts[c + 1])));
    }
    keep(r, loss);
    keep(g, 0);
  }
  return out;
}

// Puts back, when it goes out of scope, the host loops that ran when it was made (tests that
// switch them with set_host_isa).
struct RestoreHostIsa {
  kpmap::model_detail::HostIsa isa = kpmap::model_detail::host_isa();
  ~RestoreHostIsa() { kpmap::model_detail::set_host_isa(isa); }
};

// The fused path's results (fused_path_results) with host loops `a`, then `b` (set_host_isa): how
// many of b's results differ from a's (any bit where tolerance is 0, else by more than tolerance
// times the largest magnitude in their group of a's), and how many there are.
template <class T, class Acc>
std::pair<long long, long long> versions_differ(kpmap::model_detail::HostIsa a, kpmap::model_detail::HostIsa b,
                                                long long n, long long F, bool integral, double tolerance) {
  namespace md = kpmap::model_detail;
  EXPECT_TRUE(md::set_host_isa(a));
  const auto ra = fused_path_results<T, Acc>(n, F, integral);
  EXPECT_TRUE(md::set_host_isa(b));
  const auto rb = fused_path_results<T, Acc>(n, F, integral);
  long long differ = 0, count = 0;
  EXPECT_EQ(ra.size(), rb.size());
  for (std::size_t k = 0; k < ra.size() && k < rb.size(); ++k) {
    EXPECT_EQ(ra[k].size(), rb[k].size());
    double scale = 0;
    for (double v : ra[k]) scale = std::max(scale, std::abs(v));
    for (std::size_t e = 0; e < ra[k].size() && e < rb[k].size(); ++e, ++count) {
      const double u = ra[k][e], v = rb[k][e];
      differ += tolerance == 0 ? std::memcmp(&u, &v, sizeof(double)) != 0 : !(std::abs(u - v) <= tolerance * scale);
    }
  }
  return {differ, count};
}

template <class T, class Acc>
void check_avx2_agrees_with_baseline() {
  namespace md = kpmap::model_detail;
  if (!fma_runs()) {
    GTEST_SKIP() << "the fused kernel runs its " << md::host_isa_name(md::host_isa())
                 << " loops here: no AVX2 version";
  }
  RestoreHostIsa restore;
  const double tolerance = std::is_same_v<Acc, float> ? 1e-3 : 1e-11;
  for (bool integral : {true, false}) {
    for (long long F : {1LL, 7LL, 16LL, 33LL, 64LL, 100LL, 1029LL, 2051LL, 4096LL}) {
      for (long long n : {13LL, 203LL}) {
        const auto [differ, count] =
            versions_differ<T, Acc>(md::HostIsa::baseline, md::HostIsa::avx2, n, F, integral, integral ? 0 : tolerance);
        EXPECT_EQ(differ, 0) << (integral ? "integer-valued" : "real-valued") << " n " << n << " F " << F << ": "
                             << differ << " of " << count << " results differ";
      }
    }
  }
}

TEST(FusedKernel, Avx2AgreesWithBaselineFp64) { check_avx2_agrees_with_baseline<double, double>(); }
TEST(FusedKernel, Avx2AgreesWithBaselineFp32) { check_avx2_agrees_with_baseline<float, float>(); }
TEST(FusedKernel, Avx2AgreesWithBaselineBf16) { check_avx2_agrees_with_baseline<kpmap::bf16, float>(); }
TEST(FusedKernel, Avx2AgreesWithBaselineFp16) { check_avx2_agrees_with_baseline<kpmap::fp16, float>(); }

// The AVX-512 version (model/host_isa.hpp: bf16 rows, fp64 rows from 512 features and fp32 rows
// from 2048 on 64-byte vectors, the AVX2 version for the others) against the AVX2 version,
// through every entry point of the fused path, on real-valued data: the same products fused into
// the same sums in the same order, so every result must be bitwise equal. Widths: the
// compile-time ones (16, 64), partial groups and lines (1, 7, 33, 100: the AVX-512 bf16 dot
// product's masked last step), 1029 (fp64 rows in the AVX-512 version with a partial line), 2051
// (fp32 rows in it, partial line) and 4096 (two halves per block); 203 rows: 25 blocks of 8 and 3
// rows after them. Skipped where the CPU has no AVX-512.
template <class T, class Acc>
void check_avx512_agrees_with_avx2() {
  namespace md = kpmap::model_detail;
  if (!avx512_runs()) {
    GTEST_SKIP() << "the fused kernel runs its " << md::host_isa_name(md::host_isa())
                 << " loops here: no AVX-512 version";
  }
  RestoreHostIsa restore;
  for (long long F : {1LL, 7LL, 16LL, 33LL, 64LL, 100LL, 1029LL, 2051LL, 4096LL}) {
    const auto [differ, count] = versions_differ<T, Acc>(md::HostIsa::avx2, md::HostIsa::avx512, 203, F, false, 0);
    EXPECT_EQ(differ, 0) << "F " << F << ": " << differ << " of " << count << " results differ";
  }
}

TEST(FusedKernel, Avx512IsBitwiseAvx2Bf16) { check_avx512_agrees_with_avx2<kpmap::bf16, float>(); }
TEST(FusedKernel, Avx512IsBitwiseAvx2Fp32) { check_avx512_agrees_with_avx2<float, float>(); }
TEST(FusedKernel, Avx512IsBitwiseAvx2Fp64) { check_avx512_agrees_with_avx2<double, double>(); }

// The residual sums of a block of 8 rows (model/fused_kernels.hpp, add_residuals): its residuals,
// and their squares, are each summed as ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) and then
// added to the thread's sums. With w = 0 and b = 0 every residual is exactly -y_i. The values show
// the order of the adds: one large residual and seven small ones, each under half an ulp of the
// large one's sum, so that a chain in row order drops every small term while the tree keeps their
// pairs (the test asserts that the two orders differ on its data). Every square is exact, so fused
// and separate products round alike: the sum of the residuals (grad_b / 2) and the loss must be
// bitwise the tree's, on every version of the loops this build and CPU run, at a compile-time
// width (16) and a generic one (100). One block per call: one thread's sum, whatever the
// thread count.
template <class T, class Acc>
void check_block_loss_tree() {
  namespace md = kpmap::model_detail;
  constexpr int digits = std::numeric_limits<Acc>::digits;  // 24 or 53
  const auto block = [](double big, double small) {
    return std::vector<double>{big, small, small, small, small, small, small, small};
  };
  // 2^15 and 7/8 of half its ulp; 2^12 (its square 2^24) and a square under half the ulp of 2^24
  const std::vector<double> sums = block(32768, 0.875 * std::ldexp(1.0, 15 - digits));
  const std::vector<double> squares = block(4096, digits == 24 ? 0.875 : 0.875 * std::ldexp(1.0, -15));
  const auto tree = [](const std::vector<Acc>& a) {
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
  };
  const auto chain = [](const std::vector<Acc>& a) {
    Acc s = 0;
    for (Acc e : a) s += e;
    return s;
  };
  std::vector<Acc> r_sums, r_squares;
  for (std::size_t i = 0; i < 8; ++i) {
    ASSERT_EQ(static_cast<double>(static_cast<T>(sums[i])), sums[i]) << "exact in the storage type";
    ASSERT_EQ(static_cast<double>(static_cast<T>(squares[i])), squares[i]) << "exact in the storage type";
    r_sums.push_back(static_cast<Acc>(sums[i]));
    const Acc q = static_cast<Acc>(squares[i]);
    r_squares.push_back(q * q);
    ASSERT_EQ(static_cast<double>(r_squares.back()), squares[i] * squares[i]) << "exact squares";
  }
  ASSERT_NE(tree(r_sums), chain(r_sums));
  ASSERT_NE(tree(r_squares), chain(r_squares));

  RestoreHostIsa restore;
  kpmap::execution_space exec;
  kpmap::LinearModel<T, Acc> model(GradientKernel::fused);
  for (md::HostIsa version :
       {md::HostIsa::baseline, md::HostIsa::avx2, md::HostIsa::avx512, md::HostIsa::build_target}) {
    if (!md::set_host_isa(version)) continue;
    for (long long F : {16LL, 100LL}) {
      const auto X = hashed_matrix<T>(8, F, 21);
      const View1<T> params("params", F + 1);  // w = 0, b = 0
      // the loss and grad_b of the 8 rows with residuals r_i = 0 + (0 - y_i)
      const auto run = [&](const std::vector<double>& residuals) {
        std::vector<double> y;
        for (double v : residuals) y.push_back(-v);
        const auto [w, b] = kpmap::split_params(params, F);
        const View1<Acc> g("g", F + 1);
        const auto [gw, gb] = kpmap::split_params(g, F);
        const double loss = model.fused(exec, X, kpmap::test::device_vector<T>(y), w, b, gw, gb);
        return std::pair<double, double>(loss, static_cast<double>(to_host(g)(F)));
      };
      const double gb = run(sums).second;
      EXPECT_EQ(gb, 2.0 * static_cast<double>(tree(r_sums)))
          << md::host_isa_name(version) << " F " << F << std::hexfloat << ": " << gb << " against the tree's "
          << 2.0 * static_cast<double>(tree(r_sums)) << " (a chain's " << 2.0 * static_cast<double>(chain(r_sums))
          << ")";
      const double loss = run(squares).first;
      EXPECT_EQ(loss, static_cast<double>(tree(r_squares)))
          << md::host_isa_name(version) << " F " << F << std::hexfloat << ": " << loss << " against the tree's "
          << static_cast<double>(tree(r_squares)) << " (a chain's " << static_cast<double>(chain(r_squares)) << ")";
    }
  }
}

TEST(FusedKernel, BlockLossSumsAreATreeFp64) { check_block_loss_tree<double, double>(); }
TEST(FusedKernel, BlockLossSumsAreATreeFp32) { check_block_loss_tree<float, float>(); }
TEST(FusedKernel, BlockLossSumsAreATreeBf16) { check_block_loss_tree<kpmap::bf16, float>(); }
TEST(FusedKernel, BlockLossSumsAreATreeFp16) { check_block_loss_tree<kpmap::fp16, float>(); }

// The 16-bit rows' word reads (model/half_kernels.hpp): for every bit pattern in either half
// of a word, low_of / high_of give bitwise the element's own conversion (static_cast<float>,
// which test_half checks against the formats' definition): zeros, subnormals, Inf and NaN
// included. The other half holds a different pattern, so a half that leaks into the other shows.
template <class H>
void check_word_halves() {
  namespace md = kpmap::model_detail;
  const auto bits = [](float f) { return kpmap::detail::float_to_bits(f); };
  long long wrong = 0;
  for (std::uint32_t p = 0; p < 0x10000u; ++p) {
    const std::uint32_t q = (p * 40503u + 0x9e37u) & 0xffffu;
    const std::uint32_t word = p | (q << 16);
    const float lo = static_cast<float>(H::from_bits(static_cast<std::uint16_t>(p)));
    const float hi = static_cast<float>(H::from_bits(static_cast<std::uint16_t>(q)));
    wrong += bits(md::low_of<H>(word)) != bits(lo);
    wrong += bits(md::high_of<H>(word)) != bits(hi);
    const H pair[2] = {H::from_bits(static_cast<std::uint16_t>(p)),
                       H::from_bits(static_cast<std::uint16_t>(q))};
    wrong += md::half_pair(pair) != word;
  }
  EXPECT_EQ(wrong, 0);
}

TEST(FusedKernel, WordHalvesAreTheElementsBf16) { check_word_halves<kpmap::bf16>(); }
TEST(FusedKernel, WordHalvesAreTheElementsFp16) { check_word_halves<kpmap::fp16>(); }

// The bf16 rows' loops (pair_dot 8 rows or 1, pair_axpy), which on GCC-compatible host compilers
// run on vector types (16 bytes, or 32 in the AVX2 version, where the loops over the rows'
// residuals are unrolled: for_rows),
// against plain serial loops in the order model/half_kernels.hpp documents: row q's dot product
// keeps 16 partial sums, partial e adding x w of the elements at positions e mod 16 in order,
// folded as s_k = p_2k + p_2k+1, t_k = s_k + s_k+4, then (t0 + t1) + (t2 + t3); the gradient in pair
// order, each slot adding the rows' products in row order. Real-valued data, rows at odd 2-byte
// offsets, widths with and without a partial group: the sums must be bitwise equal, compiled for
// the baseline target and, for the AVX2 loops, also for AVX2 and FMA (products fused).
template <int vector_bytes, bool unroll, bool fused = false>
void check_pair_loops() {
  if (fused && !fma_runs()) GTEST_SKIP() << "no AVX2 + FMA version in this build or on this CPU";
  if (vector_bytes == 64 && !avx512_runs()) GTEST_SKIP() << "no AVX-512 version in this build or on this CPU";
  namespace md = kpmap::model_detail;
  using H = kpmap::bf16;
  constexpr int rows = 8;
  for (long long F : {1LL, 7LL, 8LL, 16LL, 24LL, 33LL, 256LL, 1000LL, 1029LL}) {
    const long long stride = F + 3;
    const std::vector<double> xs = kpmap::test::hashed(static_cast<std::size_t>(rows * stride + 1), 15);
    const std::vector<double> ws = kpmap::test::hashed(static_cast<std::size_t>(F + 1), 16);
    const std::vector<double> gs = kpmap::test::hashed(static_cast<std::size_t>(F), 17);
    std::vector<H> xv(xs.size()), wv(ws.size());
    for (std::size_t k = 0; k < xs.size(); ++k) xv[k] = H(static_cast<float>(xs[k]));
    for (std::size_t k = 0; k < ws.size(); ++k) wv[k] = H(static_cast<float>(ws[k]));
    const H* x = xv.data() + 1;  // odd 2-byte offsets
    const H* w = wv.data() + 1;
    std::vector<float> g(gs.begin(), gs.end()), ref_g = g;
    float a[rows], d8[rows], d1[rows];
    for (int q = 0; q < rows; ++q) a[q] = static_cast<float>(q - 3) / 7.f;
    a[3] = -0.f;
    run_loops<fused, vector_bytes == 64>([&] {
      md::pair_dot<rows, vector_bytes, unroll, fused>(x, stride, w, F, d8, x, rows);
      for (int q = 0; q < rows; ++q) {
        md::pair_dot<1, vector_bytes, unroll, fused>(x + q * stride, 0, w, F, d1 + q, x, 0);
      }
      md::pair_axpy<rows, vector_bytes, unroll, fused>(g.data(), a, x, stride, F, x, 0);
    });
    const auto at = [](const H* p, long long j) { return static_cast<float>(p[j]); };
    long long differ = 0;
    for (int q = 0; q < rows; ++q) {
      const H* xq = x + q * stride;
      float part[16] = {};
      for (long long j = 0; j < F; ++j) part[j % 16] = madd<fused>(at(xq, j), at(w, j), part[j % 16]);
      float s[8], t[4];
      for (int k = 0; k < 8; ++k) s[k] = part[2 * k] + part[2 * k + 1];
      for (int k = 0; k < 4; ++k) t[k] = s[k] + s[k + 4];
      const float dot = (t[0] + t[1]) + (t[2] + t[3]);
      differ += std::memcmp(&dot, &d8[q], sizeof dot) != 0;
      differ += std::memcmp(&dot, &d1[q], sizeof dot) != 0;
    }
    for (long long j = 0; j < F; ++j) {
      float sum = ref_g[md::pair_slot(j, F)];
      for (int q = 0; q < rows; ++q) sum = madd<fused>(a[q], at(x + q * stride, j), sum);
      differ += std::memcmp(&sum, &g[md::pair_slot(j, F)], sizeof sum) != 0;
    }
    EXPECT_EQ(differ, 0) << "F " << F;
  }
}

TEST(FusedKernel, PairLoopsAreThePlainSumsBf16) { check_pair_loops<16, false>(); }
TEST(FusedKernel, PairLoopsAreThePlainSumsAvx2LoopsBf16) { check_pair_loops<32, true>(); }
#if defined(KPMAP_AVX2_DISPATCH)
TEST(FusedKernel, PairLoopsAreThePlainSumsAvx2FmaBf16) { check_pair_loops<32, true, true>(); }
TEST(FusedKernel, PairLoopsAreThePlainSumsAvx512Bf16) { check_pair_loops<64, true, true>(); }
#endif

// The split of the work: at most 1024 teams and one per 32 rows (the partial buffer holds at most
// one row of sums per 32 rows of X), every row in exactly one team, every team with a row, one
// chunk of at most 32 rows per team until 1024 teams are not enough.
TEST(TeamKernel, TeamsCoverTheRows) {
  for (long long n : {0LL, 1LL, 31LL, 32LL, 33LL, 1000LL, 32768LL, 32769LL, 100000LL, 3000000LL}) {
    const long long teams = kpmap::model_detail::team_count(n), rows = kpmap::model_detail::team_rows(n);
    EXPECT_LE(teams, 1024) << n;
    EXPECT_LE(teams * 32, n + 31) << n;
    if (n == 0) continue;
    EXPECT_GE(teams * rows, n) << n;        // every row has a team
    EXPECT_LT((teams - 1) * rows, n) << n;  // and every team has a row
    if (n <= 32 * 1024) {
      EXPECT_LE(rows, 32) << n;
    }
  }
}

}  // namespace
