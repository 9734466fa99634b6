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
  std::vector<bool> is_source(n, false), is_destination(n, false);
  // "source -1 (axis index 3)" for a negative index, "source 3" otherwise.
  const auto named = [n](const char* what, int index) {
    std::string s = std::string(what) + " " + std::to_string(index);
    if (index < 0) s += " (axis index " + std::to_string(axis_position(index, n)) + ")";
    return s;
  };
  for (const auto& [src, dst] : perm) {
    const std::string pair = "perm pair (" + std::to_string(src) + ", " + std::to_string(dst) + ")";
    for (int index : {src, dst}) {
      if (index < -n || index >= n) {
        throw ShapeError(where("ppermute", axes, n, in) + ", " + pair + ": index " +
                         std::to_string(index) + " is not an axis index (" + std::to_string(-n) +
                         " <= index < " + std::to_string(n) + ")");
      }
    }
    const int s = axis_position(src, n), d = axis_position(dst, n);
    if (is_source[s]) {
      throw ShapeError(where("ppermute", axes, n, in) + ", " + pair + ": " + named("source", src) +
                       " appears twice (perm must be a partial permutation)");
    }
    if (is_destination[d]) {
      throw ShapeError(where("ppermute", axes, n, in) + ", " + pair + ": " +
                       named("destination", dst) +
                       " appears twice (perm must be a partial permutation)");
    }
    is_source[s] = is_destination[d] = true;
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

std::string tiling(bool tiled) { return tiled ? " (tiled)" : " (untiled)"; }

// Throws unless lowest <= value < rank (or <= rank where the output gains a dimension).
void check_range(const std::string& prefix, const char* name, int value, int rank,
                 bool inclusive, bool tiled, int lowest = 0) {
  if (value >= lowest && (inclusive ? value <= rank : value < rank)) return;
  throw ShapeError(prefix + ", " + name + " " + std::to_string(value) +
                   ": out of range for an input of rank " + std::to_string(rank) + " (" +
                   std::to_string(lowest) + " <= " + name + (inclusive ? " <= " : " < ") +
                   std::to_string(rank) + ")" + tiling(tiled));
}

// The size rule shared by psum_scatter's scatter_dimension and all_to_all's split_axis.
void check_split(const std::string& prefix, const char* name, const Shape& in, int d, int n,
                 bool tiled) {
  const std::string head = prefix + ", " + name + " " + std::to_string(d) + ": ";
  if (tiled && in[d] % n != 0) {
    throw ShapeError(head + std::to_string(in[d]) + " is not divisible by " + std::to_string(n) +
                     " (tiled)");
  }
  if (!tiled && in[d] != n) {
    throw ShapeError(head + std::to_string(in[d]) + " != " + std::to_string(n) +
                     " (untiled requires shape[" + std::string(name) + "] == axis size)");
  }
}

}  // namespace

namespace detail {

// JAX binds all_gather_dimension = canonicalize_axis(axis, ndim if tiled else ndim + 1).
int all_gather_axis(const Shape& in, const AxisNames& axes, int n, int axis, bool tiled) {
  const int rank = static_cast<int>(in.size());
  const int out_rank = tiled ? rank : rank + 1;
  check_range(where("all_gather", axes, n, in), "axis", axis, rank, !tiled, tiled, -out_rank);
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
  const std::string prefix = detail::where("psum_scatter", axes, n, in);
  const int rank = static_cast<int>(in.size());
  check_range(prefix, "scatter_dimension", scatter_dimension, rank, false, tiled);
  check_split(prefix, "scatter_dimension", in, scatter_dimension, n, tiled);
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
  const std::string prefix = detail::where("all_to_all", axes, n, in);
  const int rank = static_cast<int>(in.size());
  check_range(prefix, "split_axis", split_axis, rank, false, tiled);
  check_range(prefix, "concat_axis", concat_axis, rank, false, tiled);
  check_split(prefix, "split_axis", in, split_axis, n, tiled);
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
