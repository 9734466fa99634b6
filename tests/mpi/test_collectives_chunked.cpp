// Messages larger than MPI's int count: with the chunk limit lowered to 3 elements (the test
// hook kpmap::detail::set_chunk_limit), every collective splits its messages into MPI calls of at
// most 3 elements, and still gives the exact results. The MPI calls are counted through MPI's
// profiling interface (the wrappers below call PMPI_*), so the chunking itself is checked too.
// test_collectives_large (label perf) runs a real message of more than 2^31 elements.
#include <map>
#include <string>

#include "test_collectives_common.hpp"

namespace {

struct Calls {
  int n = 0;
  long long max_bytes = 0;  // the largest message of one call (per destination)
};
std::map<std::string, Calls> calls;

int record(const char* name, int count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  Calls& c = calls[name];
  ++c.n;
  c.max_bytes = std::max(c.max_bytes, static_cast<long long>(count) * size);
  return 0;
}

}  // namespace

extern "C" {
int MPI_Allreduce(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  record("Allreduce", c, t);
  return PMPI_Allreduce(s, r, c, t, o, comm);
}
int MPI_Iallreduce(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm comm,
                   MPI_Request* q) {
  record("Iallreduce", c, t);
  return PMPI_Iallreduce(s, r, c, t, o, comm, q);
}
int MPI_Allgather(const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt,
                  MPI_Comm comm) {
  record("Allgather", sc, st);
  return PMPI_Allgather(s, sc, st, r, rc, rt, comm);
}
int MPI_Iallgather(const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt,
                   MPI_Comm comm, MPI_Request* q) {
  record("Iallgather", sc, st);
  return PMPI_Iallgather(s, sc, st, r, rc, rt, comm, q);
}
int MPI_Reduce(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, int root, MPI_Comm comm) {
  record("Reduce", c, t);
  return PMPI_Reduce(s, r, c, t, o, root, comm);
}
int MPI_Ireduce(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, int root, MPI_Comm comm,
                MPI_Request* q) {
  record("Ireduce", c, t);
  return PMPI_Ireduce(s, r, c, t, o, root, comm, q);
}
int MPI_Alltoall(const void* s, int sc, MPI_Datatype st, void* r, int rc, MPI_Datatype rt,
                 MPI_Comm comm) {
  record("Alltoall", sc, st);
  return PMPI_Alltoall(s, sc, st, r, rc, rt, comm);
}
int MPI_Bcast(void* b, int c, MPI_Datatype t, int root, MPI_Comm comm) {
  record("Bcast", c, t);
  return PMPI_Bcast(b, c, t, root, comm);
}
int MPI_Isend(const void* b, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              MPI_Request* q) {
  record("Isend", c, t);
  return PMPI_Isend(b, c, t, dest, tag, comm, q);
}
}

namespace {

using namespace kct;

constexpr int limit = 3;

// Lowers the chunk limit for one test and restores it.
struct ChunkLimit {
  explicit ChunkLimit(std::int64_t elements) { kpmap::detail::set_chunk_limit(elements); }
  ~ChunkLimit() { kpmap::detail::set_chunk_limit(0); }
};

// The calls to `name` since the last reset, each at most `limit` elements of `bytes` bytes.
void expect_calls(const std::string& name, int expected, int bytes, const std::string& what) {
  EXPECT_EQ(calls[name].n, expected) << what << ": MPI_" << name << " calls";
  EXPECT_LE(calls[name].max_bytes, static_cast<long long>(limit) * bytes) << what;
  EXPECT_GT(calls[name].max_bytes, 0) << what;
  calls.clear();
}

template <class T>
double summed(const Group& g, std::int64_t lin) {
  double s = 0;
  for (int q : g.members) s += value<T>(q, lin);
  return s;
}

// 4 + 4 + 3 + 4 + 4 = 19 MPI calls.
TEST(Chunked, Reductions) {
  ChunkLimit guard(limit);
  EXPECT_EQ(kpmap::detail::chunk_limit(), limit);
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const Group g = group_of({{"i", n}}, {"i"}, rank);
  calls.clear();

  auto x = make<RView<double, 1>>({10});
  fill_rank(x, rank);
  auto s = make<RView<double, 1>>({10});
  kpmap::psum(mesh, "i", x, s);
  expect_calls("Allreduce", 4, 8, "psum of 10");
  expect_all(s, [&](const Index& i) { return summed<double>(g, i[0]); }, "psum of 10 in chunks of 3");

  auto left = make<LView<float, 2>>({2, 5});  // packed, then reduced with kpmap's max op
  fill_rank(left, rank);
  kpmap::pmax(mesh, "i", left, left);
  expect_calls("Allreduce", 4, 4, "pmax of 10");
  expect_all(left, [&](const Index& i) { return value<float>(g.members.back(), i[0] * 5 + i[1]); },
             "pmax in place, LayoutLeft");

  auto h = make<RView<kpmap::bf16, 1>>({7});  // the bf16 sum op
  fill_rank(h, rank);
  auto hs = kpmap::psum(mesh, "i", h);
  expect_calls("Allreduce", 3, 2, "bf16 psum of 7");
  expect_all(hs, [&](const Index& i) { return summed<kpmap::bf16>(g, i[0]); }, "bf16 psum of 7");

  auto m = kpmap::pmean(mesh, "i", x);
  expect_calls("Allreduce", 4, 8, "pmean of 10");
  expect_all(m, [&](const Index& i) { return summed<double>(g, i[0]) / n; }, "pmean of 10");

  kpmap::Request r = kpmap::ipsum(mesh, "i", x, x);
  expect_calls("Iallreduce", 4, 8, "ipsum of 10");
  EXPECT_FALSE(r.done());
  while (!r.test()) {
  }
  EXPECT_TRUE(r.done());
  expect_all(x, [&](const Index& i) { return summed<double>(g, i[0]); }, "ipsum of 10 in place");
}

// 4 + 4 + 2n + 2n + 3 calls.
TEST(Chunked, GatherScatterAllToAll) {
  ChunkLimit guard(limit);
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const Group g = group_of({{"i", n}}, {"i"}, rank);
  calls.clear();

  auto x = make<RView<double, 2>>({2, 5});
  fill_rank(x, rank);
  auto tiled = kpmap::all_gather(mesh, "i", x, 1, kpmap::tiled);  // [2, 5n]: a block swap
  expect_calls("Allgather", 4, 8, "all_gather of 10");
  expect_all(tiled, [&](const Index& o) { return value<double>(g.members[o[1] / 5], o[0] * 5 + o[1] % 5); },
             "all_gather tiled along axis 1");

  auto y = make<RView<std::int64_t, 1>>({10});
  fill_rank(y, rank);
  auto stacked = make<RView<std::int64_t, 2>>({n, 10});
  kpmap::Request r = kpmap::iall_gather(mesh, "i", y, stacked, 0, false);
  expect_calls("Iallgather", 4, 8, "iall_gather of 10");
  r.wait();
  expect_all(stacked, [&](const Index& o) { return value<std::int64_t>(g.members[o[0]], o[1]); },
             "iall_gather untiled");

  // fp16 (its sum op), scatter dimension 1 (a block swap): 6 elements per rank, 2 chunks.
  auto z = make<RView<kpmap::fp16, 2>>({3, 2 * n});
  fill_rank(z, rank);
  auto part = kpmap::psum_scatter(mesh, "i", z, 1, kpmap::tiled);  // [3, 2]
  expect_calls("Reduce", 2 * n, 2, "psum_scatter of 6 per rank");
  expect_all(part, [&](const Index& o) { return summed<kpmap::fp16>(g, o[0] * 2 * n + g.me * 2 + o[1]); },
             "fp16 psum_scatter tiled along axis 1");

  auto w = make<RView<float, 2>>({n, 4});
  fill_rank(w, rank);
  auto row = make<RView<float, 1>>({4});
  kpmap::Request q = kpmap::ipsum_scatter(mesh, "i", w, row, 0, false);
  expect_calls("Ireduce", 2 * n, 4, "ipsum_scatter of 4 per rank");
  q.wait();
  expect_all(row, [&](const Index& o) { return summed<float>(g, g.me * 4 + o[0]); }, "ipsum_scatter untiled");

  auto a = make<RView<int, 2>>({2 * n, 4});  // 8 elements to each rank: 3 chunks
  fill_rank(a, rank);
  auto t = kpmap::all_to_all(mesh, "i", a, 0, 1, true);  // [2, 4n]
  expect_calls("Alltoall", 3, 4, "all_to_all of 8 per rank");
  expect_all(t, [&](const Index& o) { return value<int>(g.members[o[1] / 4], (g.me * 2 + o[0]) * 4 + o[1] % 4); },
             "all_to_all tiled");
}

// 4 + 4 calls.
TEST(Chunked, PermuteAndBroadcast) {
  ChunkLimit guard(limit);
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  calls.clear();
  auto x = make<RView<double, 1>>({10});
  fill_rank(x, rank);
  kpmap::Permutation cycle;
  for (int j = 0; j < n; ++j) cycle.emplace_back(j, (j + 1) % n);
  auto p = kpmap::ppermute(mesh, "i", x, cycle);
  expect_calls("Isend", 4, 8, "ppermute of 10");
  expect_all(p, [&](const Index& o) { return value<double>((rank + n - 1) % n, o[0]); }, "ppermute of 10");
  auto b = kpmap::pbroadcast(mesh, "i", x, n - 1);
  expect_calls("Bcast", 4, 8, "pbroadcast of 10");
  expect_all(b, [&](const Index& o) { return value<double>(n - 1, o[0]); }, "pbroadcast of 10");
}

TEST(Chunked, LimitRestored) { EXPECT_EQ(kpmap::detail::chunk_limit(), 2147483647); }

}  // namespace
