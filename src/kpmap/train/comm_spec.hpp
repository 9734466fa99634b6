// How a training step reduces its gradient (the deck's comm section, docs/train.md).
#pragma once

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

}  // namespace kpmap
