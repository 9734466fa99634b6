// The alpha-beta communication model (docs/bench.md, "Communication model"): for each
// collective, axis and element type of a bench run, the time of one call of S bytes (the bench's
// `size` convention) is modelled as t(S) = alpha + beta S, fitted to the sweep's rows. The model
// is a small JSON file; a train deck names it (comm.model) to predict its step's communication.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kpmap/core/types.hpp"
#include "kpmap/report/report.hpp"

namespace kpmap {

struct CommModelEntry {
  std::string collective;  // the bench's name: psum, all_gather, psum_scatter, ...
  std::string axis;        // AxisNames::str(): "data", "(data, model)"
  Dtype dtype = Dtype::fp32;
  int ranks = 1;               // n, the size of the axis it was measured on
  double alpha_s = 0;          // seconds per call
  double beta_s_per_byte = 0;  // seconds per byte of S
  std::int64_t min_bytes = 0;  // the sizes it was fitted over
  std::int64_t max_bytes = 0;
  int points = 0;            // rows fitted
  double max_rel_error = 0;  // max over those rows of |t(S) - time| / time

  double seconds(std::int64_t bytes) const { return alpha_s + beta_s_per_byte * static_cast<double>(bytes); }
};

struct CommModel {
  std::string source;  // the bench report it was fitted from
  std::vector<CommModelEntry> entries;

  // The entry of (collective, axis, dtype), or nullptr.
  const CommModelEntry* find(const std::string& collective, const std::string& axis, Dtype dtype) const;
};

struct AlphaBeta {
  double alpha = 0, beta = 0;
};

// The least-squares fit of t = alpha + beta x to the points (x_i, t_i) in relative terms: it
// minimises sum ((alpha + beta x_i - t_i) / t_i)^2, so a sweep over orders of magnitude of x
// weighs every size alike. alpha and beta are kept >= 0: when the free fit gives a negative one,
// it is fixed at 0 and the other fitted alone. Needs two distinct x and every t > 0 (InputError).
AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t);

// One entry per (collective, axis, dtype) of a bench report's rows (bench[].time_us over
// bench[].bytes). `source` names the report in messages and in the model. Throws InputError for a
// report that is not a bench report or a group of fewer than two sizes.
CommModel fit_comm_model(const Json& bench_report, const std::string& source);

// {"kind": "kpmap.comm_model", "version": 1, "source": ..., "entries": [{collective, axis, dtype,
// ranks, alpha_s, beta_s_per_byte, min_bytes, max_bytes, points, max_rel_error}, ...]}
Json to_json(const CommModel& model);
// The inverse; throws InputError "<where>: entries[2].alpha_s: ..." for a malformed model.
CommModel comm_model_from_json(const Json& json, const std::string& where);
// Reads and parses the file; InputError "<where>: FILE: cannot open ..." or "... malformed JSON".
CommModel read_comm_model(const std::string& path, const std::string& where);

}  // namespace kpmap
