#include "kpmap/app/bench_mode.hpp"

#include <iostream>
#include <sstream>

#include "kpmap/bench/table.hpp"
#include "kpmap/core/error.hpp"

namespace kpmap {

BenchSpec bench_spec(const Config& config) {
  const BenchConfig& b = config.bench;
  BenchSpec spec;
  for (const auto& name : b.collectives) spec.collectives.push_back(parse_collective(name));
  spec.dtypes = b.dtypes;
  for (const auto& names : b.axes) spec.axes.emplace_back(names);
  spec.min_bytes = b.min_bytes;
  spec.max_bytes = b.max_bytes;
  spec.factor = b.factor;
  spec.iterations = static_cast<int>(b.iterations);
  spec.warmup = static_cast<int>(b.warmup);
  spec.baseline = b.baseline == "mpi";
  return spec;
}

Json bench_report(const Config& config, const Mesh& mesh, const std::vector<BenchRow>& rows) {
  Json report = report_header(config.resolved, mesh);
  report["bench"] = bench_json(rows, config.bench.baseline == "mpi");
  report["summary"] = {{"wrong", total_wrong(rows)}, {"avg_busbw_gbs", average_busbw(rows)}};
  return report;
}

int run_bench(const Config& config, const Mesh& mesh) {
  const BenchSpec spec = bench_spec(config);
  // Only rank 0 prints; the others format into a sink.
  std::ostringstream sink;
  BenchTable table(mesh.rank() == 0 ? std::cout : sink, spec);
  std::ostringstream title;
  title << "kpmap bench: " << config.deck << " on mesh " << mesh.describe() << " (" << mesh.size()
        << (mesh.size() == 1 ? " rank" : " ranks") << "), " << spec.min_bytes << " to " << spec.max_bytes
        << " B (factor " << spec.factor << "), " << spec.warmup << " warmup + " << spec.iterations
        << " timed iterations, out of place" << (spec.baseline ? ", each after the plain MPI call" : "");
  table.header(title.str());
  const auto rows = run_sweep(mesh, spec, [&](const BenchRow& row) {
    table.row(row);
    sink.str("");
  });
  table.footer(rows);
  write_report(mesh.comm(), config.output.report, bench_report(config, mesh, rows));
  write_text(mesh.comm(), config.output.csv, bench_csv(rows, spec.baseline), "the CSV");
  if (mesh.rank() == 0 && !config.output.report.empty())
    std::cout << "report " << config.output.report << std::endl;
  if (mesh.rank() == 0 && !config.output.csv.empty()) std::cout << "csv " << config.output.csv << std::endl;
  // Every rank holds the same summed counts, so every rank fails alike.
  const std::int64_t wrong = total_wrong(rows);
  if (wrong > 0) {
    if (mesh.rank() == 0) {
      std::cerr << "kpmap: error: bench: " << wrong
                << " result elements differ from their expected values (the #wrong column)" << std::endl;
    }
    return exit_runtime;
  }
  return exit_success;
}

}  // namespace kpmap
