#include "kpmap/data/source.hpp"

#include <cmath>
#include <filesystem>
#include <functional>

#include "kpmap/core/error.hpp"
#include "kpmap/data/csv.hpp"
#include "kpmap/io/h5.hpp"

namespace kpmap {

namespace {

const std::string where = "problem.source: ";

std::string dims_text(const std::vector<long long>& dims) {
  if (dims.empty()) return "a scalar";
  std::string s;
  for (const long long d : dims) s += (s.empty() ? "[" : " x ") + std::to_string(d);
  return s + "]";
}

std::string class_text(H5T_class_t c) {
  switch (c) {
    case H5T_INTEGER:
      return "integer";
    case H5T_FLOAT:
      return "float";
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND:
      return "compound";
    case H5T_ENUM:
      return "enum";
    case H5T_ARRAY:
      return "array";
    default:
      return "non-numeric";
  }
}

class H5File {
 public:
  explicit H5File(const std::string& path) : path_(path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) fail("no such file");
    if (!std::filesystem::is_regular_file(path, ec)) fail("not a regular file");
    if (!h5::is_hdf5(path))
      fail("not an HDF5 file (expected datasets X [samples x features] and y [samples])");
    try {
      file_ = h5::open_file(path);
    } catch (const h5::IoError& e) {
      fail(e.what());
    }
  }

  [[noreturn]] void fail(const std::string& what) const { throw InputError(where + path_ + ": " + what); }

  // A numeric dataset's extents; `expected` describes it for the messages.
  std::vector<long long> dims(const std::string& name, const std::string& expected) const {
    if (!h5::exists(file_.get(), name)) fail("no dataset " + name + " (expected " + expected + ")");
    h5::DatasetInfo info;
    try {
      info = h5::info(file_.get(), name);
    } catch (const h5::IoError& e) {
      fail("dataset " + name + ": " + e.what());
    }
    if (info.type_class != H5T_FLOAT && info.type_class != H5T_INTEGER) {
      fail("dataset " + name + " has " + class_text(info.type_class) + " elements (expected " + expected +
           " of a float or integer type)");
    }
    return info.dims;
  }

  bool has(const std::string& name) const { return h5::exists(file_.get(), name); }
  hid_t get() const { return file_.get(); }

 private:
  std::string path_;
  h5::Handle file_;
};

const std::string x_expected = "X [samples x features], 2-D";
const std::string y_expected = "y [samples], 1-D";

DataFileShape inspect_hdf5(const std::string& path) {
  const H5File f(path);
  const auto x = f.dims("X", x_expected);
  if (x.size() != 2) f.fail("dataset X is " + dims_text(x) + " (expected " + x_expected + ")");
  if (x[0] < 1 || x[1] < 1)
    f.fail("dataset X is " + dims_text(x) + " (expected at least 1 sample and 1 feature)");
  const auto y = f.dims("y", y_expected);
  if (y.size() != 1 || y[0] != x[0]) {
    f.fail("dataset y is " + dims_text(y) + " (expected [" + std::to_string(x[0]) +
           "], one value per row of X " + dims_text(x) + ")");
  }
  DataFileShape shape{x[0], x[1], f.has("w")};
  if (shape.has_weights) {
    const auto w = f.dims("w", "w [features], 1-D");
    if (w.size() != 1 || w[0] != x[1]) {
      f.fail("dataset w is " + dims_text(w) + " (expected [" + std::to_string(x[1]) +
             "], the true weight of each column of X " + dims_text(x) + ")");
    }
    if (f.has("b")) {
      const auto b = f.dims("b", "b, one value");
      if (!(b.empty() || (b.size() == 1 && b[0] == 1))) {
        f.fail("dataset b is " + dims_text(b) + " (expected one value: a scalar or [1])");
      }
    }
  }
  return shape;
}

// The first value that is not finite among `values` (block rows of `cols` columns), by its place
// in the file: global row and column.
void check_finite(const std::vector<double>& values, long long cols, const BatchPlan& plan, long long col0,
                  const std::function<void(long long, long long, double)>& fail) {
  const long long n = plan.slice.size();
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) continue;
    const long long local = static_cast<long long>(i) / cols;
    fail(plan.global_row(local / n, local % n), col0 + static_cast<long long>(i) % cols, values[i]);
  }
}

DataBlock read_hdf5_block(const std::string& path, const BatchPlan& plan, Range cols) {
  const H5File f(path);
  const long long n = plan.slice.size();
  DataBlock block;
  block.rows = plan.batches * n;
  block.cols = cols.size();
  const auto x = f.dims("X", x_expected);
  if (x.size() != 2 || x[0] != plan.samples || cols.end > x[1]) {
    f.fail("dataset X is " + dims_text(x) + ", not the shape read before the run (has the file changed?)");
  }
  try {
    block.X = h5::read_strided_rows(f.get(), "X", plan.slice.begin, plan.batch, plan.batches, n, cols.begin,
                                    cols.size());
    block.y = h5::read_strided_rows(f.get(), "y", plan.slice.begin, plan.batch, plan.batches, n, 0, 1);
  } catch (const h5::IoError& e) {
    f.fail(e.what());
  }
  const auto not_finite = [&](const std::string& name) {
    return [&f, name](long long row, long long col, double v) {
      f.fail("dataset " + name +
             (name == "X" ? "[" + std::to_string(row) + ", " + std::to_string(col) + "]"
                          : "[" + std::to_string(row) + "]") +
             " (0-based) is " + (std::isnan(v) ? "NaN" : "Inf") + " (allowed: finite values)");
    };
  };
  check_finite(block.X, block.cols, plan, cols.begin, not_finite("X"));
  check_finite(block.y, 1, plan, 0, not_finite("y"));
  return block;
}

DataBlock read_csv_block(const std::string& path, const BatchPlan& plan, Range cols) {
  const CsvTable table = read_csv(path);
  if (table.rows != plan.samples || cols.end > table.cols - 1) {
    throw InputError(where + path + ": " + std::to_string(table.rows) + " rows of " +
                     std::to_string(table.cols) +
                     " columns, not the shape read before the run (has the file changed?)");
  }
  const long long n = plan.slice.size();
  DataBlock block;
  block.rows = plan.batches * n;
  block.cols = cols.size();
  block.X.reserve(static_cast<std::size_t>(block.rows * block.cols));
  block.y.reserve(static_cast<std::size_t>(block.rows));
  for (long long k = 0; k < plan.batches; ++k) {
    for (long long i = 0; i < n; ++i) {
      const long long r = plan.global_row(k, i);
      for (long long j = cols.begin; j < cols.end; ++j) block.X.push_back(table.at(r, j));
      block.y.push_back(table.at(r, table.cols - 1));
    }
  }
  return block;
}

}  // namespace

DataSource data_source(const std::string& source, const std::string& path) {
  DataSource s;
  s.text = source;
  s.path = path;
  if (source.rfind("hdf5:", 0) == 0) s.kind = SourceKind::hdf5;
  if (source.rfind("csv:", 0) == 0) s.kind = SourceKind::csv;
  return s;
}

DataFileShape inspect_data_file(const DataSource& source) {
  if (source.kind == SourceKind::hdf5) return inspect_hdf5(source.path);
  if (source.kind != SourceKind::csv) throw RuntimeError("inspect_data_file: problem.source is synthetic");
  try {
    const CsvTable table = read_csv(source.path);
    return {table.rows, table.cols - 1, false};
  } catch (const InputError& e) {
    throw InputError(where + e.what());
  }
}

DataBlock read_data_block(const DataSource& source, const BatchPlan& plan, Range cols) {
  if (source.kind == SourceKind::hdf5) return read_hdf5_block(source.path, plan, cols);
  if (source.kind != SourceKind::csv) throw RuntimeError("read_data_block: problem.source is synthetic");
  try {
    return read_csv_block(source.path, plan, cols);
  } catch (const InputError& e) {
    const std::string what = e.what();
    throw InputError(what.rfind(where, 0) == 0 ? what : where + what);
  }
}

std::optional<TrueParameters> read_true_parameters(const DataSource& source, long long features) {
  if (source.kind != SourceKind::hdf5) return std::nullopt;
  const H5File f(source.path);
  if (!f.has("w")) return std::nullopt;
  TrueParameters t;
  try {
    t.w = h5::read_doubles(f.get(), "w");
    if (f.has("b")) t.b = h5::read_doubles(f.get(), "b").at(0);
  } catch (const h5::IoError& e) {
    f.fail(e.what());
  }
  if (static_cast<long long>(t.w.size()) != features) {
    f.fail("dataset w has " + std::to_string(t.w.size()) + " values (expected " + std::to_string(features) +
           ")");
  }
  for (std::size_t j = 0; j < t.w.size(); ++j) {
    if (!std::isfinite(t.w[j]))
      f.fail("dataset w[" + std::to_string(j) + "] is not finite (allowed: finite values)");
  }
  if (!std::isfinite(t.b)) f.fail("dataset b is not finite (allowed: a finite value)");
  return t;
}

}  // namespace kpmap
