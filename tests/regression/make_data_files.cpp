// Writes the HDF5 files of the data-file tests (tests/regression/CMakeLists.txt, "Data files")
// with HDF5's C API alone, independently of kpmap's reader:
//   make_data_files DIR
// good.h5       X [12 x 3] = r + c/8, y [12] = r/4, w [3] = 1/2, b = 1/4 (exact in binary)
// not_hdf5.h5   a text file
// no_y.h5       X only
// x_1d.h5       X [12], y [12]
// y_short.h5    X [12 x 3], y [10]
// x_string.h5   X [12 x 3] of fixed-length strings, y [12]
// x_nan.h5      good.h5 with X[11][1] = NaN: at train.batch 4 on 4 data ranks, row 11 is read by rank 3 alone
// w_short.h5    good.h5 with w [2]
#include <hdf5.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "make_data_files: %s failed\n", what.c_str());
    std::exit(1);
  }
}

void dataset(hid_t file, const char* name, std::vector<hsize_t> dims, const std::vector<double>& values) {
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t set = H5Dcreate2(file, name, H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  check(set >= 0 && H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0,
        name);
  H5Dclose(set);
  H5Sclose(space);
}

struct Data {
  std::vector<double> X, y, w{0.5, 0.5, 0.5}, b{0.25};
  Data() {
    for (int r = 0; r < 12; ++r) {
      for (int c = 0; c < 3; ++c) X.push_back(r + c / 8.0);
      y.push_back(r / 4.0);
    }
  }
};

// Writes the datasets named in `which` ("Xywb" letters; "x" writes X 1-D).
void file(const std::string& path, const Data& d, const std::string& which) {
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  check(f >= 0, path);
  if (which.find('X') != std::string::npos) dataset(f, "X", {12, 3}, d.X);
  if (which.find('x') != std::string::npos) dataset(f, "X", {12}, d.y);
  if (which.find('y') != std::string::npos) dataset(f, "y", {d.y.size()}, d.y);
  if (which.find('w') != std::string::npos) dataset(f, "w", {d.w.size()}, d.w);
  if (which.find('b') != std::string::npos) dataset(f, "b", {}, d.b);
  if (which.find('s') != std::string::npos) {  // X of strings
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, 4);
    std::vector<char> text(12 * 3 * 4, 'a');
    const hsize_t dims[2] = {12, 3};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t set = H5Dcreate2(f, "X", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    check(set >= 0 && H5Dwrite(set, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data()) >= 0, "string X");
    H5Dclose(set);
    H5Sclose(space);
    H5Tclose(type);
  }
  check(H5Fclose(f) >= 0, path);
}

}  // namespace

int main(int argc, char** argv) {
  check(argc == 2, "usage: make_data_files DIR");
  const std::string dir = argv[1];
  const Data good;
  file(dir + "/good.h5", good, "Xywb");
  file(dir + "/no_y.h5", good, "X");
  file(dir + "/x_1d.h5", good, "xy");
  Data short_y;
  short_y.y.resize(10);
  file(dir + "/y_short.h5", short_y, "Xy");
  file(dir + "/x_string.h5", good, "sy");
  Data nan = good;
  nan.X[11 * 3 + 1] = std::nan("");
  file(dir + "/x_nan.h5", nan, "Xy");
  Data short_w = good;
  short_w.w.resize(2);
  file(dir + "/w_short.h5", short_w, "Xywb");
  FILE* text = std::fopen((dir + "/not_hdf5.h5").c_str(), "w");
  check(text != nullptr, "not_hdf5.h5");
  std::fputs("X,y\n1,2\n", text);
  std::fclose(text);
  return 0;
}
