#include "kpmap/bench/table.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "kpmap/config/config.hpp"  // to_string(Dtype)

namespace kpmap {

namespace {

// How nccl-tests names the operation, and its busbw factor as a formula.
const char* nccl_name(Collective c) {
  switch (c) {
    case Collective::psum:
    case Collective::pmean:
    case Collective::pmax:
    case Collective::pmin:
      return "all-reduce, busbw = algbw * 2(n-1)/n";
    case Collective::psum_reproducible:
      return "all-reduce, reproducible (psum's data on the wire: 2 doubles per element), busbw = algbw * 2(n-1)/n";
    case Collective::all_gather:
      return "all-gather, busbw = algbw * (n-1)/n";
    case Collective::psum_scatter:
      return "reduce-scatter, busbw = algbw * (n-1)/n";
    case Collective::all_to_all:
      return "all-to-all, busbw = algbw * (n-1)/n";
    case Collective::ppermute:
      return "cyclic shift (send/recv), busbw = algbw";
    case Collective::pbroadcast:
      return "broadcast from axis index 0, busbw = algbw";
  }
  return "?";
}

std::string columns(const char* first, const char* count, const char* type, const char* redop,
                    const char* axis, const char* time, const char* algbw, const char* busbw,
                    const char* wrong, int axis_width) {
  char line[256];
  std::snprintf(line, sizeof line, "#%11s  %12s  %6s  %6s  %*s  %10s  %8s  %8s  %7s", first, count, type,
                redop, axis_width, axis, time, algbw, busbw, wrong);
  return line;
}

// The plain MPI call's columns (bench.baseline: mpi), appended to the line.
std::string baseline_columns(const char* time, const char* busbw, const char* overhead) {
  char line[64];
  std::snprintf(line, sizeof line, "  %10s  %8s  %8s", time, busbw, overhead);
  return line;
}

// The fields of one row, in the order of bench_json and the CSV header.
std::vector<std::pair<const char*, Json>> fields(const BenchRow& r, bool baseline) {
  std::vector<std::pair<const char*, Json>> f{{"collective", to_string(r.collective)},
                                              {"dtype", to_string(r.dtype)},
                                              {"axis", r.axis},
                                              {"ranks", r.ranks},
                                              {"bytes", r.bytes},
                                              {"count", r.count},
                                              {"time_us", r.time_us},
                                              {"algbw_gbs", r.algbw_gbs},
                                              {"busbw_gbs", r.busbw_gbs},
                                              {"wrong", r.wrong}};
  if (baseline) {
    f.emplace_back("baseline_time_us", r.baseline_time_us);
    f.emplace_back("baseline_busbw_gbs", r.baseline_busbw_gbs);
    f.emplace_back("overhead", overhead(r));
  }
  return f;
}

}  // namespace

BenchTable::BenchTable(std::ostream& out, const BenchSpec& spec)
    : out_(out), axis_width_(4), baseline_(spec.baseline) {
  for (const auto& a : spec.axes) axis_width_ = std::max(axis_width_, static_cast<int>(a.str().size()));
}

void BenchTable::header(const std::string& title) {
  out_ << "# " << title << "\n#\n"
       << columns("size", "count", "type", "redop", "axis", "time", "algbw", "busbw", "#wrong", axis_width_)
       << (baseline_ ? baseline_columns("mpi time", "mpi busbw", "overhead") : "") << '\n'
       << columns("(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", axis_width_)
       << (baseline_ ? baseline_columns("(us)", "(GB/s)", "") : "") << std::endl;
}

void BenchTable::row(const BenchRow& row) {
  const std::string block = to_string(row.collective) + " over " + row.axis;
  if (block != block_) {
    block_ = block;
    out_ << "# " << block << " (" << row.ranks << (row.ranks == 1 ? " rank" : " ranks")
         << "): " << nccl_name(row.collective) << ", factor " << busbw_factor(row.collective, row.ranks)
         << '\n';
  }
  out_ << format_row(row, axis_width_, baseline_) << std::endl;
}

void BenchTable::footer(const std::vector<BenchRow>& rows) {
  const std::int64_t wrong = total_wrong(rows);
  char line[160];
  std::snprintf(line, sizeof line, "# Out of bounds values : %lld %s\n# Avg bus bandwidth    : %g",
                static_cast<long long>(wrong), wrong == 0 ? "OK" : "FAILED", average_busbw(rows));
  out_ << line << "\n#" << std::endl;
}

std::string format_row(const BenchRow& row, int axis_width, bool baseline) {
  char line[320];
  const int used =
      std::snprintf(line, sizeof line, "%12lld  %12lld  %6s  %6s  %*s  %10.2f  %8.2f  %8.2f  %7lld",
                    static_cast<long long>(row.bytes), static_cast<long long>(row.count),
                    to_string(row.dtype).c_str(), redop(row.collective), axis_width, row.axis.c_str(),
                    row.time_us, row.algbw_gbs, row.busbw_gbs, static_cast<long long>(row.wrong));
  if (baseline && used > 0 && used < static_cast<int>(sizeof line)) {
    std::snprintf(line + used, sizeof line - used, "  %10.2f  %8.2f  %8.3f", row.baseline_time_us,
                  row.baseline_busbw_gbs, overhead(row));
  }
  return line;
}

std::int64_t total_wrong(const std::vector<BenchRow>& rows) {
  std::int64_t wrong = 0;
  for (const auto& r : rows) wrong += r.wrong;
  return wrong;
}

double average_busbw(const std::vector<BenchRow>& rows) {
  double sum = 0;
  for (const auto& r : rows) sum += r.busbw_gbs;
  return rows.empty() ? 0.0 : sum / static_cast<double>(rows.size());
}

Json bench_json(const std::vector<BenchRow>& rows, bool baseline) {
  Json out = Json::array();
  for (const auto& r : rows) {
    Json row = Json::object();
    for (auto& [name, value] : fields(r, baseline)) row[name] = std::move(value);
    out.push_back(std::move(row));
  }
  return out;
}

std::string bench_csv(const std::vector<BenchRow>& rows, bool baseline) {
  std::string csv;
  const BenchRow none{};
  for (const auto& [name, value] : fields(none, baseline)) csv += (csv.empty() ? "" : ",") + std::string(name);
  csv += '\n';
  for (const auto& r : rows) {
    std::string line;
    for (const auto& [name, value] : fields(r, baseline)) {
      // Axis tuples contain a comma: "(data, model)" is quoted.
      const std::string text = value.is_string() ? value.get<std::string>() : value.dump();
      line += (line.empty() ? "" : ",") + (text.find(',') == std::string::npos ? text : '"' + text + '"');
    }
    csv += line + '\n';
  }
  return csv;
}

}  // namespace kpmap
