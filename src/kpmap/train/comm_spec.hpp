// How a training step reduces its gradient (the deck's comm section, docs/train.md).
#pragma once

#include <cstdint>
#include <string>

#include "kpmap/core/types.hpp"

namespace kpmap {

enum class CommStrategy {
  allreduce,       // psum over `data`: every rank holds the whole mean gradient and all state
  reduce_scatter,  // psum_scatter + all_gather (ZeRO stage 2): each data rank updates one shard
};

struct CommSpec {
  CommStrategy strategy = CommStrategy::allreduce;
  long long bucket_bytes = 0;  // > 0: the gradient travels in buckets of about this many bytes
  bool overlap = false;        // buckets start non-blocking while the gradient is still computed
};

// One kind of collective call a step makes: the collective (the bench's names: psum,
// psum_scatter, all_gather, pmax), the axis (AxisNames::str(): "data", "model", "(data, model)")
// and the element type.
struct CollectiveKey {
  std::string collective;
  std::string axis;
  Dtype dtype = Dtype::fp32;
  bool operator==(const CollectiveKey& o) const {
    return collective == o.collective && axis == o.axis && dtype == o.dtype;
  }
};

// The calls of one key and message size: bytes in the bench's `size` convention (docs/bench.md:
// all_gather the gathered output, psum_scatter the input), calls per step on this rank.
struct StepCollective {
  CollectiveKey key;
  std::int64_t bytes = 0;
  double calls_per_step = 0;
};

}  // namespace kpmap
