#include "kpmap/io/h5.hpp"

#include <cstring>
#include <type_traits>

namespace kpmap::h5 {

namespace {

// HDF5 prints its error stack to stderr by default; kpmap reports errors itself, once.
void quiet() {
  static const bool done = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)done;
}

// The innermost description on HDF5's error stack ("unable to open file: ... No such file").
std::string hdf5_reason() {
  std::string reason;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
        if (n == 0 && e->desc != nullptr) *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason.empty() ? "HDF5 error" : reason;
}

[[noreturn]] void fail(const std::string& what) { throw IoError(what + ": " + hdf5_reason()); }

hid_t checked(hid_t id, const std::string& what) {
  if (id < 0) fail(what);
  return id;
}

void checked(herr_t rc, const std::string& what) {
  if (rc < 0) fail(what);
}

hid_t file_type(Type type) {
  switch (type) {
    case Type::f64: return H5T_IEEE_F64LE;
    case Type::f32: return H5T_IEEE_F32LE;
    case Type::i64: return H5T_STD_I64LE;
  }
  return H5T_IEEE_F64LE;
}

Handle dataspace(const std::vector<hsize_t>& dims) {
  return {checked(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), "H5Screate_simple"),
          H5Sclose};
}

template <class T>
void write_1d(hid_t parent, const std::string& name, const T* data, std::size_t n, Type type) {
  quiet();
  const Handle space = dataspace({static_cast<hsize_t>(n)});
  const Handle set{checked(H5Dcreate2(parent, name.c_str(), file_type(type), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                      H5P_DEFAULT),
                           "create dataset " + name),
                   H5Dclose};
  const hid_t mem = std::is_same_v<T, double> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_LLONG;
  if (n > 0) checked(H5Dwrite(set.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), "write dataset " + name);
}

Handle open_dataset(hid_t parent, const std::string& name) {
  quiet();
  return {checked(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), "open dataset " + name), H5Dclose};
}

template <class T>
std::vector<T> read_all(hid_t parent, const std::string& name) {
  const Handle set = open_dataset(parent, name);
  const Handle space{checked(H5Dget_space(set.get()), "dataspace of " + name), H5Sclose};
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n < 0) fail("extent of " + name);
  std::vector<T> out(static_cast<std::size_t>(n));
  const hid_t mem = std::is_same_v<T, double> ? H5T_NATIVE_DOUBLE : H5T_NATIVE_LLONG;
  if (n > 0) checked(H5Dread(set.get(), mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()), "read dataset " + name);
  return out;
}

Handle open_attribute(hid_t object, const std::string& name) {
  quiet();
  return {checked(H5Aopen(object, name.c_str(), H5P_DEFAULT), "open attribute " + name), H5Aclose};
}

template <class T>
void scalar_attribute(hid_t object, const std::string& name, hid_t file, hid_t mem, const T& value) {
  quiet();
  const Handle space{checked(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose};
  const Handle attr{checked(H5Acreate2(object, name.c_str(), file, space.get(), H5P_DEFAULT, H5P_DEFAULT),
                            "create attribute " + name),
                    H5Aclose};
  checked(H5Awrite(attr.get(), mem, &value), "write attribute " + name);
}

template <class T>
T read_scalar_attribute(hid_t object, const std::string& name, hid_t mem) {
  const Handle attr = open_attribute(object, name);
  T value{};
  checked(H5Aread(attr.get(), mem, &value), "read attribute " + name);
  return value;
}

}  // namespace

Handle& Handle::operator=(Handle&& other) noexcept {
  if (this != &other) {
    reset();
    id_ = other.id_;
    close_ = other.close_;
    other.id_ = H5I_INVALID_HID;
  }
  return *this;
}

void Handle::reset() noexcept {
  if (id_ >= 0 && close_ != nullptr) close_(id_);
  id_ = H5I_INVALID_HID;
}

void Handle::close() {
  if (id_ < 0 || close_ == nullptr) return;
  const herr_t rc = close_(id_);
  id_ = H5I_INVALID_HID;
  checked(rc, "close");
}

Handle create_file(const std::string& path) {
  quiet();
  const Handle access{checked(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate"), H5Pclose};
  // The 1.10 format (superblock v3, v2 B-trees): every metadata block carries a checksum.
  checked(H5Pset_libver_bounds(access.get(), H5F_LIBVER_V110, H5F_LIBVER_V110), "H5Pset_libver_bounds");
  return {checked(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, access.get()), "create " + path), H5Fclose};
}

Handle open_file(const std::string& path) {
  quiet();
  return {checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "open " + path), H5Fclose};
}

bool is_hdf5(const std::string& path) {
  quiet();
  const htri_t rc = H5Fis_hdf5(path.c_str());
  H5Eclear2(H5E_DEFAULT);
  return rc > 0;
}

Handle create_group(hid_t parent, const std::string& name) {
  quiet();
  return {checked(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "create group " + name),
          H5Gclose};
}

bool exists(hid_t parent, const std::string& name) {
  quiet();
  const htri_t rc = H5Lexists(parent, name.c_str(), H5P_DEFAULT);
  H5Eclear2(H5E_DEFAULT);
  return rc > 0;
}

void write(hid_t parent, const std::string& name, const std::vector<double>& values, Type type) {
  write_1d(parent, name, values.data(), values.size(), type);
}

void write(hid_t parent, const std::string& name, const std::vector<long long>& values) {
  write_1d(parent, name, values.data(), values.size(), Type::i64);
}

void write_matrix(hid_t parent, const std::string& name, const std::vector<double>& values, long long rows,
                  long long cols, Type type) {
  if (rows < 0 || cols < 0 || values.size() != static_cast<std::size_t>(rows * cols)) {
    throw IoError("write " + name + ": " + std::to_string(values.size()) + " values for " + std::to_string(rows) +
                  " x " + std::to_string(cols));
  }
  quiet();
  const Handle space = dataspace({static_cast<hsize_t>(rows), static_cast<hsize_t>(cols)});
  const Handle set{checked(H5Dcreate2(parent, name.c_str(), file_type(type), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                                      H5P_DEFAULT),
                           "create dataset " + name),
                   H5Dclose};
  if (!values.empty()) {
    checked(H5Dwrite(set.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
            "write dataset " + name);
  }
}

DatasetInfo info(hid_t parent, const std::string& name) {
  const Handle set = open_dataset(parent, name);
  const Handle space{checked(H5Dget_space(set.get()), "dataspace of " + name), H5Sclose};
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank < 0) fail("rank of " + name);
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) checked(H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr), "extent of " + name);
  const Handle type{checked(H5Dget_type(set.get()), "type of " + name), H5Tclose};
  DatasetInfo out;
  out.dims.assign(dims.begin(), dims.end());
  out.type_class = H5Tget_class(type.get());
  out.type_size = H5Tget_size(type.get());
  return out;
}

std::vector<double> read_doubles(hid_t parent, const std::string& name) { return read_all<double>(parent, name); }

std::vector<long long> read_integers(hid_t parent, const std::string& name) {
  return read_all<long long>(parent, name);
}

std::vector<double> read_strided_rows(hid_t parent, const std::string& name, long long row0, long long stride,
                                      long long blocks, long long rows, long long col0, long long cols) {
  const Handle set = open_dataset(parent, name);
  const Handle space{checked(H5Dget_space(set.get()), "dataspace of " + name), H5Sclose};
  const int rank = H5Sget_simple_extent_ndims(space.get());
  if (rank != 1 && rank != 2) throw IoError("read " + name + ": a block of a dataset of rank " + std::to_string(rank));
  std::vector<hsize_t> start{static_cast<hsize_t>(row0)}, step{static_cast<hsize_t>(stride > 0 ? stride : 1)},
      count{static_cast<hsize_t>(blocks)}, block{static_cast<hsize_t>(rows)};
  if (rank == 2) {
    start.push_back(static_cast<hsize_t>(col0));
    step.push_back(1);
    count.push_back(1);
    block.push_back(static_cast<hsize_t>(cols));
  }
  std::vector<double> out(static_cast<std::size_t>(blocks * rows * cols));
  if (out.empty()) return out;
  checked(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, start.data(), step.data(), count.data(), block.data()),
          "select rows of " + name);
  const Handle mem = dataspace({static_cast<hsize_t>(out.size())});
  checked(H5Dread(set.get(), H5T_NATIVE_DOUBLE, mem.get(), space.get(), H5P_DEFAULT, out.data()), "read " + name);
  return out;
}

void set_attribute(hid_t object, const std::string& name, const std::string& value) {
  quiet();
  const Handle type{checked(H5Tcopy(H5T_C_S1), "H5Tcopy"), H5Tclose};
  checked(H5Tset_size(type.get(), value.empty() ? 1 : value.size()), "H5Tset_size");
  checked(H5Tset_cset(type.get(), H5T_CSET_UTF8), "H5Tset_cset");
  const Handle space{checked(H5Screate(H5S_SCALAR), "H5Screate"), H5Sclose};
  const Handle attr{checked(H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                            "create attribute " + name),
                    H5Aclose};
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  checked(H5Awrite(attr.get(), type.get(), padded.data()), "write attribute " + name);
}

void set_attribute(hid_t object, const std::string& name, double value) {
  scalar_attribute(object, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, value);
}

void set_attribute(hid_t object, const std::string& name, long long value) {
  scalar_attribute(object, name, H5T_STD_I64LE, H5T_NATIVE_LLONG, value);
}

bool has_attribute(hid_t object, const std::string& name) {
  quiet();
  const htri_t rc = H5Aexists(object, name.c_str());
  H5Eclear2(H5E_DEFAULT);
  return rc > 0;
}

std::string string_attribute(hid_t object, const std::string& name) {
  const Handle attr = open_attribute(object, name);
  const Handle type{checked(H5Aget_type(attr.get()), "type of attribute " + name), H5Tclose};
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0) {
    throw IoError("attribute " + name + ": not a fixed-length string");
  }
  std::string value(H5Tget_size(type.get()), '\0');
  checked(H5Aread(attr.get(), type.get(), value.data()), "read attribute " + name);
  value.resize(std::strlen(value.c_str()));
  return value;
}

double double_attribute(hid_t object, const std::string& name) {
  return read_scalar_attribute<double>(object, name, H5T_NATIVE_DOUBLE);
}

long long integer_attribute(hid_t object, const std::string& name) {
  return read_scalar_attribute<long long>(object, name, H5T_NATIVE_LLONG);
}

}  // namespace kpmap::h5
