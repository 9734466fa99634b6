// mode: train — runs the trainer, prints progress and a summary on rank 0, writes the JSON report.
#pragma once

#include <optional>

#include "kpmap/bench/comm_model.hpp"
#include "kpmap/config/config.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "kpmap/report/report.hpp"
#include "kpmap/train/trainer.hpp"

namespace kpmap {

// train.kernel auto (the default) -> the backend's default_gradient_kernel(), in the Config and
// in its resolved deck, so that reports name the kernel that ran.
// Then check_fused_width with this backend's fused_max_features.
void resolve_gradient_kernel(Config& config);

// train.kernel fused on a backend that keeps its sums in GPU shared memory: InputError naming
// train.kernel, the features per model rank and max_features (< 0: no limit, host backends).
// Not with precision.reproducible, whose kernels are its own.
void check_fused_width(const Config& config, long long max_features);

// The trainer's view of the deck.
TrainSpec train_spec(const Config& config);

// comm.model, read and checked against the deck: it must hold an entry, fitted on an axis of the
// same size, for every collective, axis and dtype the step makes (step_collective_keys).
// Nothing without comm.model; InputError naming comm.model, the file and what is missing.
std::optional<CommModel> train_comm_model(const Config& config);

// The JSON report of DESIGN.md §3 (collective: timings are reduced over the mesh); with a
// model, "comm_model": the predicted communication time per step next to the measured one.
Json train_report(const Config& config, const Mesh& mesh, const TrainResult& result,
                  const std::optional<CommModel>& model = std::nullopt);

int run_train(const Config& config, const Mesh& mesh);

}  // namespace kpmap
