#include "kpmap/model/repro_rows.hpp"

#include <cstring>

#include "kpmap/core/host_cpu.hpp"
#include "kpmap/model/host_isa.hpp"

// target_clones needs GCC's ifunc support (x86-64 Linux with glibc). A build that already targets
// FMA (-march=native on a recent CPU) folds products with fma in every version and needs no clones.
// flatten: the helpers are inlined into each version (else the AVX2 version calls the baseline
// helpers, measured twice as slow).
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__FP_FAST_FMA)
#define KPMAP_REPRO_CLONES_ON 1
#define KPMAP_REPRO_CLONES __attribute__((target_clones("avx2", "default"), flatten))
#else
#define KPMAP_REPRO_CLONES
#endif

namespace kpmap::model_detail {

namespace {

#if !defined(__FP_FAST_FMA)
// Four doubles (GCC's and Clang's vector extension: one AVX2 register, or two SSE2 ones). The dot
// product keeps its accumulators in such registers explicitly: written with arrays, GCC 12
// kept them in memory and the loop ran at a third of this speed.
typedef double v4d __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));

// Four elements from p (unaligned), as doubles.
inline void load4(const double* p, v4d& v) { std::memcpy(&v, p, sizeof v); }
inline void load4(const float* p, v4d& v) {
  v4f f;
  std::memcpy(&f, p, sizeof f);
  v = __builtin_convertvector(f, v4d);
}

template <class T>
inline void row_dot(const ReproGrid& g, const T* __restrict x, const T* __restrict w, long long n,
                    double* s) {
  const double sigma1 = g.level[0].sigma, sigma2 = g.level[1].sigma;
  const v4d S1 = {sigma1, sigma1, sigma1, sigma1}, S2 = {sigma2, sigma2, sigma2, sigma2};
  v4d a1 = {0, 0, 0, 0}, b1 = a1, a2 = a1, b2 = a1;  // two groups of four lanes, two levels
  long long j = 0;
  for (; j + 8 <= n; j += 8) {
    v4d xa, wa, xb, wb;
    load4(x + j, xa);
    load4(w + j, wa);
    load4(x + j + 4, xb);
    load4(w + j + 4, wb);
    // repro_add_product<2> on each lane (no fma: this file is built without fast FMA).
    const v4d pa = xa * wa, pb = xb * wb;
    const v4d qa = (S1 + pa) - S1, qb = (S1 + pb) - S1;
    a1 += qa;
    b1 += qb;
    const v4d ra = pa - qa, rb = pb - qb;
    a2 += (S2 + ra) - S2;
    b2 += (S2 + rb) - S2;
  }
  double t1 = 0, t2 = 0, unused = 0;
  for (long long k = j; k < n; ++k) {
    repro_add_product<2>(g, static_cast<double>(x[k]), static_cast<double>(w[k]), t1, t2, unused);
  }
  // Exact in any order: every partial sum of a level is.
  const v4d c1 = a1 + b1, c2 = a2 + b2;
  s[0] = ((c1[0] + c1[1]) + (c1[2] + c1[3])) + t1;
  s[1] = ((c2[0] + c2[1]) + (c2[2] + c2[3])) + t2;
}

#else
// Builds with fast FMA fold each product with an fma (repro_add_product), which the vector
// extension does not spell: plain loops.
template <class T>
inline void row_dot(const ReproGrid& g, const T* __restrict x, const T* __restrict w, long long n,
                    double* s) {
  double t1 = 0, t2 = 0, unused = 0;
  for (long long k = 0; k < n; ++k) {
    repro_add_product<2>(g, static_cast<double>(x[k]), static_cast<double>(w[k]), t1, t2, unused);
  }
  s[0] = t1;
  s[1] = t2;
}
#endif

// The bias and loss sums of up to four rows' residuals (unused lanes hold 0, which adds 0).
struct Tail {
  double r[4] = {0, 0, 0, 0};
  double s[6] = {0, 0, 0, 0, 0, 0};  // bias levels 1-3, loss levels 1-3

  void fold(const ReproGrids& g) {
    double b1[4] = {}, b2[4] = {}, b3[4] = {}, l1[4] = {}, l2[4] = {}, l3[4] = {};
    for (int k = 0; k < 4; ++k) {
      repro_add(g.residual, r[k], b1[k], b2[k], b3[k]);
      repro_add_product(g.loss, r[k], r[k], l1[k], l2[k], l3[k]);
      r[k] = 0;
    }
    s[0] += (b1[0] + b1[1]) + (b1[2] + b1[3]);
    s[1] += (b2[0] + b2[1]) + (b2[2] + b2[3]);
    s[2] += (b3[0] + b3[1]) + (b3[2] + b3[3]);
    s[3] += (l1[0] + l1[1]) + (l1[2] + l1[3]);
    s[4] += (l2[0] + l2[1]) + (l2[2] + l2[3]);
    s[5] += (l3[0] + l3[1]) + (l3[2] + l3[3]);
  }
};

template <class T>
inline void rows(const ReproGrids& g, const T* __restrict x, long long stride, long long nrows,
                 const T* __restrict w, const double* __restrict z, double b, const T* __restrict y,
                 long long n, double* __restrict a1, double* __restrict a2, double* __restrict a3) {
  Tail tail;
  for (long long q = 0; q < nrows; ++q) {
    const T* __restrict row = x + q * stride;
    double zq;
    if (w != nullptr) {
      double s[2];
      row_dot(g.forward, row, w, n, s);
      zq = repro_value(s[0], s[1], 0.0);
    } else {
      zq = z[q];
    }
    const double r = (zq + b) - static_cast<double>(y[q]);
    for (long long j = 0; j < n; ++j)
      repro_add_product(g.gradient, r, static_cast<double>(row[j]), a1[j], a2[j], a3[j]);
    tail.r[q % 4] = r;
    if (q % 4 == 3 || q + 1 == nrows) tail.fold(g);
  }
  a1[n] += tail.s[0];
  a2[n] += tail.s[1];
  a3[n] += tail.s[2];
  a1[n + 1] += tail.s[3];
  a2[n + 1] += tail.s[4];
  a3[n + 1] += tail.s[5];
}

}  // namespace

KPMAP_REPRO_CLONES void repro_row_dot(const ReproGrid& g, const double* x, const double* w, long long n,
                                      double* s) {
  row_dot(g, x, w, n, s);
}
KPMAP_REPRO_CLONES void repro_row_dot(const ReproGrid& g, const float* x, const float* w, long long n,
                                      double* s) {
  row_dot(g, x, w, n, s);
}
KPMAP_REPRO_CLONES void repro_rows(const ReproGrids& g, const double* x, long long stride, long long nrows,
                                   const double* w, const double* z, double b, const double* y, long long n,
                                   double* a1, double* a2, double* a3) {
  rows(g, x, stride, nrows, w, z, b, y, n, a1, a2, a3);
}
KPMAP_REPRO_CLONES void repro_rows(const ReproGrids& g, const float* x, long long stride, long long nrows,
                                   const float* w, const double* z, double b, const float* y, long long n,
                                   double* a1, double* a2, double* a3) {
  rows(g, x, stride, nrows, w, z, b, y, n, a1, a2, a3);
}

const char* repro_rows_isa() {
#if defined(KPMAP_REPRO_CLONES_ON)
  return host_isa_name(detail::cpu_has_avx2() ? HostIsa::avx2 : HostIsa::baseline);
#else
  return host_isa_name(HostIsa::build_target);
#endif
}

}  // namespace kpmap::model_detail
