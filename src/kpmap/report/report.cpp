#include "kpmap/report/report.hpp"

#include <cstdio>
#include <fstream>
#include <iostream>

#include "kpmap/core/error.hpp"
#include "kpmap/report/version.hpp"

namespace kpmap {

Json to_json(const Stat& s) { return Json{{"min", s.min}, {"avg", s.avg}, {"max", s.max}}; }

Json versions_json() {
  return Json{{"kpmap", version()},
              {"kokkos", kokkos_version()},
              {"kokkos_backends", kokkos_backends()},
              {"execution_space", execution_space_name()},
              {"kokkos_kernels", kokkos_kernels_version()},
              {"mpi", mpi_library_version()},
              {"host_isa", host_isa_name()}};
}

Json report_header(const Json& resolved_config, const Mesh& mesh) {
  Json axes = Json::object();
  for (const auto& a : mesh.axes()) axes[a.name] = a.size;
  return Json{{"versions", versions_json()},
              {"config", resolved_config},
              {"mesh", {{"axes", axes}, {"ranks", mesh.size()}}}};
}

Json timing_json(MPI_Comm comm, const Timers& timers) {
  Json t = Json::object();
  for (Phase p : all_phases) t[to_string(p)] = to_json(stat_over_ranks(comm, timers.seconds(p)));
  return t;
}

void write_report(MPI_Comm comm, const std::string& path, const Json& report) {
  write_text(comm, path, report.dump(2) + '\n', "the report");
}

void write_text(MPI_Comm comm, const std::string& path, const std::string& text, const std::string& what) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int ok = 1;
  if (rank == 0 && !path.empty()) {
    std::ofstream out(path);
    out << text;
    ok = out.good() ? 1 : 0;
  }
  check_mpi(MPI_Bcast(&ok, 1, MPI_INT, 0, comm), "MPI_Bcast");
  if (!ok) throw RuntimeError(path + ": cannot write " + what);
}

Progress::Progress(long long total_steps, long long every, long long samples_per_step, bool enabled,
                   long long first_step)
    : total_(total_steps), every_(every), samples_per_step_(samples_per_step), first_(first_step), enabled_(enabled),
      start_(MPI_Wtime()) {}

void Progress::update(long long step, double loss) {
  if (!enabled_ || (step % every_ != 0 && step != total_)) return;
  const double elapsed = MPI_Wtime() - start_;
  const long long done = step - first_;
  const double rate = elapsed > 0 ? static_cast<double>(done * samples_per_step_) / elapsed : 0.0;
  const double eta = done > 0 ? elapsed / static_cast<double>(done) * static_cast<double>(total_ - step) : 0.0;
  char line[160];
  std::snprintf(line, sizeof line, "step %lld/%lld  loss %.6e  %.4g samples/s  ETA %.1f s", step, total_,
                loss, rate, eta);
  std::cout << line << std::endl;
}

}  // namespace kpmap
