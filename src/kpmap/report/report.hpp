// The JSON report (DESIGN.md §3) and the progress line. Rank 0 writes; numbers that differ
// between ranks are reported as min / avg / max over ranks.
#pragma once

#include <mpi.h>

#include <nlohmann/json.hpp>
#include <string>

#include "kpmap/mesh/mesh.hpp"
#include "kpmap/train/timers.hpp"

namespace kpmap {

using Json = nlohmann::ordered_json;

Json to_json(const Stat& s);

// {"kpmap": ..., "kokkos": ..., "kokkos_backends": [...], "execution_space": ..., ...}
Json versions_json();

// What every report starts with: "versions", "config" (the resolved deck) and "mesh"
// ({"axes": {name: size, ...}, "ranks": N}).
Json report_header(const Json& resolved_config, const Mesh& mesh);

// "timing": {total, compute, comm, optimizer}, each {min, avg, max} seconds over `comm`'s ranks.
// Collective.
Json timing_json(MPI_Comm comm, const Timers& timers);

// Writes `report` to `path` (pretty-printed) when this is rank 0 of `comm` and path is not
// empty; throws RuntimeError when the file cannot be written. The outcome is agreed over
// `comm` so that every rank returns or throws alike.
void write_report(MPI_Comm comm, const std::string& path, const Json& report);

// The same for any text (`what` names it in the error: "the report", "the CSV").
void write_text(MPI_Comm comm, const std::string& path, const std::string& text, const std::string& what);

// The progress line on rank 0: "step 10/200  loss 1.234567e-01  52.1k samples/s  ETA 3.2 s".
class Progress {
 public:
  // first_step: the steps done before this run (a resumed run's checkpoint), left out of the rate.
  Progress(long long total_steps, long long every, long long samples_per_step, bool enabled, long long first_step = 0);
  void update(long long step, double loss);  // step counts from 1

 private:
  long long total_, every_, samples_per_step_, first_;
  bool enabled_;
  double start_;
};

}  // namespace kpmap
