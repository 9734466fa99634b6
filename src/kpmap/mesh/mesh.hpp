// The device mesh: ranks laid out row-major (last axis fastest, like a JAX mesh) over ordered,
// named axes, with one duplicated sub-communicator per ordered tuple of axes.
#pragma once

#include <mpi.h>

#include <array>
#include <initializer_list>
#include <string>
#include <vector>

namespace kpmap {

// An axis name or an ordered tuple of axis names, as JAX's `axis_name` argument. The empty
// tuple, AxisNames() or {} (JAX's `()`), names no axis: a group of one rank, so every
// collective over it is the identity (psum(x, ()) == x), its axis_index is 0 and its size 1.
class AxisNames {
 public:
  AxisNames() = default;
  AxisNames(const char* name) : names_{name} {}                      // NOLINT: implicit on purpose
  AxisNames(std::string name) : names_{std::move(name)} {}           // NOLINT
  AxisNames(std::initializer_list<std::string> names) : names_(names) {}
  explicit AxisNames(std::vector<std::string> names) : names_(std::move(names)) {}
  const std::vector<std::string>& names() const { return names_; }
  std::string str() const;  // "data", "(data, model)" or "()"

 private:
  std::vector<std::string> names_;
};

struct MeshAxis {
  std::string name;
  int size;
};

// Owns an MPI communicator and frees it (RAII); move-only.
class Communicator {
 public:
  Communicator() = default;
  explicit Communicator(MPI_Comm comm) : comm_(comm) {}
  Communicator(Communicator&& other) noexcept : comm_(other.comm_) { other.comm_ = MPI_COMM_NULL; }
  Communicator& operator=(Communicator&& other) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  ~Communicator();
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// A resolved axis (or ordered tuple of axes) of a Mesh, as Mesh::axis returns it: the
// communicator over the tuple, this rank's axis_index on it and the axis_size, looked up once.
// Every collective takes one in place of the mesh and the names, at no per-call cost:
//   const kpmap::Axis data = mesh.axis("data");
//   kpmap::psum(data, x, x);  // the same as kpmap::psum(mesh, "data", x, x)
// Copies are cheap (no allocation). It refers to the Mesh's communicator and names: the Mesh must
// outlive it.
class Axis {
 public:
  MPI_Comm comm() const { return comm_; }
  int index() const { return index_; }  // jax.lax.axis_index over the tuple
  int size() const { return size_; }    // the product of the axes' sizes
  const AxisNames& names() const { return *names_; }
  std::string str() const { return names_->str(); }  // "data", "(data, model)" or "()"

 private:
  friend class Mesh;
  Axis(MPI_Comm comm, int index, int size, const AxisNames* names)
      : comm_(comm), index_(index), size_(size), names_(names) {}

  MPI_Comm comm_;
  int index_;
  int size_;
  const AxisNames* names_;
};

class Mesh {
 public:
  static constexpr int max_axes = 4;

  // Validates `axes` for `ranks` ranks and infers a size of -1. Pure and identical on every rank,
  // so a bad mesh fails everywhere. Throws InputError naming `key` (e.g. "mesh.axes").
  static std::vector<MeshAxis> resolve(std::vector<MeshAxis> axes, int ranks,
                                       const std::string& key = "mesh.axes");

  // Collective over `comm`: duplicates it and builds every axis sub-communicator.
  Mesh(MPI_Comm comm, std::vector<MeshAxis> axes);

  const std::vector<MeshAxis>& axes() const { return axes_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return world_.get(); }
  std::vector<int> coords() const;  // this rank's index along each axis, in mesh order
  std::string describe() const;     // "{data: 2, model: 2}"

  bool has_axis(const std::string& name) const;

  // The resolved handle of `axes` (see Axis): a few string comparisons against the mesh's axis
  // names, no allocation. Throws InputError for an unknown or repeated axis name.
  Axis axis(const AxisNames& axes) const;

  // The communicator over `axes`; its rank order is axis_index(axes). The empty tuple gives a
  // communicator of this rank alone. Throws InputError for an unknown or repeated axis name.
  MPI_Comm comm(const AxisNames& axes) const { return axis(axes).comm(); }
  int axis_index(const AxisNames& axes) const { return axis(axes).index(); }  // row-major, as jax.lax.axis_index
  int axis_size(const AxisNames& axes) const { return axis(axes).size(); }    // product of the sizes

 private:
  // One ordered tuple of axes: its communicator, this rank's index on it, its size, its names.
  struct Group {
    Communicator comm;
    int index;
    int size;
    AxisNames names;
  };
  // A tuple's key: its positions p0, p1, ... as the digits p + 1 in base max_axes + 1 (0: ()).
  static constexpr int key_count = (max_axes + 1) * (max_axes + 1) * (max_axes + 1) * (max_axes + 1);
  static_assert(max_axes == 4, "key_count has one factor per axis");
  int position(const std::string& name, const AxisNames& axes) const;  // throws for an unknown name

  std::vector<MeshAxis> axes_;
  Communicator world_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<Group> groups_;          // every ordered tuple of distinct axes, () first
  std::array<int, key_count> group_;   // key -> index into groups_ (-1: no such tuple)
};

}  // namespace kpmap
