#include "kpmap/train/memory.hpp"

#include <algorithm>

#include "kpmap/core/half.hpp"
#include "kpmap/model/gradient_kernel.hpp"
#include "kpmap/model/repro_model.hpp"
#include "kpmap/train/step_comm.hpp"

namespace kpmap {

namespace {

// The StepComm the trainer builds decides the shard, the gathered buffer and the wire buffers.
template <class Acc>
MemoryEstimate estimate(const TrainSpec& spec, const Mesh& mesh) {
  const auto& p = spec.problem;
  const bool scaled = spec.loss_scale.kind != LossScaleSpec::Kind::none;
  const int model_size = mesh.has_axis("model") ? mesh.axis_size("model") : 1;
  const int model_index = model_size > 1 ? mesh.axis_index("model") : 0;
  const Range cols = column_range(p.features, model_index, model_size);
  const long long n = cols.size() + (p.bias ? 1 : 0);
  const StepComm<Acc> comm(mesh, spec.reproducible ? dtype_v<Acc> : spec.comm, !spec.reproducible && scaled,
                           spec.comm_spec, n);
  const BatchPlan plan = make_batch_plan(p.samples, spec.batch, comm.data_index(), comm.data_size());
  const std::size_t s = size_of(spec.compute), m = size_of(spec.params), acc = sizeof(Acc);
  const long long rows = plan.slice.size();  // of each batch
  const long long micro_rows = rows / spec.accumulation + (rows % spec.accumulation ? 1 : 0);
  const long long F = cols.size(), shard = comm.shard_size();
  const bool same_type = spec.compute == spec.params;

  MemoryEstimate e;
  const std::size_t elements =
      static_cast<std::size_t>(plan.batches * rows) * static_cast<std::size_t>(F + 1);
  e.data = elements * s;
  // make_shard casts the rows read from a file (in host memory, and in a copy of them in the
  // memory space where that is not the host's) into the shard; the trainer frees them before it
  // allocates anything else.
  if (spec.from_file) e.file_rows = elements * sizeof(double);

  // Master weights; the kernels' copy in S (its own buffer unless S == M under allreduce: then
  // the master weights are it); under reduce_scatter with S != M also the outgoing shard in S.
  e.parameters = static_cast<std::size_t>(shard) * m;
  if (comm.sharded() || !same_type) e.parameters += static_cast<std::size_t>(comm.gathered_size()) * s;
  if (comm.sharded() && !same_type) e.parameters += static_cast<std::size_t>(shard) * s;

  // stats (n + 2 slots); precision.reproducible: the mean gradient in M unless it is the head of
  // stats; the partial products of a micro-batch (model axis); the residuals of a step (overlap);
  // the wire.
  e.gradients = static_cast<std::size_t>(n + 2) * acc;
  if (spec.reproducible && (comm.sharded() || m != acc)) e.gradients += static_cast<std::size_t>(shard) * m;
  if (model_size > 1) e.gradients += static_cast<std::size_t>(micro_rows) * acc;
  if (spec.comm_spec.overlap) e.gradients += static_cast<std::size_t>(rows) * acc;
  e.gradients += comm.wire_bytes();
  if (!spec.reproducible) {
    // The gradient kernel's workspace: the fused and team kernels' features + 2 sums, or the BLAS
    // path's residual of a micro-batch and gradient of its columns (in Acc).
    const bool blas = spec.kernel == GradientKernel::kokkos_kernels;
    e.gradients += static_cast<std::size_t>(blas ? micro_rows + F : F + 2) * acc;
    // team: a row of F + 2 partial sums per team of a micro-batch (model/team_kernels.hpp; the
    // micro-batches have micro_rows or one row fewer); with comm.bucket_bytes the windows are
    // narrower and this is an upper bound.
    if (spec.kernel == GradientKernel::team) {
      const long long teams =
          std::max(model_detail::team_count(micro_rows), model_detail::team_count(rows / spec.accumulation));
      e.gradients += static_cast<std::size_t>(teams * (F + 2)) * acc;
    }
    // fused on several host threads: F + 2 sums per chunk of a micro-batch's rows
    // (model/fused_kernels.hpp reduce_items).
    if (spec.kernel == GradientKernel::fused) {
      const long long chunks = fused_chunks(micro_rows, F, s, acc, execution_space().concurrency());
      e.gradients += static_cast<std::size_t>(chunks * (F + 2)) * acc;
    }
    // kokkos_kernels with 16-bit storage reads float copies of a micro-batch's X and of w.
    if (blas && spec.compute != Dtype::fp32 && spec.compute != Dtype::fp64) {
      e.gradients += static_cast<std::size_t>(micro_rows * F + F) * sizeof(float);
    }
  } else {
    // precision.reproducible runs its own kernels: the exact sums' accumulators and z of a
    // micro-batch with a model axis (train/trainer.cpp, ReproState); the model's workspace
    // (model/repro_model.hpp): the sums of a pass over the columns (all of them on host
    // backends), and with one model rank, where the columns take more than one pass (GPU
    // backends), each row's z.
    const long long pass = ReproducibleModel<double>::default_pass_columns(F);
    e.gradients += static_cast<std::size_t>(3 * (F + 2) + 1 + 3 * (pass + 2)) * sizeof(double);
    if (model_size > 1 || pass < F) e.gradients += static_cast<std::size_t>(4 * micro_rows) * sizeof(double);
  }

  const std::size_t vectors = spec.optimizer.name == "adam" ? 2 : spec.optimizer.name == "momentum" ? 1 : 0;
  e.optimizer = vectors * static_cast<std::size_t>(shard) * m;
  return e;
}

}  // namespace

MemoryEstimate estimate_memory(const TrainSpec& spec, const Mesh& mesh) {
  return spec.compute == Dtype::fp64 ? estimate<double>(spec, mesh) : estimate<float>(spec, mesh);
}

}  // namespace kpmap
