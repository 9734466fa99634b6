// Every cross-rank reduction of a training step goes through StepComm, so that later strategies
// (reduce_scatter + all_gather, buckets, overlap, 16-bit wire formats) change one class.
//
//   sum_partial_products(z): psum over `model` of this model rank's partial X w (+ b).
//   average(stats):          psum over `data` of [grad sums..., loss_sum, count]; then the
//                            caller divides by the global count (a pmean weighted by sample
//                            counts, so uneven shards are exact).
#pragma once

#include <cstddef>

#include "kpmap/collectives/collectives.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

template <class T>
class StepComm {
 public:
  explicit StepComm(const Mesh& mesh)
      : mesh_(mesh),
        data_size_(mesh.has_axis("data") ? mesh.axis_size("data") : 1),
        model_size_(mesh.has_axis("model") ? mesh.axis_size("model") : 1) {}

  int data_size() const { return data_size_; }
  int model_size() const { return model_size_; }
  int data_index() const { return data_size_ > 1 ? mesh_.axis_index("data") : 0; }
  int model_index() const { return model_size_ > 1 ? mesh_.axis_index("model") : 0; }

  template <class V>
  void sum_partial_products(const V& z) {
    if (model_size_ == 1) return;
    psum(mesh_, "model", z, z);
    bytes_ += z.extent(0) * sizeof(typename V::non_const_value_type);
  }

  template <class V>
  void average(const V& stats) {
    if (data_size_ == 1) return;
    psum(mesh_, "data", stats, stats);
    bytes_ += stats.extent(0) * sizeof(typename V::non_const_value_type);
  }

  // Payload bytes this rank handed to collectives since the last call (no bytes leave a rank
  // over an axis of size 1, so those calls are skipped and not counted).
  std::size_t take_bytes() {
    const std::size_t b = bytes_;
    bytes_ = 0;
    return b;
  }

 private:
  const Mesh& mesh_;
  int data_size_, model_size_;
  std::size_t bytes_ = 0;
};

}  // namespace kpmap
