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

// One row of the gradient reduction, the arithmetic of ReproGradientReduce::operator(): z is the
// value of the row's forward accumulator over x . w (w given) or z itself (w null); then
// r = (z + b) - y; the slots a_k[j] (j < n) get the levels of r x[j], a_k[n] those of r and
// a_k[n + 1] those of r^2.
void repro_row(const ReproGrids& g, const double* x, const double* w, long long n, double z, double b, double y,
               double* a1, double* a2, double* a3);
void repro_row(const ReproGrids& g, const float* x, const float* w, long long n, double z, double b, double y,
               double* a1, double* a2, double* a3);

// Which version the loader picked: "avx2" or "baseline" (for benchmark output).
const char* repro_rows_isa();

}  // namespace kpmap::model_detail
