// The reproducible kernels' inner loops over one row, for host backends, built for two CPU
// levels where the compiler can (GCC on x86-64 Linux: baseline SSE2 and AVX2, picked at load time
// by the CPU): the loops are compute-bound (about 20 floating-point operations per element of X),
// so the vector width sets their speed. AVX2 is used without FMA, so both versions perform the
// same IEEE operations on every element and give the same bits (tests/unit/test_repro_model.cpp
// compares them with the inline loops of model/repro_model.hpp, which device backends use).
#pragma once

#include "kpmap/core/repro_sum.hpp"

namespace kpmap {

// The grids of one step's sums: forward (features terms |x_ij w_j|), gradient (rows terms
// |r_i x_ij|), residual (rows terms |r_i|), loss (rows terms r_i^2).
struct ReproGrids {
  ReproGrid forward, gradient, residual, loss;
};

}  // namespace kpmap

namespace kpmap::model_detail {

// s[0], s[1] = the two-level accumulator of sum_j x[j] * w[j] on grid g.
void repro_row_dot(const ReproGrid& g, const double* x, const double* w, long long n, double* s);
void repro_row_dot(const ReproGrid& g, const float* x, const float* w, long long n, double* s);

// Rows [0, rows) of the gradient reduction, the arithmetic of ReproGradientReduce's rows: row q
// is x + q * stride (n elements); its z is the value of its forward accumulator over x . w (w
// given) or z[q] (w null); r = (z + b) - y[q]; the slots a_k[j] (j < n) get the levels of
// r x[j], a_k[n] those of r and a_k[n + 1] those of r^2 (the sums of a few rows in the lanes of
// a vector first: exact, so the same).
void repro_rows(const ReproGrids& g, const double* x, long long stride, long long rows, const double* w,
                const double* z, double b, const double* y, long long n, double* a1, double* a2, double* a3);
void repro_rows(const ReproGrids& g, const float* x, long long stride, long long rows, const float* w,
                const double* z, double b, const float* y, long long n, double* a1, double* a2, double* a3);

// Which version the loader picked: "avx2" or "baseline", or "build target" for a build without
// clones (for benchmark output; host_isa_name).
const char* repro_rows_isa();

}  // namespace kpmap::model_detail
