#include "kpmap/collectives/shape.hpp"

#include "kpmap/core/error.hpp"

namespace kpmap {

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace detail {

std::string where(const char* collective, const AxisNames& axes, int n, const Shape& in) {
  return std::string(collective) + " over '" + axes.str() + "' (size " + std::to_string(n) +
         "): input shape " + to_string(in);
}

std::int64_t product(const Shape& shape, int begin, int end) {
  std::int64_t p = 1;
  for (int d = begin; d < end; ++d) p *= shape[d];
  return p;
}

void check_output_shape(const char* collective, const AxisNames& axes, int n, const Shape& in,
                        const std::string& arguments, const Shape& out, const Shape& expected) {
  if (out == expected) return;
  throw ShapeError(where(collective, axes, n, in) + arguments + ": output View has shape " +
                   to_string(out) + ", expected " + to_string(expected));
}

void check_permutation(const AxisNames& axes, int n, const Shape& in,
                       const std::vector<std::pair<int, int>>& perm) {
  // Bit 1: seen as a source, bit 2: as a destination. Kept between calls, so that a repeated
  // ppermute allocates nothing here (the collectives are called from one thread at a time).
  static std::vector<unsigned char> seen;
  seen.assign(static_cast<std::size_t>(n), 0);
  // "source -1 (axis index 3)" for a negative index, "source 3" otherwise.
  const auto named = [n](const char* what, int index) {
    std::string s = std::string(what) + " " + std::to_string(index);
    if (index < 0) s += " (axis index " + std::to_string(axis_position(index, n)) + ")";
    return s;
  };
  const auto fail = [&](int src, int dst, const std::string& what) {
    throw ShapeError(where("ppermute", axes, n, in) + ", perm pair (" + std::to_string(src) + ", " +
                     std::to_string(dst) + "): " + what);
  };
  for (const auto& [src, dst] : perm) {
    for (int index : {src, dst}) {
      if (index < -n || index >= n) {
        fail(src, dst,
             "index " + std::to_string(index) + " is not an axis index (" + std::to_string(-n) +
                 " <= index < " + std::to_string(n) + ")");
      }
    }
    unsigned char& s = seen[axis_position(src, n)];
    unsigned char& d = seen[axis_position(dst, n)];
    if (s & 1) fail(src, dst, named("source", src) + " appears twice (perm must be a partial permutation)");
    if (d & 2) {
      fail(src, dst, named("destination", dst) + " appears twice (perm must be a partial permutation)");
    }
    s |= 1;
    d |= 2;
  }
}

void check_source(const AxisNames& axes, int n, const Shape& in, int source) {
  if (source < 0 || source >= n) {
    throw ShapeError(where("pbroadcast", axes, n, in) + ", source " + std::to_string(source) +
                     ": not an axis index (0 <= source < " + std::to_string(n) + ")");
  }
}

}  // namespace detail

namespace {

// Where a shape rule is checked; the message's start is built only when a rule is broken.
struct Site {
  const char* collective;
  const AxisNames& axes;
  int n;
  const Shape& in;
  std::string str() const { return detail::where(collective, axes, n, in); }
};

std::string tiling(bool tiled) { return tiled ? " (tiled)" : " (untiled)"; }

// Throws unless lowest <= value < rank (or <= rank where the output gains a dimension).
void check_range(const Site& site, const char* name, int value, int rank, bool inclusive, bool tiled,
                 int lowest = 0) {
  if (value >= lowest && (inclusive ? value <= rank : value < rank)) return;
  throw ShapeError(site.str() + ", " + name + " " + std::to_string(value) +
                   ": out of range for an input of rank " + std::to_string(rank) + " (" +
                   std::to_string(lowest) + " <= " + name + (inclusive ? " <= " : " < ") +
                   std::to_string(rank) + ")" + tiling(tiled));
}

// The size rule shared by psum_scatter's scatter_dimension and all_to_all's split_axis.
void check_split(const Site& site, const char* name, int d, bool tiled) {
  const std::int64_t extent = site.in[d];
  const int n = site.n;
  if (tiled ? extent % n == 0 : extent == n) return;
  const std::string head = site.str() + ", " + name + " " + std::to_string(d) + ": ";
  if (tiled) {
    throw ShapeError(head + std::to_string(extent) + " is not divisible by " + std::to_string(n) + " (tiled)");
  }
  throw ShapeError(head + std::to_string(extent) + " != " + std::to_string(n) + " (untiled requires shape[" +
                   std::string(name) + "] == axis size)");
}

}  // namespace

namespace detail {

// JAX binds all_gather_dimension = canonicalize_axis(axis, ndim if tiled else ndim + 1).
int all_gather_axis(const Shape& in, const AxisNames& axes, int n, int axis, bool tiled) {
  const int rank = static_cast<int>(in.size());
  const int out_rank = tiled ? rank : rank + 1;
  check_range(Site{"all_gather", axes, n, in}, "axis", axis, rank, !tiled, tiled, -out_rank);
  return axis < 0 ? axis + out_rank : axis;
}

}  // namespace detail

Shape all_gather_shape(const Shape& in, const AxisNames& axes, int n, int axis, bool tiled) {
  axis = detail::all_gather_axis(in, axes, n, axis, tiled);
  Shape out = in;
  if (tiled) {
    out[axis] *= n;
  } else {
    out.insert(out.begin() + axis, n);
  }
  return out;
}

Shape psum_scatter_shape(const Shape& in, const AxisNames& axes, int n, int scatter_dimension,
                         bool tiled) {
  const Site site{"psum_scatter", axes, n, in};
  const int rank = static_cast<int>(in.size());
  check_range(site, "scatter_dimension", scatter_dimension, rank, false, tiled);
  check_split(site, "scatter_dimension", scatter_dimension, tiled);
  Shape out = in;
  if (tiled) {
    out[scatter_dimension] /= n;
  } else {
    out.erase(out.begin() + scatter_dimension);
  }
  return out;
}

Shape all_to_all_shape(const Shape& in, const AxisNames& axes, int n, int split_axis,
                       int concat_axis, bool tiled) {
  const Site site{"all_to_all", axes, n, in};
  const int rank = static_cast<int>(in.size());
  check_range(site, "split_axis", split_axis, rank, false, tiled);
  check_range(site, "concat_axis", concat_axis, rank, false, tiled);
  check_split(site, "split_axis", split_axis, tiled);
  Shape out = in;
  if (tiled) {
    out[split_axis] /= n;
    out[concat_axis] *= n;
  } else {
    out.erase(out.begin() + split_axis);
    out.insert(out.begin() + concat_axis, n);
  }
  return out;
}

Shape all_gather_shape(const Axis& group, const Shape& in, int axis, bool tiled) {
  return all_gather_shape(in, group.names(), group.size(), axis, tiled);
}

Shape psum_scatter_shape(const Axis& group, const Shape& in, int scatter_dimension, bool tiled) {
  return psum_scatter_shape(in, group.names(), group.size(), scatter_dimension, tiled);
}

Shape all_to_all_shape(const Axis& group, const Shape& in, int split_axis, int concat_axis, bool tiled) {
  return all_to_all_shape(in, group.names(), group.size(), split_axis, concat_axis, tiled);
}

Shape all_gather_shape(const Mesh& mesh, const AxisNames& axes, const Shape& in, int axis,
                       bool tiled) {
  return all_gather_shape(mesh.axis(axes), in, axis, tiled);
}

Shape psum_scatter_shape(const Mesh& mesh, const AxisNames& axes, const Shape& in,
                         int scatter_dimension, bool tiled) {
  return psum_scatter_shape(mesh.axis(axes), in, scatter_dimension, tiled);
}

Shape all_to_all_shape(const Mesh& mesh, const AxisNames& axes, const Shape& in, int split_axis,
                       int concat_axis, bool tiled) {
  return all_to_all_shape(mesh.axis(axes), in, split_axis, concat_axis, tiled);
}

}  // namespace kpmap
