#include "kpmap/app/collectives_mode.hpp"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "kpmap/collectives/collectives.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/core/types.hpp"

namespace kpmap {

namespace {

std::string format(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// "[a, b]" for a device's values, a bare number for one value.
std::string format(const std::vector<double>& values) {
  if (values.size() == 1) return format(values[0]);
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + format(values[i]);
  return s + "]";
}

// Every device's values in device order, grouped in rows of `per_row` devices (a 2-D mesh
// prints as [[(0,0), (0,1)], [(1,0), (1,1)]], like a nested pmap).
std::string format(const std::vector<std::vector<double>>& devices, int per_row) {
  std::vector<std::string> items;
  for (const auto& d : devices) items.push_back(format(d));
  auto join = [](const std::vector<std::string>& parts, size_t begin, size_t end) {
    std::string s = "[";
    for (size_t i = begin; i < end; ++i) s += (i > begin ? ", " : "") + parts[i];
    return s + "]";
  };
  if (per_row >= static_cast<int>(items.size())) return join(items, 0, items.size());
  std::vector<std::string> rows;
  for (size_t r = 0; r < items.size(); r += per_row) rows.push_back(join(items, r, r + per_row));
  return join(rows, 0, rows.size());
}

// Prints one example per line on world rank 0 and counts the failures, agreed over the mesh.
class Checker {
 public:
  explicit Checker(MPI_Comm world) : world_(world) { check_mpi(MPI_Comm_rank(world, &rank_), "MPI_Comm_rank"); }

  void say(const std::string& text) const {
    if (rank_ == 0) std::cout << text << std::endl;
  }

  // Collective over `world`. `group` is the communicator whose devices the line shows (world
  // rank 0 is its first member); every rank checks its own values against its closed form.
  void line(const std::string& label, MPI_Comm group, int per_row, const std::vector<double>& got,
            const std::vector<double>& expected, const std::string& formula) {
    int ok = got == expected ? 1 : 0;
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world_), "MPI_Allreduce");
    const auto all_got = gather(group, got);
    const auto all_expected = gather(group, expected);
    ++lines_;
    if (!ok) ++failures_;
    say(label + " -> " + format(all_got, per_row) + "   expected " + format(all_expected, per_row) +
        " (" + formula + ")  " + (ok ? "✓" : "✗"));
  }

  void show(const std::string& label, MPI_Comm group, int per_row, const std::vector<double>& mine) {
    say(label + format(gather(group, mine), per_row));
  }

  int failures() const { return failures_; }
  int lines() const { return lines_; }

 private:
  static std::vector<std::vector<double>> gather(MPI_Comm group, const std::vector<double>& mine) {
    int n = 1, me = 0;
    check_mpi(MPI_Comm_size(group, &n), "MPI_Comm_size");
    check_mpi(MPI_Comm_rank(group, &me), "MPI_Comm_rank");
    const int len = static_cast<int>(mine.size());
    std::vector<double> flat(me == 0 ? static_cast<size_t>(n) * len : 0);
    check_mpi(MPI_Gather(mine.data(), len, MPI_DOUBLE, flat.data(), len, MPI_DOUBLE, 0, group),
              "MPI_Gather");
    std::vector<std::vector<double>> devices;
    for (int d = 0; me == 0 && d < n; ++d) devices.emplace_back(flat.begin() + d * len, flat.begin() + (d + 1) * len);
    return devices;
  }

  MPI_Comm world_;
  int rank_ = 0;
  int lines_ = 0;
  int failures_ = 0;
};

template <class V>
std::vector<double> values(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.size());
}

View1<double> filled(const std::vector<double>& data) {
  View1<double> v(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kpmap::collectives_x")),
                  data.size());
  auto h = Kokkos::create_mirror_view(v);
  for (size_t i = 0; i < data.size(); ++i) h(i) = data[i];
  Kokkos::deep_copy(v, h);
  return v;
}

// The one-axis examples: device i holds x = i + 1.
void one_axis(Checker& c, const Mesh& mesh, const std::string& axis) {
  const AxisNames axes(axis);
  const MPI_Comm group = mesh.comm(axes);
  const int n = mesh.axis_size(axes);
  const int i = mesh.axis_index(axes);
  const std::string on = "(x, '" + axis + "')";
  c.say("axis '" + axis + "' of mesh " + mesh.describe() + ": n = " + std::to_string(n) +
        " devices; device i holds x = i + 1");
  const auto x = filled({i + 1.0});
  c.show("x = ", group, n, values(x));
  c.line("psum" + on, group, n, values(psum(mesh, axes, x)), {n * (n + 1) / 2.0}, "n(n+1)/2 everywhere");
  c.line("pmean" + on, group, n, values(pmean(mesh, axes, x)), {(n + 1) / 2.0}, "(n+1)/2 everywhere");
  c.line("pmax" + on, group, n, values(pmax(mesh, axes, x)), {1.0 * n}, "n everywhere");
  c.line("pmin" + on, group, n, values(pmin(mesh, axes, x)), {1.0}, "1 everywhere");
  std::vector<double> one_to_n(n);
  for (int j = 0; j < n; ++j) one_to_n[j] = j + 1.0;
  c.line("all_gather" + on, group, n, values(all_gather(mesh, axes, x, 0, tiled)), one_to_n,
         "[1, ..., n] on every device");

  // all_to_all on an n x n block: device i holds row i, x_i[j] = n*i + j + 1; chunk j goes to
  // device j, so afterwards device i holds column i: y_i[j] = n*j + i + 1 (a transpose).
  std::vector<double> row(n), column(n);
  for (int j = 0; j < n; ++j) row[j] = n * i + j + 1.0, column[j] = n * j + i + 1.0;
  const auto block = filled(row);
  c.show("all_to_all on a " + std::to_string(n) + "x" + std::to_string(n) +
             " block, before: device i holds row i, x_i[j] = n*i + j + 1: ",
         group, n, values(block));
  c.line("all_to_all(x, '" + axis + "', split_axis=0, concat_axis=0)", group, n,
         values(all_to_all(mesh, axes, block, 0, 0, false)), column,
         "device i holds column i: n*j + i + 1");
}

// psum over each axis and over both of a data x model mesh: device (d, m) holds x = d*M + m + 1.
void two_axes(Checker& c, const Mesh& mesh) {
  const int ranks = mesh.size();
  if (ranks % 2 != 0) {
    c.say("2-D mesh examples skipped: they need an even number of ranks (data = 2, model = ranks/2), "
          "this run has " + std::to_string(ranks));
    return;
  }
  const int m_size = ranks / 2;
  const Mesh grid(mesh.comm(), {{"data", 2}, {"model", m_size}});
  const int d = grid.axis_index("data"), m = grid.axis_index("model");
  const double mm = m_size;
  c.say("mesh " + grid.describe() + ": device (d, m) holds x = d*M + m + 1 (M = " +
        std::to_string(m_size) + ")");
  const auto x = filled({d * mm + m + 1.0});
  c.show("x = ", grid.comm(), m_size, values(x));
  c.line("psum(x, 'data')", grid.comm(), m_size, values(psum(grid, "data", x)), {2.0 * m + mm + 2.0},
         "x(0,m) + x(1,m) = 2m + M + 2");
  c.line("psum(x, 'model')", grid.comm(), m_size, values(psum(grid, "model", x)),
         {d * mm * mm + mm * (mm + 1) / 2}, "d*M^2 + M(M+1)/2");
  c.line("psum(x, ('data', 'model'))", grid.comm(), m_size, values(psum(grid, {"data", "model"}, x)),
         {ranks * (ranks + 1.0) / 2}, "N(N+1)/2 everywhere, N = 2M");
}

}  // namespace

int run_collectives(const Config& config, const Mesh& mesh) {
  // The deck loader has checked that collectives.axis names a mesh axis.
  Checker checker(mesh.comm());
  one_axis(checker, mesh, config.collectives.axis);
  two_axes(checker, mesh);
  if (checker.failures() > 0) {
    checker.say("kpmap: error: collectives: " + std::to_string(checker.failures()) + " of " +
                std::to_string(checker.lines()) + " checks failed (marked ✗ above)");
    return exit_runtime;
  }
  checker.say("collectives: all " + std::to_string(checker.lines()) + " checks passed");
  return exit_success;
}

}  // namespace kpmap
