#include "kpmap/app/train_mode.hpp"

#include <cstdio>
#include <iostream>

#include "kpmap/core/error.hpp"

namespace kpmap {

namespace {

// Bytes that differ between ranks (uneven shards) are reported as min / avg / max.
Json bytes_stat(MPI_Comm comm, std::size_t bytes) { return to_json(stat_over_ranks(comm, static_cast<double>(bytes))); }

}  // namespace

TrainSpec train_spec(const Config& config) {
  const auto& p = config.problem;
  const auto& t = config.train;
  const auto& o = t.optimizer;
  TrainSpec spec;
  spec.problem = {p.samples, p.features, p.bias, p.noise, static_cast<std::uint64_t>(p.seed)};
  spec.steps = t.steps;
  spec.batch = t.batch;
  spec.accumulation = t.accumulation;
  spec.kernel = parse_gradient_kernel(t.kernel);
  spec.optimizer = {o.name, o.lr, o.momentum, o.beta1, o.beta2, o.eps};
  spec.compute = config.precision.compute;
  return spec;
}

Json train_report(const Config& config, const Mesh& mesh, const TrainResult& result) {
  Json report = report_header(config.resolved, mesh);
  Json history = Json::array();
  for (const auto& h : result.history) history.push_back({{"step", h.step}, {"loss", h.loss}});
  report["history"] = history;
  report["final_loss"] = result.final_loss;
  report["weights_rel_error"] = result.weights_rel_error;
  report["timing"] = timing_json(mesh.comm(), result.timers);
  report["comm_bytes"] = bytes_stat(mesh.comm(), result.comm_bytes_per_step);
  report["memory"] = {{"parameters", bytes_stat(mesh.comm(), result.param_bytes)},
                      {"gradients", bytes_stat(mesh.comm(), result.gradient_bytes)},
                      {"optimizer_state", bytes_stat(mesh.comm(), result.optimizer_bytes)},
                      {"data", bytes_stat(mesh.comm(), result.data_bytes)}};
  return report;
}

int run_train(const Config& config, const Mesh& mesh) {
  if (mesh.rank() == 0) {
    std::cout << "kpmap train: " << config.deck << " on mesh " << mesh.describe() << ", "
              << config.problem.samples << " x " << config.problem.features << ", batch " << config.train.batch
              << ", " << config.train.steps << " steps, " << config.train.optimizer.name << ", "
              << to_string(config.precision.compute) << ", kernel " << config.train.kernel << std::endl;
  }
  Progress progress(config.train.steps, config.output.every, config.train.batch, mesh.rank() == 0);
  const TrainResult result =
      train(train_spec(config), mesh, [&](long long step, double loss) { progress.update(step, loss); });
  const Json report = train_report(config, mesh, result);
  write_report(mesh.comm(), config.output.report, report);
  if (mesh.rank() == 0) {
    char line[200];
    std::snprintf(line, sizeof line, "final loss %.6e, weights_rel_error %.3e, %.3f s total", result.final_loss,
                  result.weights_rel_error, report["timing"]["total"]["max"].get<double>());
    std::cout << line << (config.output.report.empty() ? "" : ", report " + config.output.report) << std::endl;
  }
  return exit_success;
}

}  // namespace kpmap
