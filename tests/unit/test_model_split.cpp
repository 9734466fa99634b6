// The two-pass gradient (LinearModel::residual / residual_from_z + gradient_columns per column
// window) against the one-pass fused() / backward(): with the fused and team kernels bitwise, for every
// partition of the columns into windows, with and without bias, onto non-zero gradients and over
// two micro-batches; with kokkos_kernels, loss and grad_b bitwise on host backends and grad_w to
// rounding (see KokkosKernelsWindowsMatch). And the epilogue (`then`) of every call, one pass and
// two: each gradient slot handed over once, holding its final sum (EpilogueSeesEverySlotOnceFinal).
// Run at one thread by ctest (test_model_split) and at two (test_model_split.threads2, OpenMP
// builds): the contract holds for any fixed thread count.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/data/shard.hpp"
#include "kpmap/model/linear_model.hpp"
#include "model_common.hpp"

namespace {

using kpmap::GradientKernel;
using kpmap::View1;

using kpmap::test::device_vector;
using kpmap::test::hashed;
using kpmap::test::to_host;

template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, double>) return "fp64";
  if constexpr (std::is_same_v<T, float>) return "fp32";
  if constexpr (std::is_same_v<T, kpmap::bf16>) return "bf16";
  return "fp16";
}

// Column windows [c0, c1), in the order the calls make them.
using Windows = std::vector<std::pair<long long, long long>>;

Windows fixed_width(long long F, long long width) {
  Windows w;
  for (long long c0 = 0; c0 < F; c0 += width) w.emplace_back(c0, std::min(F, c0 + width));
  return w;
}

// Uneven widths 3, 1, 0 (an empty window), 13, 2, 9, ... repeated; then all reversed, so the
// windows are not computed left to right.
Windows uneven(long long F) {
  const long long widths[] = {3, 1, 0, 13, 2, 9};
  Windows w;
  long long c0 = 0;
  for (int k = 0; c0 < F; ++k) {
    const long long c1 = std::min(F, c0 + widths[k % 6]);
    w.emplace_back(c0, c1);
    c0 = c1;
  }
  return Windows(w.rbegin(), w.rend());
}

std::vector<std::pair<std::string, Windows>> partitions(long long F) {
  return {{"one window", fixed_width(F, F)},
          {"width 1", fixed_width(F, 1)},
          {"width 5", fixed_width(F, 5)},
          {"width 16", fixed_width(F, 16)},
          {"uneven, reversed", uneven(F)}};
}

// Exact equality of the bits (so -0 vs 0 and NaN payloads count), with the first difference.
template <class A, class B>
::testing::AssertionResult same_bits(const A& a, const B& b) {
  const auto ha = to_host(a), hb = to_host(b);
  if (ha.extent(0) != hb.extent(0)) return ::testing::AssertionFailure() << "extents differ";
  using E = typename decltype(ha)::non_const_value_type;
  for (std::size_t j = 0; j < ha.extent(0); ++j) {
    if (std::memcmp(&ha(j), &hb(j), sizeof(E)) != 0) {
      return ::testing::AssertionFailure() << "element " << j << " of " << ha.extent(0) << ": "
                                           << static_cast<double>(ha(j)) << " vs " << static_cast<double>(hb(j))
                                           << " (diff " << static_cast<double>(ha(j)) - static_cast<double>(hb(j))
                                           << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult same_bits(double a, double b) {
  if (std::memcmp(&a, &b, sizeof a) == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b << " (diff " << a - b << ")";
}

// Everything one case needs: two batches of n rows of a shard (X at a row offset, as in the
// train loop), the parameters, z = X w + b of each batch, and non-zero starting gradients.
template <class T, class Acc, class Layout>
struct Case {
  long long n, F;
  bool bias;
  kpmap::Shard<T, Layout> shard;
  View1<T> params;
  std::vector<double> start;  // the gradients' starting values
  View1<Acc> z[2];

  Case(long long rows, long long features, bool with_bias)
      : n(rows), F(features), bias(with_bias),
        shard(kpmap::make_shard<T, Layout>(kpmap::execution_space(), {2 * rows + 3, features, with_bias, 0.3, 17},
                                           kpmap::make_batch_plan(2 * rows + 3, rows, 0, 1), {0, features})) {
    std::vector<double> theta = hashed(F, 31);
    if (bias) theta.push_back(-0.4375);
    params = device_vector<T>(theta, "params");
    start = hashed(theta.size(), 32);
    for (double& s : start) s = 4 * s - 2;
    // z by the fused kernel's forward pass, as a model rank would hold it after psum(z).
    kpmap::LinearModel<T, Acc> model(GradientKernel::fused);
    for (int k = 0; k < 2; ++k) {
      z[k] = View1<Acc>("z", n);
      model.forward_partial(kpmap::execution_space(), shard.batch_x(k), w(), b(), z[k]);
    }
  }
  auto w() const { return kpmap::split_params(params, F).first; }
  auto b() const { return kpmap::split_params(params, F).second; }
  View1<Acc> grads() const { return device_vector<Acc>(start, "grads"); }
  std::string name(GradientKernel kernel) const {
    return type_name<T>() + (std::is_same_v<Layout, Kokkos::LayoutRight> ? " LayoutRight " : " LayoutLeft ") +
           to_string(kernel) + " n " + std::to_string(n) + " F " + std::to_string(F) + (bias ? " bias" : " no bias");
  }
};

// The gradient (grad_w, grad_b) and loss sums of micro-batches 1 then 0 through the one-pass
// call (fused(), or backward() when from_z) and through the two passes with `windows`.
template <class T, class Acc, class Layout>
struct Results {
  View1<Acc> one_pass, two_pass;
  double loss_one = 0, loss_two = 0;
};

template <class T, class Acc, class Layout>
Results<T, Acc, Layout> run_both(const Case<T, Acc, Layout>& c, GradientKernel kernel, bool from_z,
                                 const Windows& windows) {
  kpmap::execution_space exec;
  // Two models, so that with kokkos_kernels and 16-bit X the windows after residual_from_z copy
  // their own columns (the one-pass model's copy of X is not theirs to reuse).
  kpmap::LinearModel<T, Acc> one(kernel), two(kernel);
  Results<T, Acc, Layout> out{c.grads(), c.grads()};
  const long long F = c.F;
  const auto [gw1, gb1] = kpmap::split_params(out.one_pass, F);
  const auto [gw2, gb2] = kpmap::split_params(out.two_pass, F);
  View1<Acc> r("r", c.n);
  for (int k : {1, 0}) {
    const auto X = c.shard.batch_x(k);
    const auto y = c.shard.batch_y(k);
    out.loss_one += from_z ? one.backward(exec, X, c.z[k], y, gw1, gb1) : one.fused(exec, X, y, c.w(), c.b(), gw1, gb1);
    out.loss_two += from_z ? two.residual_from_z(exec, X, c.z[k], y, r, gb2) : two.residual(exec, X, y, c.w(), c.b(), r, gb2);
    for (auto [c0, c1] : windows) {
      two.gradient_columns(exec, X, r, c0, Kokkos::subview(gw2, Kokkos::make_pair(c0, c1)));
    }
  }
  return out;
}

template <class T, class Acc, class Layout>
void check_fused_bitwise(long long n, long long F, bool bias) {
  const Case<T, Acc, Layout> c(n, F, bias);
  for (GradientKernel kernel : {GradientKernel::fused, GradientKernel::team}) {
    for (bool from_z : {false, true}) {
      for (const auto& [what, windows] : partitions(F)) {
        const auto res = run_both(c, kernel, from_z, windows);
        const std::string name = c.name(kernel) + (from_z ? " backward vs residual_from_z, " : " fused vs residual, ") + what;
        EXPECT_TRUE(same_bits(res.one_pass, res.two_pass)) << name << " (grad_w then grad_b)";
        EXPECT_TRUE(same_bits(res.loss_one, res.loss_two)) << name << " (loss)";
      }
    }
  }
}

constexpr long long feature_counts[] = {1, 7, 16, 37, 64};

template <class T, class Acc>
void check_fused_bitwise_all() {
  for (long long F : feature_counts) {
    for (bool bias : {true, false}) check_fused_bitwise<T, Acc, Kokkos::LayoutRight>(203, F, bias);
  }
  // More work items per thread (and several row chunks per team), and the layout the fused
  // kernel reads with View indexing.
  check_fused_bitwise<T, Acc, Kokkos::LayoutRight>(1003, 37, true);
  check_fused_bitwise<T, Acc, Kokkos::LayoutRight>(40000, 3, true);
  // On more than one thread, several chunks of rows (model/fused_kernels.hpp reduce_items).
  check_fused_bitwise<T, Acc, Kokkos::LayoutRight>(20000, 64, true);
  check_fused_bitwise<T, Acc, Kokkos::LayoutLeft>(203, 37, true);
}

// Under test_model_split.threads2 the run must have two threads.
TEST(ModelSplit, ThreadCount) { kpmap::test::expect_thread_count(); }

TEST(ModelSplit, FusedWindowsBitwiseFp64) { check_fused_bitwise_all<double, double>(); }
TEST(ModelSplit, FusedWindowsBitwiseFp32) { check_fused_bitwise_all<float, float>(); }
TEST(ModelSplit, FusedWindowsBitwiseBf16) { check_fused_bitwise_all<kpmap::bf16, float>(); }
TEST(ModelSplit, FusedWindowsBitwiseFp16) { check_fused_bitwise_all<kpmap::fp16, float>(); }

// Not vacuous: the two passes reach every column (a skipped window would leave start values).
TEST(ModelSplit, WindowsChangeEveryColumn) {
  const Case<double, double, Kokkos::LayoutRight> c(203, 37, true);
  const auto res = run_both(c, GradientKernel::fused, false, uneven(37));
  const auto h = to_host(res.two_pass);
  for (long long j = 0; j <= 37; ++j) EXPECT_NE(h(j), c.start[j]) << j;
}

// ---- kokkos_kernels: loss and grad_b are the same BLAS calls on the same r (bitwise); grad_w
// is gemv "T" on each window, which OpenBLAS may sum in another order than on all columns. ----

// The serial double reference of micro-batches 1 then 0 (onto the starting values) and, per
// entry, the sum of |terms| that bounds the rounding of a float or double sum.
struct Reference {
  std::vector<double> grad, terms;  // [w..., b]
  double loss = 0, loss_terms = 0;
};

template <class T, class Acc, class Layout>
Reference reference(const Case<T, Acc, Layout>& c) {
  Reference ref;
  ref.grad = c.start;
  ref.terms.assign(c.start.size(), 0.0);
  const auto p = to_host(c.params);
  for (int k : {1, 0}) {
    const auto X = to_host(c.shard.batch_x(k));
    const auto y = to_host(c.shard.batch_y(k));
    for (long long i = 0; i < c.n; ++i) {
      double r = (c.bias ? static_cast<double>(p(c.F)) : 0.0) - static_cast<double>(y(i));
      double m = std::abs(r);
      for (long long j = 0; j < c.F; ++j) {
        r += static_cast<double>(X(i, j)) * static_cast<double>(p(j));
        m += std::abs(static_cast<double>(X(i, j)) * static_cast<double>(p(j)));
      }
      ref.loss += r * r, ref.loss_terms += m * m;
      for (long long j = 0; j < c.F; ++j) {
        ref.grad[j] += 2 * r * static_cast<double>(X(i, j));
        ref.terms[j] += 2 * m * std::abs(static_cast<double>(X(i, j)));
      }
      if (c.bias) ref.grad[c.F] += 2 * r, ref.terms[c.F] += 2 * m;
    }
  }
  for (std::size_t j = 0; j < c.start.size(); ++j) ref.terms[j] += std::abs(c.start[j]);
  return ref;
}

// 64 units of roundoff of Acc per unit of sum|terms| (as test_model's fp32_sum_tol).
template <class Acc>
constexpr double sum_tol = 64 * (std::is_same_v<Acc, float> ? 0x1.0p-24 : 0x1.0p-53);

// Counts the partitions whose grad_w came out bitwise equal to the one-pass call's.
struct Tally {
  int bitwise = 0, cases = 0;
};

template <class T, class Acc, class Layout>
void check_kokkos_kernels(long long n, long long F, bool bias, Tally& tally) {
  const Case<T, Acc, Layout> c(n, F, bias);
  const Reference ref = reference(c);
  for (bool from_z : {false, true}) {
    for (const auto& [what, windows] : partitions(F)) {
      const auto res = run_both(c, GradientKernel::kokkos_kernels, from_z, windows);
      const std::string name =
          c.name(GradientKernel::kokkos_kernels) + (from_z ? " backward vs residual_from_z, " : " fused vs residual, ") + what;
      // Bitwise on host backends, where Kokkos Kernels' gemv, sum and dot add in a fixed order. On
      // a GPU its gemv "N" adds each row's partial sums with atomics (TwoLevelGEMV), in an order
      // that changes from call to call: there the tolerances below are what holds.
      const bool bitwise = same_bits(res.one_pass, res.two_pass);
      if (kpmap::host_execution_v) {
        EXPECT_TRUE(same_bits(res.loss_one, res.loss_two)) << name << " (loss)";
        if (bias) {
          EXPECT_TRUE(same_bits(Kokkos::subview(res.one_pass, Kokkos::make_pair(F, F + 1)),
                                Kokkos::subview(res.two_pass, Kokkos::make_pair(F, F + 1))))
              << name << " (grad_b)";
        }
        // One window is the one-pass call's gemv on the same matrix.
        if (windows.size() == 1) {
          EXPECT_TRUE(bitwise) << name << " (grad_w, one window)";
        }
      }
      tally.bitwise += bitwise, ++tally.cases;
      EXPECT_NEAR(res.loss_two, ref.loss, sum_tol<Acc> * ref.loss_terms) << name;
      const auto one = to_host(res.one_pass), two = to_host(res.two_pass);
      for (long long j = 0; j < (bias ? F + 1 : F); ++j) {
        EXPECT_NEAR(static_cast<double>(two(j)), ref.grad[j], sum_tol<Acc> * ref.terms[j]) << name << " j " << j;
        // The window's gemv against the whole one: 8 units of roundoff per unit of sum|terms|
        // (observed: up to 2 units of the entry itself).
        EXPECT_NEAR(static_cast<double>(two(j)), static_cast<double>(one(j)), sum_tol<Acc> / 8 * ref.terms[j])
            << name << " j " << j << " (vs one pass)";
      }
    }
  }
}

template <class T, class Acc>
void check_kokkos_kernels_all() {
  Tally tally;
  for (long long F : feature_counts) {
    for (bool bias : {true, false}) check_kokkos_kernels<T, Acc, Kokkos::LayoutLeft>(203, F, bias, tally);
  }
  check_kokkos_kernels<T, Acc, Kokkos::LayoutRight>(203, 37, true, tally);
  // For the record (not a requirement): which BLAS blocking the windows kept.
  std::printf("%s kokkos_kernels: grad_w bitwise equal to the one-pass call in %d of %d partitions\n",
              type_name<T>().c_str(), tally.bitwise, tally.cases);
}

TEST(ModelSplit, KokkosKernelsWindowsMatchFp64) { check_kokkos_kernels_all<double, double>(); }
TEST(ModelSplit, KokkosKernelsWindowsMatchFp32) { check_kokkos_kernels_all<float, float>(); }
TEST(ModelSplit, KokkosKernelsWindowsMatchBf16) { check_kokkos_kernels_all<kpmap::bf16, float>(); }
TEST(ModelSplit, KokkosKernelsWindowsMatchFp16) { check_kokkos_kernels_all<kpmap::fp16, float>(); }

// ---- The epilogue (`then`, model/epilogue.hpp) ----

// Records, for each slot handed over, the gradient's value at that moment and how many times it
// was handed over; slots outside [0, slots) count in the last entry of calls.
template <class Acc>
struct Record {
  View1<Acc> grad, seen;
  View1<int> calls;
  long long slots;
  void host(long long j0, long long j1) const {
    for (long long j = j0; j < j1; ++j) see(j);
  }
  KOKKOS_INLINE_FUNCTION void operator()(long long j) const { see(j); }
  KOKKOS_INLINE_FUNCTION void see(long long j) const {
    const bool inside = j >= 0 && j < slots;
    calls(inside ? j : static_cast<long long>(calls.extent(0)) - 1) += 1;
    if (inside) seen(j) = grad(j);
  }
};

// Two micro-batches (1 then 0), the epilogue on the second only, as the trainer passes it: every
// slot [w..., b] is handed over exactly once, by the call that finishes it, and holds its final
// value by then (bitwise what the calls leave); no other slot is handed over. Every kernel, the
// one-pass calls and the two passes (the bias from residual / residual_from_z, w from the
// windows), with runs of epilogue_run slots and windows that cross them.
template <class T, class Acc, class Layout>
void check_epilogue(long long n, long long F, bool bias, const Windows& windows) {
  const Case<T, Acc, Layout> c(n, F, bias);
  const long long slots = F + (bias ? 1 : 0);
  for (GradientKernel kernel : {GradientKernel::fused, GradientKernel::team, GradientKernel::kokkos_kernels}) {
    for (bool from_z : {false, true}) {
      for (bool split : {false, true}) {
        kpmap::execution_space exec;
        kpmap::LinearModel<T, Acc> model(kernel);
        const View1<Acc> g = c.grads();
        const auto parts = kpmap::split_params(g, F);  // not a structured binding: the lambda below captures them
        const auto gw = parts.first;
        const auto gb = parts.second;
        const Record<Acc> record{g, View1<Acc>("seen", slots), View1<int>("calls", slots + 1), slots};
        View1<Acc> r("r", c.n);
        for (int k : {1, 0}) {
          const auto X = c.shard.batch_x(k);
          const auto y = c.shard.batch_y(k);
          const auto calls = [&](const auto& then) {
            if (!split) {
              if (from_z) model.backward(exec, X, c.z[k], y, gw, gb, then);
              else model.fused(exec, X, y, c.w(), c.b(), gw, gb, then);
              return;
            }
            if (from_z) model.residual_from_z(exec, X, c.z[k], y, r, gb, then);
            else model.residual(exec, X, y, c.w(), c.b(), r, gb, then);
            for (auto [c0, c1] : windows) {
              model.gradient_columns(exec, X, r, c0, Kokkos::subview(gw, Kokkos::make_pair(c0, c1)), then);
            }
          };
          if (k == 0) calls(record);
          else calls(kpmap::model_detail::NoEpilogue());
        }
        const std::string name = c.name(kernel) + (from_z ? " from z" : "") + (split ? " two passes" : " one pass");
        const auto counted = to_host(record.calls);
        int wrong = 0;
        for (long long j = 0; j <= slots; ++j) {
          if (counted(j) != (j < slots ? 1 : 0) && wrong++ < 3) {
            ADD_FAILURE() << name << ": slot " << j << (j == slots ? " (outside)" : "") << " handed over "
                          << counted(j) << " times";
          }
        }
        EXPECT_TRUE(same_bits(record.seen, Kokkos::subview(g, Kokkos::make_pair(0LL, slots)))) << name;
      }
    }
  }
}

TEST(ModelSplit, EpilogueSeesEverySlotOnceFinal) {
  using Right = Kokkos::LayoutRight;
  const long long wide = kpmap::model_detail::epilogue_run + 37;
  for (bool bias : {true, false}) {
    check_epilogue<double, double, Right>(23, 37, bias, uneven(37));
    check_epilogue<float, float, Right>(23, 37, bias, uneven(37));
    check_epilogue<kpmap::bf16, float, Right>(23, 37, bias, uneven(37));  // sums in pair order
    check_epilogue<float, float, Right>(5, wide, bias, fixed_width(wide, 1000));
  }
  check_epilogue<double, double, Kokkos::LayoutLeft>(23, 37, true, fixed_width(37, 5));
  check_epilogue<kpmap::fp16, float, Right>(5, wide, true, fixed_width(wide, 1500));
}

// kokkos_kernels with 16-bit X: gradient_columns reads the float copy residual() made of the same
// X. Seen by zeroing X after residual(): the windows still give the gradient of the old X (with a
// fresh copy they would add nothing); after residual_from_z (which makes no copy) they copy their
// own columns of the zeroed X and add nothing.
TEST(ModelSplit, KokkosKernelsReusesTheWideCopyOfX) {
  using S = kpmap::bf16;
  kpmap::execution_space exec;
  for (bool from_z : {false, true}) {
    const Case<S, float, Kokkos::LayoutLeft> c(203, 37, true);
    const auto X = c.shard.batch_x(1);
    const auto y = c.shard.batch_y(1);
    // The expected gradient, by another model's fused() on the intact X.
    kpmap::LinearModel<S, float> other(GradientKernel::kokkos_kernels);
    const View1<float> expect = c.grads();
    const auto [ew, eb] = kpmap::split_params(expect, c.F);
    other.fused(exec, X, y, c.w(), c.b(), ew, eb);

    kpmap::LinearModel<S, float> model(GradientKernel::kokkos_kernels);
    const View1<float> grads = c.grads();
    const auto [gw, gb] = kpmap::split_params(grads, c.F);
    View1<float> r("r", c.n);
    if (from_z) {
      model.residual_from_z(exec, X, c.z[1], y, r, gb);
    } else {
      model.residual(exec, X, y, c.w(), c.b(), r, gb);
    }
    Kokkos::deep_copy(X, S(0.0));
    for (auto [c0, c1] : fixed_width(c.F, 5)) {
      model.gradient_columns(exec, X, r, c0, Kokkos::subview(gw, Kokkos::make_pair(c0, c1)));
    }
    const auto h = to_host(gw), e = to_host(ew);
    for (long long j = 0; j < c.F; ++j) {
      const float start = static_cast<float>(c.start[j]);
      if (from_z) {
        EXPECT_EQ(h(j), start) << "residual_from_z: the windows copy the zeroed X, j " << j;
      } else {
        ASSERT_GT(std::abs(e(j) - start), 1e-2) << "the test needs a visible gradient, j " << j;
        EXPECT_NEAR(h(j), e(j), 1e-5 * (std::abs(e(j)) + 1)) << "residual: the windows read its copy of X, j " << j;
      }
    }
  }
}

// ---- Shape errors ----

TEST(ModelSplit, ShapeErrors) {
  kpmap::execution_space exec;
  for (GradientKernel kernel : {GradientKernel::fused, GradientKernel::kokkos_kernels, GradientKernel::team}) {
    kpmap::LinearModel<double> model(kernel);
    Kokkos::View<double**, Kokkos::LayoutLeft, kpmap::device_type> X("X", 4, 3);
    View1<double> y("y", 4), w("w", 3), b("b", 1), r("r", 4), r5("r5", 5), gb("gb", 1), gb2("gb2", 2), g2("g2", 2),
        g0("g0", 0), z("z", 4), z3("z3", 3);
    EXPECT_THROW(model.residual(exec, X, y, w, b, r5, gb), kpmap::ShapeError);
    EXPECT_THROW(model.residual(exec, X, y, w, b, r, gb2), kpmap::ShapeError);
    EXPECT_THROW(model.residual(exec, X, y, g2, b, r, gb), kpmap::ShapeError);
    EXPECT_THROW(model.residual_from_z(exec, X, z3, y, r, gb), kpmap::ShapeError);
    EXPECT_THROW(model.residual_from_z(exec, X, z, y, r5, gb), kpmap::ShapeError);
    EXPECT_THROW(model.residual_from_z(exec, X, z, y, r, gb2), kpmap::ShapeError);
    EXPECT_THROW(model.gradient_columns(exec, X, r, -1, g2), kpmap::ShapeError);
    EXPECT_THROW(model.gradient_columns(exec, X, r, 2, g2), kpmap::ShapeError);  // [2, 4) not in [0, 3)
    EXPECT_THROW(model.gradient_columns(exec, X, r, 0, View1<double>("g4", 4)), kpmap::ShapeError);
    EXPECT_THROW(model.gradient_columns(exec, X, r5, 0, g2), kpmap::ShapeError);
    EXPECT_THROW(model.gradient_columns(exec, X, r, 4, g0), kpmap::ShapeError);
    EXPECT_NO_THROW(model.gradient_columns(exec, X, r, 1, g2));
    EXPECT_NO_THROW(model.gradient_columns(exec, X, r, 3, g0));  // an empty window at the end
    EXPECT_NO_THROW(model.residual_from_z(exec, X, z, y, r, g0));  // no bias
    try {
      model.gradient_columns(exec, X, r, 2, g2);
    } catch (const kpmap::ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find("[2, 4) is not inside [0, 3)"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
