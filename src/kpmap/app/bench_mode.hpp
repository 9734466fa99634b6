// mode: bench — the collective sweep (docs/bench.md): prints an nccl-tests-style table on rank 0,
// writes the JSON report, and fails (exit 1 on every rank) when any result was wrong.
#pragma once

#include <vector>

#include "kpmap/bench/bench.hpp"
#include "kpmap/config/config.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "kpmap/report/report.hpp"

namespace kpmap {

// The sweep's view of the deck.
BenchSpec bench_spec(const Config& config);

// versions, config (resolved), mesh, bench (the rows) and summary {wrong, avg_busbw_gbs}.
Json bench_report(const Config& config, const Mesh& mesh, const std::vector<BenchRow>& rows);

int run_bench(const Config& config, const Mesh& mesh);

}  // namespace kpmap
