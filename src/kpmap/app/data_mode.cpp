#include "kpmap/app/data_mode.hpp"

#include <iostream>
#include <optional>

#include "kpmap/app/run.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/data/csv.hpp"
#include "kpmap/data/shard.hpp"
#include "kpmap/io/h5.hpp"

namespace kpmap {

namespace {

DataSource source_of(const Config& config) {
  return data_source(config.problem.source, config.problem.data_path);
}

// `key` from the deck (0: not given) against the file's `value`.
void agree_with_file(const std::string& key, long long& deck, long long file, const std::string& what,
                     const DataSource& source) {
  if (deck != 0 && deck != file) {
    throw InputError("problem." + key + ": " + std::to_string(deck) + " in the deck, but problem.source '" +
                     source.text + "' has " + std::to_string(file) + " " + what +
                     " (allowed: " + std::to_string(file) + ", or leave problem." + key + " out)");
  }
  deck = file;
}

int axis_index(const Mesh& mesh, const std::string& axis) {
  return mesh.has_axis(axis) ? mesh.axis_index(axis) : 0;
}
int axis_size(const Mesh& mesh, const std::string& axis) {
  return mesh.has_axis(axis) ? mesh.axis_size(axis) : 1;
}

// Rank 0 writes the file; the others learn whether it could.
template <class Write>
int write_on_rank0(MPI_Comm world, const std::string& output, Write&& write) {
  int rank = 0, code = exit_success;
  MPI_Comm_rank(world, &rank);
  std::string message;
  if (rank == 0) {
    try {
      write();
    } catch (const h5::IoError& e) {
      code = exit_bad_input;
      message = output + ": cannot write the HDF5 file: " + e.what();
    } catch (const Error& e) {
      code = e.exit_code();
      message = e.what();
    }
  }
  return agree_on_exit(world, code, message);
}

template <class T>
void synthetic_values(const SyntheticProblem& p, std::vector<double>& X, std::vector<double>& y) {
  X.resize(static_cast<std::size_t>(p.samples * p.features));
  y.resize(static_cast<std::size_t>(p.samples));
  for (long long r = 0; r < p.samples; ++r) {
    for (long long j = 0; j < p.features; ++j) {
      X[static_cast<std::size_t>(r * p.features + j)] =
          static_cast<double>(static_cast<T>(synthetic::x_entry(p.seed, r, j)));
    }
    y[static_cast<std::size_t>(r)] = detail::synthetic_y<T>(p, r);
  }
}

}  // namespace

void resolve_data_source(Config& config) {
  ProblemConfig& p = config.problem;
  if (p.source == "synthetic") return;
  const DataSource source = source_of(config);
  const DataFileShape shape = inspect_data_file(source);
  agree_with_file("samples", p.samples, shape.samples, "samples (rows)", source);
  agree_with_file("features", p.features, shape.features, "features (columns of X)", source);
  if (config.mode == Mode::train && config.train.batch > p.samples) {
    throw InputError("train.batch: " + std::to_string(config.train.batch) + " exceeds the " +
                     std::to_string(p.samples) + " samples of problem.source '" + source.text +
                     "' (allowed: 1 to " + std::to_string(p.samples) + ")");
  }
  for (const auto& a : config.mesh.axes) {
    if (config.mode != Mode::train || a.name != "model" || a.size <= p.features) continue;
    throw InputError("mesh.axes.model: size " + std::to_string(a.size) + " exceeds the " +
                     std::to_string(p.features) + " features of problem.source '" + source.text +
                     "' (each model rank holds at least one feature; allowed: 1 to " +
                     std::to_string(p.features) + ")");
  }
  if (config.resolved.contains("problem")) {
    config.resolved["problem"]["samples"] = p.samples;
    config.resolved["problem"]["features"] = p.features;
  }
}

std::shared_ptr<FileData> read_file_data(const Config& config, const Mesh& mesh) {
  const ProblemConfig& p = config.problem;
  const DataSource source = source_of(config);
  const BatchPlan plan =
      make_batch_plan(p.samples, config.train.batch, axis_index(mesh, "data"), axis_size(mesh, "data"));
  const Range cols = column_range(p.features, axis_index(mesh, "model"), axis_size(mesh, "model"));
  auto data = std::make_shared<FileData>();
  data->block = read_data_block(source, plan, cols);
  data->truth = read_true_parameters(source, p.features);
  return data;
}

int run_convert_csv(const std::string& input, const std::string& output, int y_column, MPI_Comm world) {
  std::optional<CsvTable> table;
  int code = exit_success;
  std::string message;
  try {
    table = read_csv(input);
    if (y_column == 0) y_column = static_cast<int>(table->cols);
    if (y_column < 1 || y_column > table->cols) {
      throw InputError("--y-column: " + std::to_string(y_column) + " is not a column of " + input +
                       " (allowed: 1 to " + std::to_string(table->cols) + ")");
    }
  } catch (const Error& e) {
    code = e.exit_code();
    message = e.what();
  }
  code = agree_on_exit(world, code, message);
  if (code != exit_success) return code;
  const CsvTable& t = *table;
  const long long features = t.cols - 1, yc = y_column - 1;
  code = write_on_rank0(world, output, [&] {
    std::vector<double> X, y;
    X.reserve(static_cast<std::size_t>(t.rows * features));
    for (long long r = 0; r < t.rows; ++r) {
      for (long long j = 0; j < t.cols; ++j) (j == yc ? y : X).push_back(t.at(r, j));
    }
    h5::Handle file = h5::create_file(output);
    h5::write_matrix(file.get(), "X", X, t.rows, features, h5::Type::f64);
    h5::write(file.get(), "y", y, h5::Type::f64);
    h5::set_attribute(file.get(), "source", input);
    if (!t.header.empty()) {
      std::string names;
      for (long long j = 0; j < t.cols; ++j) {
        if (j != yc) names += (names.empty() ? "" : ",") + t.header[static_cast<std::size_t>(j)];
      }
      h5::set_attribute(file.get(), "x_names", names);
      h5::set_attribute(file.get(), "y_name", t.header[static_cast<std::size_t>(yc)]);
    }
    file.close();
  });
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  if (code == exit_success && rank == 0) {
    std::cout << "kpmap convert-csv: " << input << " (" << t.rows << " rows, "
              << (t.header.empty() ? "no header" : "header") << ", y = column " << y_column << ") -> "
              << output << ": X [" << t.rows << " x " << features << "], y [" << t.rows << "]" << std::endl;
  }
  return code;
}

int run_write_synthetic(const std::string& deck, const std::vector<std::string>& overrides,
                        const std::string& output, MPI_Comm world) {
  const auto synthetic_only = [](const Config& c) {
    if (c.problem.source != "synthetic" || c.problem.samples == 0) {
      throw InputError("problem.source: '" + c.problem.source +
                       "': write-synthetic writes a synthetic problem (allowed: a deck with problem.source "
                       "synthetic)");
    }
  };
  std::optional<Config> config;
  int code = load_deck({deck, overrides}, world, synthetic_only, config);
  if (code != exit_success) return code;
  const ProblemConfig& c = config->problem;
  const SyntheticProblem p{c.samples,     c.features, c.bias, c.noise, static_cast<std::uint64_t>(c.seed),
                           c.weight_scale};
  const Dtype compute = config->precision.compute;
  code = write_on_rank0(world, output, [&] {
    std::vector<double> X, y;
    switch (compute) {
      case Dtype::fp64:
        synthetic_values<double>(p, X, y);
        break;
      case Dtype::fp32:
        synthetic_values<float>(p, X, y);
        break;
      case Dtype::bf16:
        synthetic_values<bf16>(p, X, y);
        break;
      case Dtype::fp16:
        synthetic_values<fp16>(p, X, y);
        break;
    }
    h5::Handle file = h5::create_file(output);
    h5::write_matrix(file.get(), "X", X, p.samples, p.features, h5::Type::f64);
    h5::write(file.get(), "y", y, h5::Type::f64);
    h5::write(file.get(), "w", true_weights(p, 0, p.features), h5::Type::f64);
    h5::write(file.get(), "b", std::vector<double>{true_bias(p)}, h5::Type::f64);
    h5::set_attribute(file.get(), "source", "kpmap write-synthetic " + deck);
    h5::set_attribute(file.get(), "rounded_to", to_string(compute));
    file.close();
  });
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  if (code == exit_success && rank == 0) {
    std::cout << "kpmap write-synthetic: " << deck << " -> " << output << ": X [" << p.samples << " x "
              << p.features << "] rounded to " << to_string(compute) << ", y [" << p.samples << "], w ["
              << p.features << "], b" << std::endl;
  }
  return code;
}

}  // namespace kpmap
