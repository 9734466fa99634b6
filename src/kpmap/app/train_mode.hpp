// mode: train — runs the trainer, prints progress and a summary on rank 0, writes the JSON report.
#pragma once

#include "kpmap/config/config.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "kpmap/report/report.hpp"
#include "kpmap/train/trainer.hpp"

namespace kpmap {

// The trainer's view of the deck.
TrainSpec train_spec(const Config& config);

// The JSON report of DESIGN.md §3 (collective: timings are reduced over the mesh).
Json train_report(const Config& config, const Mesh& mesh, const TrainResult& result);

int run_train(const Config& config, const Mesh& mesh);

}  // namespace kpmap
