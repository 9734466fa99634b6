// The collective sweep of mode bench (docs/bench.md): axes x collectives x dtypes x sizes, each
// timed like nccl-tests and reported with its columns (size, count, type, redop, time, algbw,
// busbw, #wrong), plus the axis it ran over.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kpmap/core/types.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

// psum_reproducible: psum(..., kpmap::reproducible) (fp64 and fp32 only).
enum class Collective {
  psum,
  pmean,
  pmax,
  pmin,
  all_gather,
  psum_scatter,
  all_to_all,
  ppermute,
  pbroadcast,
  psum_reproducible
};

std::string to_string(Collective c);
Collective parse_collective(const std::string& name);  // throws InputError for an unknown name
const char* redop(Collective c);                       // nccl-tests' redop column: sum, avg, max, min, none
std::size_t element_size(Dtype dtype);

// The Views of one row and nccl-tests' conventions for its columns. With n ranks on the axis and
// T the element type:
//   psum/pmean/pmax/pmin, psum_reproducible, ppermute, pbroadcast: in = out = count elements.
//   all_gather:   in = count (per rank), out = n * count (tiled along dimension 0).
//   psum_scatter: in = n * count, out = count (per rank).
//   all_to_all:   in = out = n * count; count is one chunk (what each rank sends each peer).
//   bytes = max(in, out) * sizeof(T): the total message, as nccl-tests' size column.
struct Message {
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t count = 0;
  std::int64_t bytes = 0;
};

// The row for a requested size: count is the largest that fits in `bytes` under the shape
// rules above, but at least 1 (a request below one element per rank is rounded up).
Message message(Collective c, std::int64_t bytes, std::size_t element_size, int n);

// busbw = algbw * factor (nccl-tests' doc/PERFORMANCE.md): all-reduce 2(n-1)/n; all_gather,
// reduce-scatter and all-to-all (n-1)/n; broadcast and ppermute (a cyclic shift: each rank sends
// and receives the whole buffer once) 1.
double busbw_factor(Collective c, int n);

// Values in [0, m) are exact in the element type even when n of them are summed: m is
// min(1024, L / n + 1) with L the largest integer up to which every integer is exact (bf16 256,
// fp16 2048, fp32 2^24, fp64 2^53). Past L ranks (bf16: 256) m is 1 and every value is 0.
int value_modulus(Dtype dtype, int n);

struct BenchSpec {
  std::vector<Collective> collectives;
  std::vector<Dtype> dtypes;
  std::vector<AxisNames> axes;
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = 1 << 20;
  std::int64_t factor = 4;
  int iterations = 20;
  int warmup = 5;
  // bench.baseline: mpi. Each iteration also makes the plain MPI call the collective stands for
  // (MPI_Allreduce, MPI_Allgather, MPI_Reduce_scatter_block, MPI_Alltoall, MPI_Sendrecv,
  // MPI_Bcast) on the same buffers and communicator, timed the same way, just before kpmap's.
  bool baseline = false;
};

// The requested sizes: min_bytes, min_bytes * factor, ... while <= max_bytes.
std::vector<std::int64_t> sweep_sizes(const BenchSpec& spec);

struct BenchRow {
  Collective collective;
  Dtype dtype;
  std::string axis;  // AxisNames::str(): "data" or "(data, model)"
  int ranks;         // n, the size of the axis
  std::int64_t bytes;
  std::int64_t count;
  double time_us;      // max over every rank of the mesh of the mean time per iteration
  double algbw_gbs;    // bytes / time, 1 GB = 1e9 bytes
  double busbw_gbs;    // algbw * busbw_factor
  std::int64_t wrong;  // wrong elements of the last iteration, summed over every rank
  // BenchSpec::baseline only (0 otherwise): the plain MPI call's time and busbw, measured as above.
  double baseline_time_us = 0;
  double baseline_busbw_gbs = 0;
};

// kpmap's time over the plain MPI call's, minus 1 (0.05: kpmap takes 5% longer); 0 without a
// baseline.
double overhead(const BenchRow& row);

// Collective over the mesh; every rank gets the same rows (in sweep order: axis, collective,
// dtype, size; a size whose rounding repeats the previous row's is skipped). `on_row` sees each
// row as soon as it is measured (rank 0 prints it).
std::vector<BenchRow> run_sweep(const Mesh& mesh, const BenchSpec& spec,
                                const std::function<void(const BenchRow&)>& on_row = {});

}  // namespace kpmap
