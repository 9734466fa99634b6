// Readers of the trainer's deck sections (problem, train, precision, comm), of the bench
// section, and their resolved JSON. Internal to the config layer; load_config() applies the
// rules that span sections.
#pragma once

#include <nlohmann/json.hpp>

#include "kpmap/config/config.hpp"
#include "kpmap/config/deck.hpp"

namespace kpmap::config {

// Each reads its section completely (every key, the rules inside the section) and calls
// finish() on it, so an unknown key is rejected.
ProblemConfig parse_problem(Section& problem);
TrainConfig parse_train(Section& train);
PrecisionConfig parse_precision(Section& precision);
CommConfig parse_comm(Section& comm);
CheckpointConfig parse_checkpoint(Section& checkpoint);
// The axes of bench.axes are checked against the mesh's.
BenchConfig parse_bench(Section& bench, const MeshConfig& mesh);

// In schema order, every default filled in; a valid deck section again (only the optimizer keys
// that apply to the chosen optimizer).
nlohmann::ordered_json to_json(const ProblemConfig& problem);
nlohmann::ordered_json to_json(const TrainConfig& train);
nlohmann::ordered_json to_json(const PrecisionConfig& precision);
nlohmann::ordered_json to_json(const CommConfig& comm);
nlohmann::ordered_json to_json(const CheckpointConfig& checkpoint);
nlohmann::ordered_json to_json(const BenchConfig& bench);  // a one-axis entry as a string

}  // namespace kpmap::config
