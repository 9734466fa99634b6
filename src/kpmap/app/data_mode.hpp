// Data files (docs/decks.md "problem.source"): the deck's problem shaped by its file, this rank's
// part of the file for the trainer, and the subcommands that write data files:
//   kpmap convert-csv IN.csv -o OUT.h5 [--y-column N]   CSV -> the HDF5 layout problem.source reads
//   kpmap write-synthetic DECK -o OUT.h5 [--set K=V]    the deck's synthetic problem as such a file
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kpmap/config/config.hpp"
#include "kpmap/data/source.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

// With a file source: reads the file's shape (every rank, before the mesh; not collective) and
// sets problem.samples and features from it, in the config and its resolved echo. A deck that
// gives them must give the file's; train.batch and the model axis are checked against them.
// Throws InputError. Does nothing for synthetic data.
void resolve_data_source(Config& config);

// This rank's rows and columns of the file and its true weights, for the mesh of the run
// (TrainSpec::data: the trainer frees the rows once its shard is built from them). Not
// collective; throws InputError naming the place of a bad value.
std::shared_ptr<FileData> read_file_data(const Config& config, const Mesh& mesh);

// Every rank reads and checks the input (a bad one exits 2 on every rank with one message); rank 0
// writes OUT.h5 and prints what it wrote. Return the exit code.
int run_convert_csv(const std::string& input, const std::string& output, int y_column, MPI_Comm world);
int run_write_synthetic(const std::string& deck, const std::vector<std::string>& overrides,
                        const std::string& output, MPI_Comm world);

}  // namespace kpmap
