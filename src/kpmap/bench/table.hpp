// The sweep's output: an nccl-tests-style table (docs/bench.md) and the report's `bench` rows.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "kpmap/bench/bench.hpp"
#include "kpmap/report/report.hpp"

namespace kpmap {

// Prints the table as rows arrive: the column header first, a comment line naming the collective,
// its axis and busbw factor whenever they change, and the two summary lines at the end.
class BenchTable {
 public:
  BenchTable(std::ostream& out, const BenchSpec& spec);
  void header(const std::string& title);
  void row(const BenchRow& row);
  void footer(const std::vector<BenchRow>& rows);

 private:
  std::ostream& out_;
  int axis_width_;
  bool baseline_;  // the plain MPI columns (BenchSpec::baseline)
  std::string block_;  // the collective and axis of the last row
};

// The line of one row, without the trailing newline: right-aligned columns; with `baseline`
// also the plain MPI call's time and busbw and the overhead.
std::string format_row(const BenchRow& row, int axis_width, bool baseline = false);

std::int64_t total_wrong(const std::vector<BenchRow>& rows);
double average_busbw(const std::vector<BenchRow>& rows);  // 0 for no rows

// [{collective, dtype, axis, ranks, bytes, count, time_us, algbw_gbs, busbw_gbs, wrong}, ...];
// with `baseline` each row also has baseline_time_us, baseline_busbw_gbs and overhead.
Json bench_json(const std::vector<BenchRow>& rows, bool baseline = false);

// The same rows as CSV: a header line of those names, then one line per row.
std::string bench_csv(const std::vector<BenchRow>& rows, bool baseline = false);

}  // namespace kpmap
