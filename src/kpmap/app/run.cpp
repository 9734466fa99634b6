#include "kpmap/app/run.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "kpmap/app/bench_mode.hpp"
#include "kpmap/app/collectives_mode.hpp"
#include "kpmap/app/data_mode.hpp"
#include "kpmap/app/preflight.hpp"
#include "kpmap/app/train_mode.hpp"
#include "kpmap/config/config.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

namespace {

int run_info(const Config& config, const Mesh& mesh) {
  if (mesh.rank() == 0) {
    std::cout << "deck " << config.deck << " (mode " << to_string(config.mode) << ")\n"
              << "mesh " << mesh.describe() << " over " << mesh.size() << " ranks\n"
              << "resolved configuration:\n"
              << config.resolved.dump(2) << std::endl;
  }
  return exit_success;
}

int run_mode(const Config& config, const Mesh& mesh) {
  switch (config.mode) {
    case Mode::info: return run_info(config, mesh);
    case Mode::train: return run_train(config, mesh);
    case Mode::bench: return run_bench(config, mesh);
    case Mode::collectives: return run_collectives(config, mesh);
  }
  throw RuntimeError("mode '" + to_string(config.mode) + "' has no runner");  // unreachable: every mode is handled
}

// A rank-local failure: the message goes out in one write, then MPI_Abort ends the job. The
// launcher forwards a rank's output through its proxy, which MPI_Abort tears down with the job,
// so the line gets a moment to be forwarded first (otherwise it can be lost, in part or whole).
[[noreturn]] void abort_with(MPI_Comm world, int rank, const char* what, int exit_code) {
  const std::string line = "kpmap: error: rank " + std::to_string(rank) + ": " + what + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  MPI_Abort(world, exit_code);
  std::abort();  // MPI_Abort does not return
}

}  // namespace

int load_deck(const RunOptions& options, MPI_Comm world, const std::function<void(Config&)>& check,
              std::optional<Config>& config) {
  int ranks = 1;
  MPI_Comm_size(world, &ranks);
  // Validation runs identically on every rank; the agreement makes sure that a rank-local
  // failure (a file one rank cannot read) still stops everybody, with one message.
  int code = exit_success;
  std::string message;
  try {
    config = load_config(options.deck, options.overrides, ranks);
    check(*config);
  } catch (const Error& e) {
    code = e.exit_code();
    message = e.what();
  } catch (const std::exception& e) {
    code = exit_runtime;
    message = e.what();
  }
  return agree_on_exit(world, code, message);
}

int run(const RunOptions& options, MPI_Comm world) {
  const auto check = [](Config& c) {
    resolve_data_source(c);  // a data file's shape, read on every rank
    resolve_gradient_kernel(c);
    // The trainer's spec also reads the environment (a test-only switch): built here once, so a
    // bad value is agreed on like a bad deck.
    if (c.mode == Mode::train) {
      train_spec(c);
      train_comm_model(c);  // comm.model: read and checked against the step on every rank
    }
  };
  std::optional<Config> config;
  int code = load_deck(options, world, check, config);
  if (code != exit_success) return code;

  // Before a mode allocates anything: the memory it needs and the report path, agreed like the
  // deck. A mode returns an outcome every rank agrees on (0, or 1 when a check it ran failed); an
  // AgreedError is thrown at the same point on every rank, so rank 0 prints it once. Any other
  // exception past this point may be rank-local while other ranks sit in a collective, so an
  // agreement could hang: the failing rank prints its message and takes the job down.
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  std::string message;
  try {
    const Mesh mesh(world, config->mesh.axes);
    code = check_before_run(*config, mesh, message);
    code = agree_on_exit(world, code, message);
    if (code == exit_success) code = run_mode(*config, mesh);
  } catch (const AgreedError& e) {
    if (rank == 0) std::cerr << "kpmap: error: " << e.what() << std::endl;
    code = e.exit_code();
  } catch (const Error& e) {
    abort_with(world, rank, e.what(), e.exit_code());
  } catch (const std::exception& e) {
    abort_with(world, rank, e.what(), exit_runtime);
  }
  return code;
}

}  // namespace kpmap
