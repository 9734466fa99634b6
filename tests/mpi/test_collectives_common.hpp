// Shared by the collectives tests: the expected answers are computed here independently of
// kpmap (group membership from the declared mesh sizes and world ranks, values from the rank and
// the element's row-major index), never by the code under test.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kpmap/collectives/collectives.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "support/host_copy.hpp"
#include "support/world.hpp"

namespace kct {

using kpmap::test::world_size;
using kpmap::test::world_rank;

using Index = std::array<std::int64_t, 4>;
using kpmap::Shape;

// The two-axis meshes each rank count runs: 1x1, 2x1 and 1x2, 2x2 (and n x 1 otherwise).
inline std::vector<std::vector<kpmap::MeshAxis>> two_axis_meshes() {
  const int n = world_size();
  if (n == 2) return {{{"data", 2}, {"model", 1}}, {{"data", 1}, {"model", 2}}};
  if (n == 4) return {{{"data", 2}, {"model", 2}}};
  return {{{"data", n}, {"model", 1}}};
}

inline std::string describe(const std::vector<kpmap::MeshAxis>& axes) {
  std::string s;
  for (const auto& a : axes) s += a.name + "=" + std::to_string(a.size) + " ";
  return s;
}

// The ranks sharing my coordinates off `names`, ordered by their row-major index over `names`.
struct Group {
  std::vector<int> members;  // world ranks, by axis index
  int me = 0;                // my axis index
  int size() const { return static_cast<int>(members.size()); }
};

inline Group group_of(const std::vector<kpmap::MeshAxis>& mesh, const std::vector<std::string>& names,
                      int rank) {
  const int dims = static_cast<int>(mesh.size());
  auto coords = [&](int q) {
    std::vector<int> c(dims);
    for (int p = dims - 1; p >= 0; --p) c[p] = q % mesh[p].size, q /= mesh[p].size;
    return c;
  };
  std::vector<int> pos;
  for (const auto& name : names) {
    for (int p = 0; p < dims; ++p) {
      if (mesh[p].name == name) pos.push_back(p);
    }
  }
  int total = 1, group = 1;
  for (const auto& a : mesh) total *= a.size;
  for (int p : pos) group *= mesh[p].size;
  Group g;
  g.members.assign(group, -1);
  const auto mine = coords(rank);
  for (int q = 0; q < total; ++q) {
    const auto c = coords(q);
    bool same = true;
    for (int p = 0; p < dims; ++p) {
      const bool inside = std::find(pos.begin(), pos.end(), p) != pos.end();
      if (!inside && c[p] != mine[p]) same = false;
    }
    if (!same) continue;
    int index = 0;
    for (int p : pos) index = index * mesh[p].size + c[p];
    g.members[index] = q;
    if (q == rank) g.me = index;
  }
  return g;
}

template <class T>
inline constexpr bool is_16bit_v = sizeof(T) == 2;

// Integer-valued data, distinct per rank and element, small enough for bf16 (exact to 256) to
// hold every sum over 4 ranks exactly: 16-bit tests keep shapes under 16 elements.
template <class T>
double value(int rank, std::int64_t linear) {
  return 1.0 + static_cast<double>(linear) + (is_16bit_v<T> ? 16.0 : 1000.0) * rank;
}

template <class T>
T as(double x) {
  return static_cast<T>(x);
}

template <class T>
double to_double(T x) {
  return static_cast<double>(x);
}

inline std::int64_t count(const Shape& s) {
  std::int64_t c = 1;
  for (auto e : s) c *= e;
  return c;
}

inline std::int64_t linear(const Shape& s, const Index& idx) {
  std::int64_t l = 0;
  for (size_t d = 0; d < s.size(); ++d) l = l * s[d] + idx[d];
  return l;
}

inline Index unflatten(const Shape& s, std::int64_t l) {
  Index idx{0, 0, 0, 0};
  for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) idx[d] = l % s[d], l /= s[d];
  return idx;
}

template <class V>
Shape shape_of(const V& v) {
  Shape s;
  for (int d = 0; d < static_cast<int>(V::rank); ++d) s.push_back(static_cast<std::int64_t>(v.extent(d)));
  return s;
}

template <class V>
typename V::reference_type at(const V& v, const Index& i) {
  constexpr int R = static_cast<int>(V::rank);
  if constexpr (R == 0) return v();
  else if constexpr (R == 1) return v(i[0]);
  else if constexpr (R == 2) return v(i[0], i[1]);
  else if constexpr (R == 3) return v(i[0], i[1], i[2]);
  else return v(i[0], i[1], i[2], i[3]);
}

// Writes f(row-major index) into every element (through host memory: support/host_copy.hpp).
template <class V>
void fill(const V& v, const std::function<double(const Index&)>& f) {
  const Shape s = shape_of(v);
  kpmap::test::write_through_host(v, [&](const auto& h) {
    for (std::int64_t l = 0; l < count(s); ++l) {
      const Index idx = unflatten(s, l);
      at(h, idx) = as<typename V::non_const_value_type>(f(idx));
    }
  });
}

// The rank's own data: value(rank, row-major index).
template <class V>
void fill_rank(const V& v, int rank) {
  const Shape s = shape_of(v);
  fill(v, [&](const Index& i) { return value<typename V::non_const_value_type>(rank, linear(s, i)); });
}

// Compares every element with expected(row-major index); reports the first few mismatches.
template <class V>
void expect_all(const V& v, const std::function<double(const Index&)>& expected, const std::string& what) {
  const auto h = kpmap::test::host_copy(v);
  const Shape s = shape_of(v);
  int wrong = 0;
  for (std::int64_t l = 0; l < count(s); ++l) {
    const Index idx = unflatten(s, l);
    const double got = to_double(at(h, idx)), want = expected(idx);
    if (got != want && ++wrong <= 3) {
      ADD_FAILURE() << what << ": element " << l << " of " << kpmap::to_string(s) << " is " << got
                    << ", expected " << want;
    }
  }
  EXPECT_EQ(wrong, 0) << what;
}

// Views in kpmap's memory space, row-major (R) and column-major (L).
template <class T, int R>
using RView = Kokkos::View<typename kpmap::detail::data_type<T, R>::type, Kokkos::LayoutRight,
                           kpmap::device_type>;
template <class T, int R>
using LView = Kokkos::View<typename kpmap::detail::data_type<T, R>::type, Kokkos::LayoutLeft,
                           kpmap::device_type>;

template <class V>
V make(const Shape& s, const char* label = "test") {
  return kpmap::detail::make_view<V>(label, s);
}

// Runs f and returns the ShapeError's message ("" and a failure when nothing is thrown).
template <class F>
std::string shape_error(F&& f) {
  try {
    f();
  } catch (const kpmap::ShapeError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ShapeError";
  return "";
}

}  // namespace kct
