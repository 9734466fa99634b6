// kpmap fit-comm-model REPORT -o MODEL: the alpha-beta communication model of a bench report
// (bench/comm_model.hpp, docs/bench.md), written as a small JSON file for comm.model.
#pragma once

#include <mpi.h>

#include <string>

namespace kpmap {

// Every rank of `world` reads and fits the report (so a bad report exits 2 on every rank, with
// one message); rank 0 writes the model and prints its table. Returns the exit code.
int run_fit_comm_model(const std::string& report, const std::string& output, MPI_Comm world);

}  // namespace kpmap
