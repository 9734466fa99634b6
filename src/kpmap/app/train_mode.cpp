#include "kpmap/app/train_mode.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>

#include "kpmap/app/data_mode.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/train/checkpoint.hpp"
#include "kpmap/train/memory.hpp"

namespace kpmap {

namespace {

// Bytes that differ between ranks (uneven shards) are reported as min / avg / max.
Json bytes_stat(MPI_Comm comm, std::size_t bytes) { return to_json(stat_over_ranks(comm, static_cast<double>(bytes))); }

// "fp32", or "bf16 (params fp32, comm bf16, loss scale dynamic)" when the types differ, or
// "fp32 (params fp32, reproducible sums)".
std::string precision_summary(const PrecisionConfig& p) {
  std::string s = to_string(p.compute);
  if (p.reproducible) return s + " (params " + to_string(p.params) + ", reproducible sums)";
  if (p.params == p.compute && p.comm == p.compute && p.loss_scale == "none") return s;
  s += " (params " + to_string(p.params) + ", comm " + to_string(p.comm);
  if (p.loss_scale == "dynamic") s += ", loss scale dynamic";
  if (p.loss_scale == "static") s += ", loss scale " + std::to_string(p.static_scale);
  return s + ")";
}

// KPMAP_TEST_INJECT_INF=STEP:RANK (test only; documented in docs/precision.md): mesh rank RANK
// puts +Inf into its gradient at step STEP. Every rank reads the same environment from mpiexec.
void inject_nonfinite_from_environment(TrainSpec& spec) {
  const char* text = std::getenv("KPMAP_TEST_INJECT_INF");
  if (text == nullptr || *text == '\0') return;
  long long step = 0;
  int rank = 0;
  char tail = 0;
  if (std::sscanf(text, "%lld:%d%c", &step, &rank, &tail) != 2 || step < 1 || rank < 0) {
    throw InputError(std::string("KPMAP_TEST_INJECT_INF: '") + text + "' is not STEP:RANK (allowed: a step >= 1 and a rank >= 0, e.g. 5:1)");
  }
  spec.inject_step = step;
  spec.inject_rank = rank;
}

// KPMAP_TEST_FAULT=WHERE:STEP:RANK (test only; documented in docs/reliability.md): mesh rank RANK
// raises an exception at step STEP, inside the step (WHERE = step), from a collective it calls
// wrongly (WHERE = collective), or while it writes that step's checkpoint (WHERE = io: rank 0, the
// writer), while the other ranks go on.
void fault_from_environment(TrainSpec& spec) {
  const char* text = std::getenv("KPMAP_TEST_FAULT");
  if (text == nullptr || *text == '\0') return;
  char where[16] = {0};
  long long step = 0;
  int rank = 0;
  char tail = 0;
  const int fields = std::sscanf(text, "%15[a-z]:%lld:%d%c", where, &step, &rank, &tail);
  const std::string kind(where);
  if (fields != 3 || step < 1 || rank < 0 || (kind != "step" && kind != "collective" && kind != "io") ||
      (kind == "io" && rank != 0)) {
    throw InputError(std::string("KPMAP_TEST_FAULT: '") + text +
                     "' is not WHERE:STEP:RANK (allowed: WHERE step, collective or io, a step >= 1 and a rank >= 0 "
                     "(0 for io: rank 0 writes checkpoints), e.g. step:5:1)");
  }
  spec.fault = kind == "step"         ? TrainSpec::Fault::step
               : kind == "collective" ? TrainSpec::Fault::collective
                                      : TrainSpec::Fault::io;
  spec.fault_step = step;
  spec.fault_rank = rank;
}

// The size of a key's axis: one mesh axis, or the tuple of all of them.
int axis_size(const std::vector<MeshAxis>& axes, const std::string& axis) {
  int product = 1;
  for (const auto& a : axes) {
    if (a.name == axis) return a.size;
    product *= a.size;
  }
  return product;
}

std::string describe(const CollectiveKey& k) { return k.collective + " over " + k.axis + " in " + to_string(k.dtype); }

// "comm_model": rank 0's collectives with their predicted time, the sum, and the measured
// communication time per step (the mean over ranks of timing.comm + timing.comm_in_flight).
Json comm_model_json(const Config& config, const CommModel& model, const TrainResult& result, const Json& timing) {
  Json collectives = Json::array();
  double predicted = 0;
  for (const auto& c : result.collectives) {
    const CommModelEntry* e = model.find(c.key.collective, c.key.axis, c.key.dtype);
    if (e == nullptr) throw RuntimeError("comm.model: the step made " + describe(c.key) + ", which step_collective_keys did not list");
    const double seconds = c.calls_per_step * e->seconds(c.bytes);
    predicted += seconds;
    collectives.push_back({{"collective", c.key.collective},
                           {"axis", c.key.axis},
                           {"dtype", to_string(c.key.dtype)},
                           {"bytes", c.bytes},
                           {"calls_per_step", c.calls_per_step},
                           {"predicted_s_per_step", seconds}});
  }
  const double steps = static_cast<double>(std::max(1LL, result.steps_run));
  const double measured =
      (timing["comm"]["avg"].get<double>() + timing["comm_in_flight"]["avg"].get<double>()) / steps;
  return {{"file", config.comm.model},
          {"predicted_s_per_step", predicted},
          {"measured_s_per_step", measured},
          {"collectives", collectives}};
}

// ---- checkpoints (docs/reliability.md) ----

// The deck's keys a resumed run must share with the run that wrote the checkpoint: the resolved
// deck without those that may change between the two (the mesh, comm, the step count, the
// kernel, accumulation, the time limit, checkpoint and output).
Json checkpoint_identity(const Config& config) {
  Json id = config.resolved;
  for (const char* key : {"mode", "mesh", "comm", "checkpoint", "output"}) id.erase(key);
  for (const char* key : {"steps", "kernel", "accumulation", "max_seconds"}) id["train"].erase(key);
  return id;
}

void flatten(const Json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (!j.is_object()) {
    out[prefix] = j.dump();
    return;
  }
  for (const auto& [key, value] : j.items()) flatten(value, prefix.empty() ? key : prefix + "." + key, out);
}

// "problem.seed: 42 in the checkpoint, 7 here; ..." for every key that differs.
std::string identity_difference(const Json& stored, const Json& here) {
  std::map<std::string, std::string> a, b;
  flatten(stored, "", a);
  flatten(here, "", b);
  for (const auto& [key, value] : b) a.emplace(key, "(absent)");
  std::string out;
  for (const auto& [key, value] : a) {
    const auto it = b.find(key);
    const std::string mine = it == b.end() ? "(absent)" : it->second;
    if (mine != value) out += (out.empty() ? "" : "; ") + key + ": " + value + " in the checkpoint, " + mine + " here";
  }
  return out;
}

// checkpoint.resume: rank 0 finds, reads and checks the checkpoint against the deck, and every
// rank gets its state. A bad one is bad input, agreed: exit 2 on every rank, one message.
int load_resume(const Config& config, const Mesh& mesh, TrainState& state, std::string& file) {
  int code = exit_success;
  std::string message;
  if (mesh.rank() == 0) {
    try {
      file = find_checkpoint(config.checkpoint.resume);
      CheckpointInfo info;
      state = read_checkpoint(file, info);
      const Json stored = Json::parse(info.identity, nullptr, false);
      const Json here = checkpoint_identity(config);
      if (stored != here) {
        throw InputError("checkpoint " + file + " belongs to another run: " + identity_difference(stored, here) +
                         " (a resumed run may change only mesh, comm, train.steps, train.kernel, train.accumulation, "
                         "train.max_seconds, checkpoint and output)");
      }
      if (state.step >= config.train.steps) {
        throw InputError("checkpoint " + file + " is at step " + std::to_string(state.step) + ", train.steps is " +
                         std::to_string(config.train.steps) + ": nothing left to run (allowed: train.steps > " +
                         std::to_string(state.step) + ")");
      }
    } catch (const Error& e) {
      code = e.exit_code();
      message = e.what();
    }
  }
  code = agree_on_exit(mesh.comm(), code, message);
  if (code == exit_success) broadcast(state, mesh.comm());
  return code;
}

// SIGTERM and SIGUSR1 (a batch system's notice) set a flag that the trainer's stop request reads
// after every step; the previous handlers come back when the run ends.
volatile std::sig_atomic_t stop_signal = 0;
extern "C" void on_stop_signal(int signal) { stop_signal = signal; }

class StopSignals {
 public:
  StopSignals() {
    stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, &term_);
    sigaction(SIGUSR1, &action, &usr1_);
  }
  ~StopSignals() {
    sigaction(SIGTERM, &term_, nullptr);
    sigaction(SIGUSR1, &usr1_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction term_ {}, usr1_ {};
};

// TrainControl::stop_request codes, the largest wins.
enum StopReason : int { stop_none = 0, stop_time = 1, stop_usr1 = 2, stop_term = 3 };
const char* stop_reason_name(int code) {
  switch (code) {
    case stop_time: return "train.max_seconds";
    case stop_usr1: return "SIGUSR1";
    case stop_term: return "SIGTERM";
  }
  return "none";
}

}  // namespace

std::optional<CommModel> train_comm_model(const Config& config) {
  if (config.comm.model.empty()) return std::nullopt;
  const std::string& where = config.comm.model_where;
  CommModel model = read_comm_model(config.comm.model, where);
  const auto keys = step_collective_keys(train_spec(config), config.mesh.axes);
  for (const auto& k : keys) {
    const CommModelEntry* e = model.find(k.collective, k.axis, k.dtype);
    if (e == nullptr) {
      std::string needed, has;
      for (const auto& x : keys) needed += (needed.empty() ? "" : ", ") + describe(x);
      for (const auto& x : model.entries) has += (has.empty() ? "" : ", ") + describe({x.collective, x.axis, x.dtype});
      throw InputError(where + ": " + config.comm.model + " has no " + describe(k) + " (the step makes: " + needed +
                       "; the model has: " + (has.empty() ? "nothing" : has) +
                       "; fit one from a mode bench run with that collective, axis and dtype on this mesh)");
    }
    const int n = axis_size(config.mesh.axes, k.axis);
    if (e->ranks != n) {
      throw InputError(where + ": " + config.comm.model + ": " + describe(k) + " was fitted on " +
                       std::to_string(e->ranks) + " ranks, but the mesh's " + k.axis + " has " + std::to_string(n) +
                       " (allowed: a model fitted on an axis of the same size)");
    }
  }
  return model;
}

void resolve_gradient_kernel(Config& config) {
  if (config.train.kernel == "auto") {
    config.train.kernel = to_string(default_gradient_kernel());
    if (config.resolved.contains("train")) config.resolved["train"]["kernel"] = config.train.kernel;
  }
  const std::size_t sum_bytes = config.precision.compute == Dtype::fp64 ? sizeof(double) : sizeof(float);
  check_fused_width(config, fused_max_features(sum_bytes));
}

void check_fused_width(const Config& config, long long max_features) {
  // precision.reproducible runs its own kernels whatever train.kernel says (docs/train.md)
  if (config.mode != Mode::train || config.train.kernel != "fused" || config.precision.reproducible ||
      max_features < 0) {
    return;
  }
  long long model = 1;
  for (const auto& axis : config.mesh.axes) {
    if (axis.name == "model") model = axis.size;
  }
  const long long per_rank = (config.problem.features + model - 1) / model;
  if (per_rank <= max_features) return;
  const std::string sums = config.precision.compute == Dtype::fp64 ? "fp64" : "fp32";
  throw InputError("train.kernel: 'fused' with " + std::to_string(per_rank) +
                   " features per model rank keeps " + std::to_string(per_rank + 2) + " " + sums +
                   " gradient sums per GPU thread in shared memory, more than a block holds (allowed: team, "
                   "which train.kernel auto picks on GPUs, kokkos_kernels, or fused with at most " +
                   std::to_string(max_features) + " features per model rank: problem.features / the model axis)");
}

TrainSpec train_spec(const Config& config) {
  const auto& p = config.problem;
  const auto& t = config.train;
  const auto& o = t.optimizer;
  TrainSpec spec;
  spec.problem = {p.samples, p.features, p.bias, p.noise, static_cast<std::uint64_t>(p.seed), p.weight_scale};
  spec.from_file = p.source != "synthetic";
  spec.steps = t.steps;
  spec.batch = t.batch;
  spec.accumulation = t.accumulation;
  spec.kernel = parse_gradient_kernel(t.kernel);
  spec.optimizer = {o.name, o.lr, o.momentum, o.beta1, o.beta2, o.eps};
  const auto& precision = config.precision;
  spec.compute = precision.compute;
  spec.params = precision.params;
  spec.comm = precision.comm;
  spec.reproducible = precision.reproducible;
  spec.comm_spec.strategy =
      config.comm.strategy == "reduce_scatter" ? CommStrategy::reduce_scatter : CommStrategy::allreduce;
  spec.comm_spec.bucket_bytes = config.comm.bucket_bytes;
  spec.comm_spec.overlap = config.comm.overlap;
  using Kind = LossScaleSpec::Kind;
  spec.loss_scale.kind = precision.loss_scale == "dynamic" ? Kind::dynamic
                         : precision.loss_scale == "static" ? Kind::fixed
                                                            : Kind::none;
  spec.loss_scale.scale = spec.loss_scale.kind == Kind::dynamic ? precision.scaler.init : precision.static_scale;
  spec.loss_scale.growth_interval = precision.scaler.growth_interval;
  spec.loss_scale.growth_factor = precision.scaler.growth_factor;
  spec.loss_scale.backoff_factor = precision.scaler.backoff_factor;
  inject_nonfinite_from_environment(spec);
  fault_from_environment(spec);
  return spec;
}

Json train_report(const Config& config, const Mesh& mesh, const TrainResult& result,
                  const std::optional<CommModel>& model) {
  Json report = report_header(config.resolved, mesh);
  Json history = Json::array();
  const bool scaled = config.precision.loss_scale != "none";
  for (const auto& h : result.history) {
    Json entry{{"step", h.step}, {"loss", h.loss}};
    if (scaled) {
      entry["scale"] = h.scale;
      entry["skipped"] = h.skipped;
    }
    history.push_back(entry);
  }
  report["history"] = history;
  if (scaled) {
    Json skipped = Json::array();
    for (const auto& h : result.history)
      if (h.skipped) skipped.push_back(h.step);
    report["skipped_steps"] = skipped;
  }
  if (result.stopped.step > 0) {
    report["stopped"] = {{"reason", "non-finite loss or gradient"},
                         {"step", result.stopped.step},
                         {"rank", result.stopped.rank},
                         {"seen_in", result.stopped.in_own ? "own sums" : "reduced sums"}};
  }
  report["reproducible"] = result.reproducible;
  if (!result.history.empty()) report["final_loss"] = result.final_loss;
  if (result.weights_rel_error) report["weights_rel_error"] = *result.weights_rel_error;
  report["timing"] = timing_json(mesh.comm(), result.timers);
  report["comm_bytes"] = bytes_stat(mesh.comm(), result.comm_bytes_per_step);
  report["comm_calls"] = to_json(stat_over_ranks(mesh.comm(), result.comm_calls_per_step));
  report["memory"] = {{"parameters", bytes_stat(mesh.comm(), result.param_bytes)},
                      {"gradients", bytes_stat(mesh.comm(), result.gradient_bytes)},
                      {"optimizer_state", bytes_stat(mesh.comm(), result.optimizer_bytes)},
                      {"data", bytes_stat(mesh.comm(), result.data_bytes)}};
  report["data_huge_pages"] = to_json(stat_over_ranks(mesh.comm(), result.data_huge_pages ? 1.0 : 0.0));
  const TrainSpec spec = train_spec(config);
  const MemoryEstimate estimate = estimate_memory(spec, mesh);
  report["memory_estimate"] = {{"data", bytes_stat(mesh.comm(), estimate.data)},
                               {"parameters", bytes_stat(mesh.comm(), estimate.parameters)},
                               {"gradients", bytes_stat(mesh.comm(), estimate.gradients)},
                               {"optimizer_state", bytes_stat(mesh.comm(), estimate.optimizer)},
                               {"total", bytes_stat(mesh.comm(), estimate.total())}};
  if (spec.from_file) report["memory_estimate"]["file_rows"] = bytes_stat(mesh.comm(), estimate.file_rows);
  if (config.comm.strategy == "reduce_scatter") {
    report["shard"] = {{"elements", to_json(stat_over_ranks(mesh.comm(), static_cast<double>(result.shard_elements)))},
                       {"padding", to_json(stat_over_ranks(mesh.comm(), static_cast<double>(result.shard_padding)))}};
  }
  if (model) report["comm_model"] = comm_model_json(config, *model, result, report["timing"]);
  return report;
}

int run_train(const Config& config, const Mesh& mesh) {
  TrainSpec spec = train_spec(config);
  // Each rank reads its part: agreed, so that a bad value ends every rank; the message names the
  // lowest rank that met one.
  if (config.problem.source != "synthetic") {
    int code = exit_success;
    std::string message;
    try {
      spec.data = read_file_data(config, mesh);
    } catch (const Error& e) {
      code = e.exit_code();
      message = "rank " + std::to_string(mesh.rank()) + ": " + e.what();
    } catch (const std::exception& e) {
      code = exit_runtime;
      message = "rank " + std::to_string(mesh.rank()) + ": " + e.what();
    }
    code = agree_on_exit(mesh.comm(), code, message);
    if (code != exit_success) return code;
  }
  if (mesh.rank() == 0) {
    std::cout << "kpmap train: " << config.deck << " on mesh " << mesh.describe() << ", "
              << config.problem.samples << " x " << config.problem.features << ", batch " << config.train.batch
              << ", " << config.train.steps << " steps, " << config.train.optimizer.name << ", "
              << precision_summary(config.precision) << ", kernel " << config.train.kernel << std::endl;
  }
  const std::optional<CommModel> model = train_comm_model(config);  // run() checked it on every rank
  const CheckpointConfig& checkpoint = config.checkpoint;
  TrainControl control;
  TrainState resume;
  std::string resume_file;
  if (!checkpoint.resume.empty()) {
    const int code = load_resume(config, mesh, resume, resume_file);
    if (code != exit_success) return code;
    control.resume = &resume;
    if (mesh.rank() == 0) std::cout << "resuming from " << resume_file << " after step " << resume.step << std::endl;
  }
  std::optional<StopSignals> signals;
  std::string last_checkpoint;
  if (!checkpoint.path.empty()) {
    signals.emplace();
    CheckpointInfo info;
    info.identity = checkpoint_identity(config).dump();
    info.config = config.resolved.dump();
    info.mesh = mesh.describe();
    info.params = to_string(config.precision.params);
    info.optimizer = config.train.optimizer.name;
    info.features = config.problem.features;
    info.bias = config.problem.bias;
    const BatchPlan plan = make_batch_plan(config.problem.samples, config.train.batch, 0, 1);
    control.every = checkpoint.every;
    control.save = [&, info, plan](const TrainState& state) mutable {
      if (mesh.rank() != 0) return;
      info.next_batch = plan.batch_of_step(state.step);
      const bool fault = spec.fault == TrainSpec::Fault::io && spec.fault_step == state.step;
      last_checkpoint = write_checkpoint(checkpoint.path, state, info, checkpoint.keep, fault);
    };
    const double start = MPI_Wtime(), limit = config.train.max_seconds;
    control.stop_request = [start, limit] {
      if (stop_signal == SIGTERM) return int(stop_term);
      if (stop_signal == SIGUSR1) return int(stop_usr1);
      return limit > 0 && MPI_Wtime() - start >= limit ? int(stop_time) : int(stop_none);
    };
  }
  Progress progress(config.train.steps, config.output.every, config.train.batch, mesh.rank() == 0, resume.step);
  const TrainResult result =
      train(spec, mesh, [&](long long step, double loss) { progress.update(step, loss); }, control);
  Json report = train_report(config, mesh, result, model);
  if (control.resume != nullptr) report["resumed_from"] = {{"checkpoint", resume_file}, {"step", resume.step}};
  if (!last_checkpoint.empty()) report["checkpoint"] = {{"last", last_checkpoint}};
  if (result.interrupted != stop_none) {
    report["interrupted"] = {{"reason", stop_reason_name(result.interrupted)},
                             {"step", result.history.back().step},
                             {"checkpoint", last_checkpoint}};
  }
  write_report(mesh.comm(), config.output.report, report);
  if (result.stopped.step > 0) {  // every rank stopped at the same step
    if (mesh.rank() == 0) {
      const TrainStop& stop = result.stopped;
      std::cerr << "kpmap: error: step " << stop.step << ": the loss or gradient is not finite (Inf or NaN), first "
                << "seen on rank " << stop.rank
                << (stop.in_own ? " in its own sums" : " in the reduced sums (no rank's own sums: their sum overflowed)")
                << "; every rank stopped before the step's update"
                << (config.output.report.empty() ? "" : ", report " + config.output.report + " (history to step " +
                                                             std::to_string(stop.step - 1) + ")")
                << ". The weights diverge: lower train.optimizer.lr; with a 16-bit precision.comm, "
                   "precision.loss_scale: dynamic skips such steps instead"
                << std::endl;
    }
    return exit_runtime;
  }
  if (result.interrupted != stop_none && mesh.rank() == 0) {
    std::cout << "kpmap: stopped by " << stop_reason_name(result.interrupted) << " after step "
              << result.history.back().step << " of " << config.train.steps << ", checkpoint " << last_checkpoint
              << "; continue with --resume " << checkpoint.path << std::endl;
  }
  if (mesh.rank() == 0) {
    char line[200];
    std::snprintf(line, sizeof line, "final loss %.6e", result.final_loss);
    std::string summary = line;
    if (result.weights_rel_error) {
      std::snprintf(line, sizeof line, ", weights_rel_error %.3e", *result.weights_rel_error);
      summary += line;
    }
    std::snprintf(line, sizeof line, ", %.3f s total", report["timing"]["total"]["max"].get<double>());
    summary += line;
    std::string skipped;
    if (report.contains("skipped_steps")) skipped = ", " + std::to_string(report["skipped_steps"].size()) + " skipped steps";
    std::cout << summary << skipped << (config.output.report.empty() ? "" : ", report " + config.output.report)
              << std::endl;
    if (model) {
      const Json& c = report["comm_model"];
      const double predicted = c["predicted_s_per_step"].get<double>(), measured = c["measured_s_per_step"].get<double>();
      std::snprintf(line, sizeof line, "communication per step: predicted %.3e s, measured %.3e s, ratio %.2f",
                    predicted, measured, measured > 0 ? predicted / measured : 0.0);
      std::cout << line << " (model " << config.comm.model << ")" << std::endl;
    }
  }
  return exit_success;
}

}  // namespace kpmap
