// A thin layer over HDF5's C API for kpmap's files (checkpoints, data files): owned handles,
// whole and hyperslab reads of 1-D and 2-D numeric datasets, scalar and string attributes, and
// HDF5's error stack turned into one exception message (its automatic printing is off).
//
// Every function is local to the calling rank (no MPI-IO): a checkpoint is written by one rank,
// and each rank reads its own hyperslab of a data file independently.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace kpmap::h5 {

// An owned HDF5 identifier, closed with the close function of its kind (H5Fclose, H5Dclose, ...).
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer close) : id_(id), close_(close) {}
  Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = H5I_INVALID_HID; }
  Handle& operator=(Handle&& other) noexcept;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  hid_t get() const { return id_; }
  // Closes now; throws IoError when HDF5 reports a failure (a file's last write happens here).
  void close();

 private:
  void reset() noexcept;
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

// The element types kpmap stores.
enum class Type { f64, f32, i64 };

// Thrown for any HDF5 failure: `what` (the caller's context) followed by HDF5's own innermost
// description. Derived from std::runtime_error only: the caller decides whether it is bad input.
class IoError : public std::runtime_error {
 public:
  explicit IoError(const std::string& message) : std::runtime_error(message) {}
};

// Creates (truncating) a file in the latest file format, whose metadata carries checksums.
Handle create_file(const std::string& path);
// Opens an existing file read-only; throws IoError naming the path when it is not HDF5.
Handle open_file(const std::string& path);
bool is_hdf5(const std::string& path);  // false for a missing or non-HDF5 file

Handle create_group(hid_t parent, const std::string& name);
bool exists(hid_t parent, const std::string& name);  // a link `name` directly below parent

// A 1-D dataset of `values` stored as `type` (a conversion HDF5 makes exactly for f32 values
// held in doubles and for integers below 2^53).
void write(hid_t parent, const std::string& name, const std::vector<double>& values, Type type);
void write(hid_t parent, const std::string& name, const std::vector<long long>& values);
// A 2-D dataset of rows x cols from `values` in row-major order, stored as `type`.
void write_matrix(hid_t parent, const std::string& name, const std::vector<double>& values, long long rows,
                  long long cols, Type type);

struct DatasetInfo {
  std::vector<long long> dims;  // extents, slowest first
  H5T_class_t type_class = H5T_NO_CLASS;  // H5T_FLOAT, H5T_INTEGER, ...
  std::size_t type_size = 0;              // bytes per element
};
DatasetInfo info(hid_t parent, const std::string& name);

// The whole dataset, converted to double / long long by HDF5.
std::vector<double> read_doubles(hid_t parent, const std::string& name);
std::vector<long long> read_integers(hid_t parent, const std::string& name);
// `blocks` blocks of `rows` rows each, block k starting at row row0 + k * stride, of columns
// [col0, col0 + cols) of a 2-D dataset (of a 1-D one: cols 1, col0 0), in one strided hyperslab
// and one read, row-major, block after block, converted to double. Nothing is read when the
// selection is empty.
std::vector<double> read_strided_rows(hid_t parent, const std::string& name, long long row0, long long stride,
                                      long long blocks, long long rows, long long col0, long long cols);

void set_attribute(hid_t object, const std::string& name, const std::string& value);
void set_attribute(hid_t object, const std::string& name, double value);
void set_attribute(hid_t object, const std::string& name, long long value);
bool has_attribute(hid_t object, const std::string& name);
std::string string_attribute(hid_t object, const std::string& name);
double double_attribute(hid_t object, const std::string& name);
long long integer_attribute(hid_t object, const std::string& name);

}  // namespace kpmap::h5
