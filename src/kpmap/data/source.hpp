// Data from files (problem.source hdf5:PATH or csv:PATH, docs/decks.md): the file's shape, checked
// before any rank builds its mesh, then this rank's rows and columns of X and y, in the shard's
// order (data/shard.hpp), and the optional true weights. Every failure is an InputError (exit 2)
// naming the file and the place: the dataset and what was expected, or the CSV line and column.
//
// HDF5: a 2-D dataset X [samples x features] and a 1-D dataset y [samples], of any float or
// integer type (read as double); optional w [features] and b (a scalar or one value), the true
// weights and bias that weights_rel_error compares with. Each rank reads only its hyperslab.
// CSV (data/csv.hpp): the features, then y in the last column; every rank parses the whole file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kpmap/data/synthetic.hpp"

namespace kpmap {

enum class SourceKind { synthetic, hdf5, csv };

struct DataSource {
  SourceKind kind = SourceKind::synthetic;
  std::string path;  // the file (hdf5 and csv)
  std::string text;  // as the deck gives it: "hdf5:PATH" (messages start with it)
};

// From problem.source and the resolved file path (ProblemConfig::source, data_path).
DataSource data_source(const std::string& source, const std::string& path);

struct DataFileShape {
  long long samples = 0;
  long long features = 0;
  bool has_weights = false;  // the file holds w (and maybe b)
};

// Opens the file and checks its datasets' shapes and types (CSV: every cell). Not collective.
DataFileShape inspect_data_file(const DataSource& source);

// This rank's shard of the file: for every batch k of the plan, the rows [k*B + lo, k*B + hi)
// (plan.slice), of the columns `cols`, block after block, row-major in double. Throws InputError
// for a shape other than inspect_data_file saw and for a value that is not finite (the place).
struct DataBlock {
  long long rows = 0;  // plan.batches * plan.slice.size()
  long long cols = 0;  // cols.size()
  std::vector<double> X, y;
};
DataBlock read_data_block(const DataSource& source, const BatchPlan& plan, Range cols);

// w over all `features` and b (0 when the file has w but no b); nullopt when it has no w.
struct TrueParameters {
  std::vector<double> w;
  double b = 0;
};
std::optional<TrueParameters> read_true_parameters(const DataSource& source, long long features);

// What a run reads from its file on this rank (TrainSpec::data).
struct FileData {
  DataBlock block;
  std::optional<TrueParameters> truth;
};

}  // namespace kpmap
