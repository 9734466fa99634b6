#include "kpmap/app/run.hpp"

#include "kpmap/app/collectives_mode.hpp"

#include <iostream>
#include <optional>

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
    case Mode::collectives: return run_collectives(config, mesh);
    default:
      throw InputError(config.deck + ": mode '" + to_string(config.mode) +
                       "' is not available in this build yet");
  }
}

}  // namespace

int run(const RunOptions& options, MPI_Comm world) {
  int ranks = 1;
  MPI_Comm_size(world, &ranks);

  // Validation runs identically on every rank; the agreement makes sure that a rank-local
  // failure (a file one rank cannot read) still stops everybody, with one message.
  std::optional<Config> config;
  int code = exit_success;
  std::string message;
  try {
    config = load_config(options.deck, options.overrides, ranks);
  } catch (const Error& e) {
    code = e.exit_code();
    message = e.what();
  } catch (const std::exception& e) {
    code = exit_runtime;
    message = e.what();
  }
  code = agree_on_exit(world, code, message);
  if (code != exit_success) return code;

  try {
    const Mesh mesh(world, config->mesh.axes);
    code = run_mode(*config, mesh);
  } catch (const Error& e) {
    code = e.exit_code();
    message = e.what();
  } catch (const std::exception& e) {
    code = exit_runtime;
    message = e.what();
  }
  // Past this point ranks may sit in different collectives, so an agreement could hang:
  // a rank that fails takes the job down.
  if (code != exit_success) {
    std::cerr << "kpmap: error: " << message << std::endl;
    MPI_Abort(world, code);
  }
  return code;
}

}  // namespace kpmap
