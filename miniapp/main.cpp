// The kpmap driver: MPI and Kokkos set-up, the command line, then kpmap::run.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "kpmap/app/data_mode.hpp"
#include "kpmap/app/fit_mode.hpp"
#include "kpmap/app/run.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/mesh/mpi_env.hpp"
#include "kpmap/report/version.hpp"

namespace {

// The subcommands: fit-comm-model REPORT -o MODEL, convert-csv IN.csv -o OUT.h5 [--y-column N],
// write-synthetic DECK -o OUT.h5 [--set K=V]. `command` names the one given (empty: a run).
struct FitOptions {
  std::string command, report, output, input, deck;
  std::vector<std::string> overrides;
  int y_column = 0;
};

// Parses the command line identically on every rank; only rank 0 prints. Returns -1 to go on.
int parse_command_line(int argc, char** argv, int rank, kpmap::RunOptions& options, FitOptions& fit_options) {
  CLI::App app{"kpmap: JAX-style named-axis collectives on Kokkos Views over MPI, and a\n"
               "data- and model-parallel linear-regression trainer driven by YAML decks.",
               "kpmap"};
  app.footer("Exit codes: 0 success, 1 runtime failure, 2 bad input.\n"
             "Deck reference: docs/decks.md");
  bool show_version = false;
  std::string output;
  app.add_flag("--version", show_version, "Print kpmap, Kokkos (and its backends), Kokkos Kernels "
                                          "and MPI versions");
  app.add_option("deck", options.deck, "YAML input deck (see inputs/)");
  app.add_option("--set", options.overrides, "Override a deck key: --set key.path=value (repeatable)")
      ->type_name("KEY=VALUE");
  const CLI::Option* output_option =
      app.add_option("--output", output, "Where to write the JSON report (overrides output.report; \"\": none)")
          ->type_name("FILE");
  std::string resume;
  app.add_option("--resume", resume, "Continue from a checkpoint file, or the newest in a directory "
                                     "(overrides checkpoint.resume; docs/reliability.md)")
      ->type_name("PATH");
  app.add_flag("--kokkos-help", "Print Kokkos' own options (--kokkos-threads, device selection, tools) and exit");
  CLI::App* fit = app.add_subcommand("fit-comm-model",
                                     "Fit the alpha-beta communication model (per collective, axis and type) of a "
                                     "mode bench report and write it for comm.model (docs/bench.md)");
  fit->add_option("report", fit_options.report, "The JSON report of a mode bench run")->required();
  fit->add_option("-o,--output", fit_options.output, "Where to write the model (JSON)")->required()->type_name("FILE");
  CLI::App* convert = app.add_subcommand(
      "convert-csv", "Convert a CSV table of numbers (an optional header line of names; y in the last column) to "
                     "the HDF5 file problem.source hdf5:PATH reads: datasets X and y (docs/decks.md)");
  convert->add_option("input", fit_options.input, "The CSV file")->required();
  convert->add_option("-o,--output", fit_options.output, "Where to write the HDF5 file")->required()->type_name("FILE");
  convert->add_option("--y-column", fit_options.y_column, "The column that holds y, from 1 (default: the last)")
      ->type_name("N");
  CLI::App* synth = app.add_subcommand(
      "write-synthetic", "Write a deck's synthetic problem (X rounded to precision.compute, y, the true w and b) "
                         "as an HDF5 file for problem.source hdf5:PATH (docs/decks.md)");
  synth->add_option("deck", fit_options.deck, "YAML input deck with a synthetic problem")->required();
  synth->add_option("--set", fit_options.overrides, "Override a deck key: --set key.path=value (repeatable)")
      ->type_name("KEY=VALUE");
  synth->add_option("-o,--output", fit_options.output, "Where to write the HDF5 file")->required()->type_name("FILE");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (rank == 0) {
      std::ostringstream out, err;
      const int code = app.exit(e, out, err);
      std::cout << out.str();
      std::cerr << err.str();
      return code == 0 ? kpmap::exit_success : kpmap::exit_bad_input;
    }
    return e.get_exit_code() == 0 ? kpmap::exit_success : kpmap::exit_bad_input;
  }
  if (show_version) {
    if (rank == 0) std::cout << kpmap::version_report() << std::flush;
    return kpmap::exit_success;
  }
  for (const CLI::App* sub : {fit, convert, synth}) {
    if (sub->parsed()) {
      fit_options.command = sub->get_name();
      return -1;
    }
  }
  if (options.deck.empty()) {
    if (rank == 0) std::cerr << "kpmap: error: no deck given\n" << app.help() << std::flush;
    return kpmap::exit_bad_input;
  }
  // --output "" writes no report, as output.report: "" does (a bare `output.report=` is YAML's null).
  if (output_option->count() > 0) options.overrides.push_back("output.report=" + (output.empty() ? "\"\"" : output));
  if (!resume.empty()) options.overrides.push_back("checkpoint.resume=" + resume);
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  // Kokkos' OpenMP backend warns at start-up when OMP_PROC_BIND is unset. With neither it nor
  // OMP_PLACES set, the OpenMP runtime binds no thread, which OMP_PROC_BIND=false states: saying
  // so changes nothing but the warning (docs/portability.md). A user's setting is kept.
  if (std::getenv("OMP_PROC_BIND") == nullptr && std::getenv("OMP_PLACES") == nullptr) {
    setenv("OMP_PROC_BIND", "false", 0);
  }
  kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread(FUNNELED), checked
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // --help is kpmap's: Kokkos (3.4 and 4.x alike) would print its own help for it, so Kokkos
  // never sees it. --kokkos-help goes to Kokkos on rank 0 only, which prints Kokkos' help once.
  // Kokkos removes the arguments it consumes (--kokkos-*) from its copy; CLI11 parses the rest,
  // with --help put back.
  bool help = false, kokkos_help = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i > 0 && (arg == "--help" || arg == "-h")) {
      help = true;
      continue;
    }
    if (arg == "--kokkos-help") {
      kokkos_help = true;
      if (rank != 0) continue;
    }
    args.push_back(argv[i]);
  }
  int kokkos_argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  int code = kpmap::exit_success;
  {
    Kokkos::ScopeGuard kokkos(kokkos_argc, args.data());
    if (kokkos_help) return kpmap::exit_success;
    std::vector<char*> cli(args.begin(), args.begin() + kokkos_argc);
    static char help_flag[] = "--help";
    if (help) cli.push_back(help_flag);
    kpmap::RunOptions options;
    FitOptions fit;
    code = parse_command_line(static_cast<int>(cli.size()), cli.data(), rank, options, fit);
    if (code < 0 && fit.command == "fit-comm-model") {
      code = kpmap::run_fit_comm_model(fit.report, fit.output, MPI_COMM_WORLD);
    } else if (code < 0 && fit.command == "convert-csv") {
      code = kpmap::run_convert_csv(fit.input, fit.output, fit.y_column, MPI_COMM_WORLD);
    } else if (code < 0 && fit.command == "write-synthetic") {
      code = kpmap::run_write_synthetic(fit.deck, fit.overrides, fit.output, MPI_COMM_WORLD);
    } else if (code < 0) {
      code = kpmap::run(options, MPI_COMM_WORLD);
    }
  }
  return code;
}
