#include "kpmap/app/fit_mode.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include "kpmap/bench/comm_model.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/report/report.hpp"

namespace kpmap {

namespace {

CommModel fit_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the bench report (no such file, or not readable)");
  Json report;
  try {
    report = Json::parse(in);
  } catch (const Json::exception& e) {
    throw InputError(path + ": malformed JSON: " + e.what());
  }
  return fit_comm_model(report, path);
}

void print_table(const CommModel& model, const std::string& output) {
  std::cout << "# kpmap fit-comm-model: " << model.source << " -> " << output
            << "\n# t(S) = alpha + beta S per call, S in bytes (the bench's size)\n"
            << "#  collective            axis   type  ranks   alpha (us)  1/beta (GB/s)          sizes (B)  "
               "max rel error\n";
  for (const auto& e : model.entries) {
    char line[256];
    std::snprintf(line, sizeof line, "%12s  %14s  %5s  %5d  %11.3f  %13.3f  %8lld-%-9lld  %13.3f",
                  e.collective.c_str(), e.axis.c_str(), to_string(e.dtype).c_str(), e.ranks, e.alpha_s * 1e6,
                  e.beta_s_per_byte > 0 ? 1e-9 / e.beta_s_per_byte : 0.0, static_cast<long long>(e.min_bytes),
                  static_cast<long long>(e.max_bytes), e.max_rel_error);
    std::cout << line << '\n';
  }
  std::cout << "model " << output << std::endl;
}

}  // namespace

int run_fit_comm_model(const std::string& report, const std::string& output, MPI_Comm world) {
  std::optional<CommModel> model;
  int code = exit_success;
  std::string message;
  try {
    model = fit_file(report);
  } catch (const Error& e) {
    code = e.exit_code();
    message = e.what();
  }
  code = agree_on_exit(world, code, message);
  if (code != exit_success) return code;
  try {
    write_text(world, output, to_json(*model).dump(2) + '\n', "the model");
  } catch (const Error& e) {
    code = e.exit_code();
    message = e.what();
  }
  code = agree_on_exit(world, code, message);
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  if (code == exit_success && rank == 0) print_table(*model, output);
  return code;
}

}  // namespace kpmap
