// Messages of any element count: MPI's counts are int, so a message larger than
// detail::chunk_limit() (INT_MAX elements, or less in tests) is split into several MPI calls of
// at most that many elements each, at the same offsets on every rank.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstdint>

#include "kpmap/collectives/mpi_types.hpp"
#include "kpmap/core/error.hpp"

namespace kpmap::detail {

// Calls f(offset, count) for consecutive chunks of [0, total), each count <= chunk_limit().
// total == 0 still makes one call with count 0: every rank enters the collective.
template <class F>
void for_each_chunk(std::int64_t total, F&& f) {
  const std::int64_t limit = chunk_limit();
  if (total == 0) {
    f(std::int64_t{0}, 0);
    return;
  }
  for (std::int64_t offset = 0; offset < total; offset += limit) {
    f(offset, static_cast<int>(std::min(limit, total - offset)));
  }
}

// Whether a message of `total` elements needs more than one call.
inline bool chunked(std::int64_t total) { return total > chunk_limit(); }

// A committed datatype of `count` elements of `type` whose extent is `stride` elements: the
// blocks of a chunked gather or all_to_all, one per rank, `stride` elements apart. Freed on
// destruction; MPI lets a datatype be freed while an operation that uses it is pending.
class BlockType {
 public:
  BlockType(MPI_Datatype type, int count, std::int64_t stride) {
    MPI_Aint lb = 0, extent = 0;
    check_mpi(MPI_Type_get_extent(type, &lb, &extent), "MPI_Type_get_extent");
    MPI_Datatype block = MPI_DATATYPE_NULL;
    check_mpi(MPI_Type_contiguous(count, type, &block), "MPI_Type_contiguous");
    const int rc = MPI_Type_create_resized(block, 0, static_cast<MPI_Aint>(stride) * extent, &type_);
    MPI_Type_free(&block);
    check_mpi(rc, "MPI_Type_create_resized");
    check_mpi(MPI_Type_commit(&type_), "MPI_Type_commit");
  }
  ~BlockType() {
    if (type_ != MPI_DATATYPE_NULL) MPI_Type_free(&type_);
  }
  BlockType(const BlockType&) = delete;
  BlockType& operator=(const BlockType&) = delete;
  MPI_Datatype get() const { return type_; }

 private:
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
};

}  // namespace kpmap::detail
