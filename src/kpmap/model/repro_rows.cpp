#include "kpmap/model/repro_rows.hpp"

// target_clones needs GCC's ifunc support (x86-64 Linux with glibc). A build that already targets
// FMA (-march=native on a recent CPU) folds products with fma in every version and needs no clones.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(__FP_FAST_FMA)
#define KPMAP_REPRO_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define KPMAP_REPRO_CLONES
#endif

namespace kpmap::model_detail {

namespace {

template <class T>
inline void row_dot(const ReproGrid& g, const T* __restrict x, const T* __restrict w, long long n, double* s) {
  constexpr int lanes = 8;
  double p1[lanes] = {}, p2[lanes] = {}, unused[lanes] = {};
  long long j = 0;
  for (; j + lanes <= n; j += lanes) {
    for (int k = 0; k < lanes; ++k) {
      repro_add_product<2>(g, static_cast<double>(x[j + k]), static_cast<double>(w[j + k]), p1[k], p2[k], unused[k]);
    }
  }
  for (int k = 0; j + k < n; ++k) {
    repro_add_product<2>(g, static_cast<double>(x[j + k]), static_cast<double>(w[j + k]), p1[k], p2[k], unused[k]);
  }
  // A tree over the lanes (exact in any order: every partial sum of a level is).
  for (int width = lanes / 2; width > 0; width /= 2) {
    for (int k = 0; k < width; ++k) {
      p1[k] += p1[k + width];
      p2[k] += p2[k + width];
    }
  }
  s[0] = p1[0];
  s[1] = p2[0];
}

template <class T>
inline void row(const ReproGrids& g, const T* __restrict x, const T* __restrict w, long long n, double z, double b,
                double y, double* __restrict a1, double* __restrict a2, double* __restrict a3) {
  if (w != nullptr) {
    double s[2];
    row_dot(g.forward, x, w, n, s);
    z = repro_value(s[0], s[1], 0.0);
  }
  const double r = (z + b) - y;
  for (long long j = 0; j < n; ++j) repro_add_product(g.gradient, r, static_cast<double>(x[j]), a1[j], a2[j], a3[j]);
  repro_add(g.residual, r, a1[n], a2[n], a3[n]);
  repro_add_product(g.loss, r, r, a1[n + 1], a2[n + 1], a3[n + 1]);
}

}  // namespace

KPMAP_REPRO_CLONES void repro_row_dot(const ReproGrid& g, const double* x, const double* w, long long n, double* s) {
  row_dot(g, x, w, n, s);
}
KPMAP_REPRO_CLONES void repro_row_dot(const ReproGrid& g, const float* x, const float* w, long long n, double* s) {
  row_dot(g, x, w, n, s);
}
KPMAP_REPRO_CLONES void repro_row(const ReproGrids& g, const double* x, const double* w, long long n, double z,
                                  double b, double y, double* a1, double* a2, double* a3) {
  row(g, x, w, n, z, b, y, a1, a2, a3);
}
KPMAP_REPRO_CLONES void repro_row(const ReproGrids& g, const float* x, const float* w, long long n, double z, double b,
                                  double y, double* a1, double* a2, double* a3) {
  row(g, x, w, n, z, b, y, a1, a2, a3);
}

const char* repro_rows_isa() {
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && !defined(__FP_FAST_FMA)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? "avx2" : "baseline";
#else
  return "build target";
#endif
}

}  // namespace kpmap::model_detail
