#include "kpmap/mesh/mesh.hpp"

#include <algorithm>
#include <sstream>

#include "kpmap/core/error.hpp"

namespace kpmap {

std::string AxisNames::str() const {
  if (names_.size() == 1) return names_[0];
  std::string s = "(";
  for (size_t i = 0; i < names_.size(); ++i) s += (i ? ", " : "") + names_[i];
  return s + ")";
}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = other.comm_;
    other.comm_ = MPI_COMM_NULL;
  }
  return *this;
}

Communicator::~Communicator() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

std::vector<MeshAxis> Mesh::resolve(std::vector<MeshAxis> axes, int ranks, const std::string& key) {
  if (axes.empty()) throw InputError(key + ": at least one axis is needed");
  if (static_cast<int>(axes.size()) > max_axes) {
    throw InputError(key + ": " + std::to_string(axes.size()) + " axes, at most " +
                     std::to_string(max_axes) + " are allowed");
  }
  int inferred = -1;
  long long product = 1;
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto& a = axes[i];
    const std::string where = key + "." + a.name;
    if (a.name.empty()) throw InputError(key + ": an axis name is empty");
    for (size_t j = 0; j < i; ++j) {
      if (axes[j].name == a.name) throw InputError(key + ": axis '" + a.name + "' appears twice");
    }
    if (a.size == -1) {
      if (inferred >= 0) {
        throw InputError(key + ": axes '" + axes[inferred].name + "' and '" + a.name +
                         "' are both -1; at most one size may be inferred");
      }
      inferred = static_cast<int>(i);
    } else if (a.size < 1) {
      throw InputError(where + ": size " + std::to_string(a.size) +
                       " is not allowed (a positive integer, or -1 to infer it)");
    } else {
      product *= a.size;
    }
  }
  if (inferred >= 0) {
    if (ranks % product != 0) {
      throw InputError(key + "." + axes[inferred].name + ": cannot infer -1: the other axes' product " +
                       std::to_string(product) + " does not divide " + std::to_string(ranks) +
                       " ranks");
    }
    axes[inferred].size = static_cast<int>(ranks / product);
  } else if (product != ranks) {
    throw InputError(key + ": product " + std::to_string(product) + " != " +
                     std::to_string(ranks) + " ranks");
  }
  return axes;
}

namespace {

// Row-major index of `coords` restricted to the axes at `positions`, in that order.
int flat_index(const std::vector<int>& coords, const std::vector<MeshAxis>& axes,
               const std::vector<int>& positions) {
  int index = 0;
  for (int p : positions) index = index * axes[p].size + coords[p];
  return index;
}

}  // namespace

Mesh::Mesh(MPI_Comm comm, std::vector<MeshAxis> axes) {
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  axes_ = resolve(std::move(axes), size_);
  MPI_Comm dup = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup");
  world_ = Communicator(dup);
  check_mpi(MPI_Comm_rank(dup, &rank_), "MPI_Comm_rank");

  // Every ordered tuple of distinct axes: each subset, in each of its orders. The colour groups
  // ranks that share the coordinates outside the tuple; the key orders them row-major over it.
  const auto me = coords();
  const int n = static_cast<int>(axes_.size());
  group_.fill(-1);
  const auto add = [&](const std::vector<int>& inside, MPI_Comm sub) {
    int key = 0, size = 1;
    std::vector<std::string> names;
    for (int p : inside) {
      key = key * (max_axes + 1) + p + 1;
      size *= axes_[p].size;
      names.push_back(axes_[p].name);
    }
    group_[key] = static_cast<int>(groups_.size());
    groups_.push_back({Communicator(sub), flat_index(me, axes_, inside), size, AxisNames(std::move(names))});
  };
  MPI_Comm self = MPI_COMM_NULL;  // the empty tuple of axes: this rank alone
  check_mpi(MPI_Comm_split(dup, rank_, 0, &self), "MPI_Comm_split");
  add({}, self);
  for (int mask = 1; mask < (1 << n); ++mask) {
    std::vector<int> inside, outside;
    for (int p = 0; p < n; ++p) ((mask >> p) & 1 ? inside : outside).push_back(p);
    const int color = flat_index(me, axes_, outside);
    do {
      MPI_Comm sub = MPI_COMM_NULL;
      check_mpi(MPI_Comm_split(dup, color, flat_index(me, axes_, inside), &sub), "MPI_Comm_split");
      add(inside, sub);
    } while (std::next_permutation(inside.begin(), inside.end()));
  }
}

std::vector<int> Mesh::coords() const {
  std::vector<int> c(axes_.size());
  int r = rank_;
  for (int p = static_cast<int>(axes_.size()) - 1; p >= 0; --p) {
    c[p] = r % axes_[p].size;
    r /= axes_[p].size;
  }
  return c;
}

std::string Mesh::describe() const {
  std::ostringstream out;
  out << '{';
  for (size_t i = 0; i < axes_.size(); ++i) out << (i ? ", " : "") << axes_[i].name << ": " << axes_[i].size;
  out << '}';
  return out.str();
}

int Mesh::position(const std::string& name, const AxisNames& axes) const {
  for (size_t p = 0; p < axes_.size(); ++p) {
    if (axes_[p].name == name) return static_cast<int>(p);
  }
  throw InputError("axis name '" + name + "' in " + axes.str() + " is not an axis of the mesh " + describe());
}

bool Mesh::has_axis(const std::string& name) const {
  return std::any_of(axes_.begin(), axes_.end(), [&](const MeshAxis& a) { return a.name == name; });
}

Axis Mesh::axis(const AxisNames& axes) const {
  int key = 0;
  unsigned seen = 0;  // bit p: position p is in the tuple
  for (const auto& name : axes.names()) {
    const int p = position(name, axes);
    if ((seen >> p) & 1u) throw InputError("axis name '" + name + "' appears twice in " + axes.str());
    seen |= 1u << p;
    key = key * (max_axes + 1) + p + 1;  // at most max_axes distinct names get here
  }
  const Group& g = groups_[group_[key]];
  return Axis(g.comm.get(), g.index, g.size, &g.names);
}

}  // namespace kpmap
