// MPI datatypes and reduction ops for kpmap's element types.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <type_traits>

namespace kpmap {

enum class ReduceOp { sum, max, min };

std::string to_string(ReduceOp op);

// The MPI datatype of one element of T (double, float, int32_t, int64_t; bf16 and fp16 once
// core/half.hpp provides them).
template <class T>
MPI_Datatype mpi_datatype();

// The MPI reduction op for T: the predefined one for native types; user-defined ops for the
// 16-bit types, created once and freed at MPI_Finalize.
template <class T>
MPI_Op mpi_op(ReduceOp op);

}  // namespace kpmap
