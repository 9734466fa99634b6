#include "kpmap/collectives/mpi_types.hpp"

namespace kpmap {

std::string to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::max: return "max";
    case ReduceOp::min: return "min";
  }
  return "?";
}

namespace {

MPI_Op predefined(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

}  // namespace

template <> MPI_Datatype mpi_datatype<double>() { return MPI_DOUBLE; }
template <> MPI_Datatype mpi_datatype<float>() { return MPI_FLOAT; }
template <> MPI_Datatype mpi_datatype<std::int32_t>() { return MPI_INT32_T; }
template <> MPI_Datatype mpi_datatype<std::int64_t>() { return MPI_INT64_T; }

template <> MPI_Op mpi_op<double>(ReduceOp op) { return predefined(op); }
template <> MPI_Op mpi_op<float>(ReduceOp op) { return predefined(op); }
template <> MPI_Op mpi_op<std::int32_t>(ReduceOp op) { return predefined(op); }
template <> MPI_Op mpi_op<std::int64_t>(ReduceOp op) { return predefined(op); }

}  // namespace kpmap
