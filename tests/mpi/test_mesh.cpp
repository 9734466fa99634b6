// The mesh at every rank count: row-major layout, sub-communicators per axis and per ordered
// tuple, axis_index/axis_size as JAX, and the harness itself (collectives reach every rank).
#include <gtest/gtest.h>

#include "kpmap/core/error.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "support/world.hpp"

namespace {

using kpmap::test::world_size;
using kpmap::test::world_rank;

int comm_size(MPI_Comm c) {
  int n = 0;
  MPI_Comm_size(c, &n);
  return n;
}

int comm_rank(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}

TEST(Harness, AllreduceReachesEveryRank) {
  int sum = world_rank() + 1;
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  const int n = world_size();
  EXPECT_EQ(sum, n * (n + 1) / 2);
}

TEST(Mesh, OneInferredAxisCoversAllRanks) {
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  EXPECT_EQ(mesh.axis_size("i"), world_size());
  EXPECT_EQ(mesh.axis_index("i"), world_rank());
  EXPECT_EQ(comm_rank(mesh.comm("i")), world_rank());
  EXPECT_EQ(mesh.describe(), "{i: " + std::to_string(world_size()) + "}");
  EXPECT_TRUE(mesh.has_axis("i"));
  EXPECT_FALSE(mesh.has_axis("j"));
}

TEST(Mesh, TwoAxesAreRowMajorWithLastAxisFastest) {
  const int n = world_size();
  const int model = n % 2 == 0 ? 2 : 1;
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", -1}, {"model", model}});
  const int data = n / model;
  const int r = world_rank();
  EXPECT_EQ(mesh.axis_index("data"), r / model);
  EXPECT_EQ(mesh.axis_index("model"), r % model);
  EXPECT_EQ(mesh.axis_size("data"), data);
  EXPECT_EQ(mesh.axis_size("model"), model);
  EXPECT_EQ(mesh.axis_size({"data", "model"}), n);
  // Over a tuple the index is row-major in the tuple's order, as jax.lax.axis_index.
  EXPECT_EQ(mesh.axis_index({"data", "model"}), (r / model) * model + r % model);
  EXPECT_EQ(mesh.axis_index({"model", "data"}), (r % model) * data + r / model);
  // Each communicator's rank order is that index, and its size the product.
  for (const auto& axes : {kpmap::AxisNames("data"), kpmap::AxisNames("model"),
                           kpmap::AxisNames({"data", "model"}), kpmap::AxisNames({"model", "data"})}) {
    EXPECT_EQ(comm_size(mesh.comm(axes)), mesh.axis_size(axes)) << axes.str();
    EXPECT_EQ(comm_rank(mesh.comm(axes)), mesh.axis_index(axes)) << axes.str();
  }
  // Ranks on one 'data' communicator share their model coordinate: a sum of world ranks tells.
  int sum = r;
  MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, mesh.comm("data"));
  int expected = 0;
  for (int d = 0; d < data; ++d) expected += d * model + r % model;
  EXPECT_EQ(sum, expected);
}

TEST(Mesh, UnknownOrRepeatedAxisIsAnInputError) {
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", -1}});
  try {
    mesh.axis_size("modle");
    FAIL() << "no error";
  } catch (const kpmap::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'modle'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(mesh.comm({"data", "data"}), kpmap::InputError);
}

TEST(Mesh, BadShapesAreRejectedIdenticallyOnEveryRank) {
  const int n = world_size();
  EXPECT_THROW(kpmap::Mesh(MPI_COMM_WORLD, {{"data", n + 1}}), kpmap::InputError);
  EXPECT_THROW(kpmap::Mesh(MPI_COMM_WORLD, {{"data", -1}, {"model", -1}}), kpmap::InputError);
  EXPECT_THROW(kpmap::Mesh(MPI_COMM_WORLD, {{"data", 0}}), kpmap::InputError);
  try {
    kpmap::Mesh::resolve({{"data", 3}}, 4);
    FAIL() << "no error";
  } catch (const kpmap::InputError& e) {
    EXPECT_STREQ(e.what(), "mesh.axes: product 3 != 4 ranks");
  }
}

}  // namespace
