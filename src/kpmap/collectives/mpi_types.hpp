// MPI datatypes and reduction ops for kpmap's element types.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "kpmap/core/half.hpp"

namespace kpmap {

enum class ReduceOp { sum, max, min };

std::string to_string(ReduceOp op);

// The MPI datatype of one element of T: double, float, int32_t, int64_t, bf16, fp16. For bf16
// and fp16 it is a committed 2-byte contiguous type (one MPI_UINT16_T holding the bit pattern),
// created on first use and freed at MPI_Finalize.
template <class T>
MPI_Datatype mpi_datatype();

// The MPI reduction op for T. Integers: the predefined MPI_SUM, MPI_MAX, MPI_MIN. float and
// double: MPI_SUM, and for max and min commutative user-defined ops (MPI_MAX/MPI_MIN leave NaN
// to the implementation). bf16 and fp16: user-defined ops for all three, valid only with
// mpi_datatype<T>(); sum adds each pair in float and rounds back to 16 bits (so a reduction over
// p ranks rounds up to p-1 times; see docs/precision.md).
// Every floating max and min behaves as XLA's: NaN propagates (whichever rank holds it), -0
// orders below +0, and the winning element's bits are kept unchanged (16-bit types compare in
// float). User ops are created on first use and freed at MPI_Finalize; asking for one before
// MPI_Init or after MPI_Finalize throws RuntimeError.
template <class T>
MPI_Op mpi_op(ReduceOp op);

template <> MPI_Datatype mpi_datatype<double>();
template <> MPI_Datatype mpi_datatype<float>();
template <> MPI_Datatype mpi_datatype<std::int32_t>();
template <> MPI_Datatype mpi_datatype<std::int64_t>();
template <> MPI_Datatype mpi_datatype<bf16>();
template <> MPI_Datatype mpi_datatype<fp16>();

template <> MPI_Op mpi_op<double>(ReduceOp op);
template <> MPI_Op mpi_op<float>(ReduceOp op);
template <> MPI_Op mpi_op<std::int32_t>(ReduceOp op);
template <> MPI_Op mpi_op<std::int64_t>(ReduceOp op);
template <> MPI_Op mpi_op<bf16>(ReduceOp op);
template <> MPI_Op mpi_op<fp16>(ReduceOp op);

}  // namespace kpmap
