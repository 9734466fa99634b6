#include "kpmap/config/sections.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace kpmap::config {

namespace {

const Interval positive{0.0, Interval().hi, true, false};
const Interval non_negative{0.0, Interval().hi, false, false};
const Interval unit_open{0.0, 1.0, false, true};  // [0, 1)

void require(const Section& s, const std::string& key, const std::string& what) {
  if (!s.has(key)) s.fail(key, "missing; required (" + what + ")");
}

// The keys each optimizer reads besides name and lr.
std::vector<std::string> optimizer_keys(const std::string& name) {
  if (name == "momentum") return {"momentum"};
  if (name == "adam") return {"beta1", "beta2", "eps"};
  return {};
}

OptimizerConfig parse_optimizer(Section& s) {
  OptimizerConfig o;
  o.name = s.choice("name", o.name, {"sgd", "momentum", "adam"});
  o.lr = s.number("lr", o.lr, positive);
  const auto own = optimizer_keys(o.name);
  // A key of another optimizer would be ignored by this one: reject it rather than ignore it.
  for (const std::string key : {"momentum", "beta1", "beta2", "eps"}) {
    if (std::find(own.begin(), own.end(), key) != own.end() || !s.has(key)) continue;
    std::vector<std::string> keys{"name", "lr"};
    keys.insert(keys.end(), own.begin(), own.end());
    s.fail(key, flow(s.node()[key]) + ": does not apply to optimizer '" + o.name +
                    "' (its keys: " + join(keys, ", ") + ")");
  }
  if (o.name == "momentum") o.momentum = s.number("momentum", o.momentum, unit_open);
  if (o.name == "adam") {
    o.beta1 = s.number("beta1", o.beta1, unit_open);
    o.beta2 = s.number("beta2", o.beta2, unit_open);
    o.eps = s.number("eps", o.eps, positive);
  }
  s.finish();
  return o;
}

Dtype dtype_of(const std::string& name);

const std::vector<std::string> all_dtypes{"fp64", "fp32", "bf16", "fp16"};

// precision.loss_scale: none | dynamic | a positive, finite number (a static scale).
void parse_loss_scale(Section& s, PrecisionConfig& p) {
  const YAML::Node n = s.raw("loss_scale");
  if (!s.has("loss_scale")) return;
  const std::string allowed = "none | dynamic | a positive number";
  const std::string text = n.IsScalar() ? n.Scalar() : flow(n);
  if (n.IsScalar() && (text == "none" || text == "dynamic")) {
    p.loss_scale = text;
    return;
  }
  double value = 0;
  try {
    value = n.as<double>();  // YAML's spellings, .nan and .inf included
  } catch (const std::exception&) {
    const std::string hint = closest(text, {"none", "dynamic"});
    s.fail("loss_scale", "'" + text + "' is not allowed (allowed: " + allowed + ")" +
                             (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
  if (!(value > 0) || !std::isfinite(value)) {
    s.fail("loss_scale", text + " is out of range (allowed: " + allowed + ", finite and > 0)");
  }
  p.loss_scale = "static";
  p.static_scale = value;
}

ScalerConfig parse_scaler(Section& s) {
  ScalerConfig c;
  c.init = s.number("init", c.init, positive);
  c.growth_interval = s.integer("growth_interval", c.growth_interval, 1, unbounded);
  c.growth_factor = s.number("growth_factor", c.growth_factor, Interval{1.0, Interval().hi, true, false});
  c.backoff_factor = s.number("backoff_factor", c.backoff_factor, Interval{0.0, 1.0, true, true});
  s.finish();
  return c;
}

// --- bench -------------------------------------------------------------------------------------

const std::vector<std::string> bench_collectives{
    "psum",     "pmean",      "pmax",           "pmin", "all_gather", "psum_scatter", "all_to_all",
    "ppermute", "pbroadcast", "psum_reproducible"};
const std::vector<std::string> bench_dtypes{"fp64", "fp32", "bf16", "fp16"};

// Every element type's count then fits MPI's int counts.
constexpr long long max_message_bytes = 2147483647;
const std::string byte_count_allowed =
    "an integer from 1 to 2147483647, optionally with a binary suffix K, M or G (or KiB, MiB, "
    "GiB): 65536, 64K, 1M";

std::string allowed_one_of(const std::string& w, const std::vector<std::string>& allowed) {
  const std::string hint = closest(w, allowed);
  return "'" + w + "' is not allowed (allowed: " + join(allowed) + ")" +
         (hint.empty() ? "" : "; did you mean '" + hint + "'?");
}

// The list under `key`, which the caller knows is present.
YAML::Node nonempty_list(Section& s, const std::string& key, const std::string& allowed) {
  const YAML::Node n = s.raw(key);
  if (!n.IsSequence() || n.size() == 0) {
    s.fail(key, "expected a non-empty list, got '" + flow(n) + "' (allowed: a list of " + allowed + ")");
  }
  return n;
}

// A list of distinct words from `allowed`; each message names the element ("bench.dtypes[1]").
std::vector<std::string> word_list(Section& s, const std::string& key, std::vector<std::string> fallback,
                                   const std::vector<std::string>& allowed) {
  s.raw(key);  // marks the key read
  if (!s.has(key)) return fallback;
  const YAML::Node n = nonempty_list(s, key, join(allowed));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const YAML::Node e = n[i];
    const std::string item = key + "[" + std::to_string(i) + "]";
    if (!e.IsScalar())
      s.fail_at(e, item, "expected a name, got '" + flow(e) + "' (allowed: " + join(allowed) + ")");
    const std::string w = e.Scalar();
    if (std::find(allowed.begin(), allowed.end(), w) == allowed.end())
      s.fail_at(e, item, allowed_one_of(w, allowed));
    if (std::find(out.begin(), out.end(), w) != out.end()) {
      s.fail_at(e, item, "'" + w + "' is listed twice (allowed: each at most once)");
    }
    out.push_back(w);
  }
  return out;
}

// One entry of bench.axes: an axis name, or a list of distinct axis names (a tuple).
std::vector<std::string> axis_entry(const Section& s, const YAML::Node& e, const std::string& item,
                                    const std::vector<std::string>& names) {
  const std::string allowed = "a mesh axis (" + join(names) + ") or a list of distinct mesh axes";
  const auto name_at = [&](const YAML::Node& node, const std::string& where) {
    if (!node.IsScalar())
      s.fail_at(node, where, "expected an axis name, got '" + flow(node) + "' (allowed: " + allowed + ")");
    const std::string w = node.Scalar();
    if (std::find(names.begin(), names.end(), w) == names.end()) {
      const std::string hint = closest(w, names);
      s.fail_at(node, where,
                "'" + w + "' is not an axis of the mesh (allowed: " + join(names) + ")" +
                    (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    return w;
  };
  if (!e.IsSequence()) return {name_at(e, item)};
  if (e.size() == 0)
    s.fail_at(e, item, "expected an axis or a non-empty list of axes, got '[]' (allowed: " + allowed + ")");
  std::vector<std::string> tuple;
  for (std::size_t j = 0; j < e.size(); ++j) {
    const std::string w = name_at(e[j], item + "[" + std::to_string(j) + "]");
    if (std::find(tuple.begin(), tuple.end(), w) != tuple.end()) {
      s.fail_at(e[j], item + "[" + std::to_string(j) + "]",
                "axis '" + w + "' appears twice in " + flow(e) + " (allowed: " + allowed + ")");
    }
    tuple.push_back(w);
  }
  return tuple;
}

std::vector<std::vector<std::string>> bench_axes(Section& s, const MeshConfig& mesh) {
  std::vector<std::string> names;
  for (const auto& a : mesh.axes) names.push_back(a.name);
  std::vector<std::vector<std::string>> out;
  s.raw("axes");
  if (!s.has("axes")) {
    for (const auto& name : names) out.push_back({name});
    return out;
  }
  const YAML::Node n = nonempty_list(s, "axes", "mesh axes (" + join(names) + ") or lists of them");
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string item = "axes[" + std::to_string(i) + "]";
    auto entry = axis_entry(s, n[i], item, names);
    if (std::find(out.begin(), out.end(), entry) != out.end()) {
      s.fail_at(n[i], item, flow(n[i]) + " is listed twice (allowed: each axis or tuple at most once)");
    }
    out.push_back(std::move(entry));
  }
  return out;
}

// "64K" -> 65536; -1 when `text` is not an integer with an optional binary suffix.
long long parse_byte_count(const std::string& text) {
  std::size_t used = 0;
  long long value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    return -1;
  }
  if (used == 0 || !std::isdigit(static_cast<unsigned char>(text[0]))) return -1;
  const std::string suffix = text.substr(used);
  int shift = 0;
  if (suffix == "K" || suffix == "KiB")
    shift = 10;
  else if (suffix == "M" || suffix == "MiB")
    shift = 20;
  else if (suffix == "G" || suffix == "GiB")
    shift = 30;
  else if (!suffix.empty())
    return -1;
  if (value > (max_message_bytes << 1) >> shift) return max_message_bytes + 1;  // out of range, no overflow
  return value << shift;
}

long long byte_count(Section& s, const std::string& key, long long fallback) {
  const YAML::Node n = s.raw(key);
  if (!s.has(key)) return fallback;
  if (!n.IsScalar())
    s.fail(key, "expected a byte count, got '" + flow(n) + "' (allowed: " + byte_count_allowed + ")");
  const std::string text = n.Scalar();
  const long long value = parse_byte_count(text);
  if (value < 0) s.fail(key, "'" + text + "' is not a byte count (allowed: " + byte_count_allowed + ")");
  if (value < 1 || value > max_message_bytes) {
    s.fail(key, text + " is out of range (allowed: 1 to 2147483647 bytes, 2 GiB - 1)");
  }
  return value;
}

// `name` has passed choice() or word_list() against all_dtypes or bench_dtypes.
Dtype dtype_of(const std::string& name) { return dtype_from_string(name).value(); }

}  // namespace

ProblemConfig parse_problem(Section& s) {
  ProblemConfig p;
  const std::string allowed_sources = "synthetic | hdf5:PATH | csv:PATH";
  p.source = s.string("source", p.source);
  const std::size_t colon = p.source.find(':');
  const std::string kind = p.source.substr(0, colon);
  if (p.source != "synthetic" && !(colon != std::string::npos && (kind == "hdf5" || kind == "csv"))) {
    const std::string hint = closest(kind, {"synthetic", "hdf5", "csv"});
    s.fail("source", "'" + p.source + "' is not allowed (allowed: " + allowed_sources + ")" +
                         (hint.empty() || hint == kind ? "" : "; did you mean '" + hint + "'?"));
  }
  if (p.source != "synthetic" && colon + 1 == p.source.size()) {
    s.fail("source", "'" + p.source + "' names no file (allowed: " + allowed_sources + ")");
  }
  const bool synthetic = p.source == "synthetic";
  if (synthetic) {
    require(s, "samples", "an integer >= 1");
    require(s, "features", "an integer >= 1");
  } else {
    // The data decide these: a file source takes samples and features from the file (a deck that
    // gives them must agree), and has no generator to seed.
    for (const std::string key : {"noise", "seed", "weight_scale"}) {
      if (!s.has(key)) continue;
      s.fail(key, flow(s.node()[key]) + ": does not apply to problem.source '" + p.source +
                      "' (the data come from the file; allowed with source: synthetic)");
    }
  }
  p.samples = s.integer("samples", p.samples, 1, unbounded);
  p.features = s.integer("features", p.features, 1, unbounded);
  p.bias = s.boolean("bias", p.bias);
  if (synthetic) {
    p.noise = s.number("noise", p.noise, non_negative);
    p.seed = s.integer("seed", p.seed, 0, unbounded);
    p.weight_scale = s.number("weight_scale", p.weight_scale, positive);
  }
  s.finish();
  return p;
}

TrainConfig parse_train(Section& s) {
  TrainConfig t;
  t.steps = s.integer("steps", t.steps, 1, unbounded);
  t.batch = s.integer("batch", t.batch, 1, unbounded);
  t.accumulation = s.integer("accumulation", t.accumulation, 1, unbounded);
  if (t.batch % t.accumulation != 0) {
    s.fail("accumulation", std::to_string(t.accumulation) + " does not divide train.batch " +
                               std::to_string(t.batch) +
                               " (micro-batches are batch / accumulation rows; allowed: a divisor of " +
                               std::to_string(t.batch) + ")");
  }
  t.kernel = s.choice("kernel", t.kernel, {"fused", "kokkos_kernels", "team", "auto"});
  Section optimizer = s.section("optimizer");
  t.optimizer = parse_optimizer(optimizer);
  t.max_seconds = s.number("max_seconds", t.max_seconds, non_negative);
  s.finish();
  return t;
}

PrecisionConfig parse_precision(Section& s) {
  PrecisionConfig p;
  p.compute = dtype_of(s.choice("compute", "fp32", all_dtypes));
  // Master weights follow compute (fp32 under 16-bit compute) and the wire follows compute
  // unless given, so `compute: fp64` or `compute: bf16` alone is a valid deck.
  const bool half = size_of(p.compute) == 2;
  p.params = dtype_of(s.choice("params", half ? "fp32" : to_string(p.compute), {"fp64", "fp32"}));
  if (size_of(p.params) < size_of(p.compute)) {
    s.fail("params", to_string(p.params) + " is narrower than precision.compute " + to_string(p.compute) +
                         " (allowed: master weights at least as wide as compute: fp64)");
  }
  p.reproducible = s.boolean("reproducible", false);
  if (p.reproducible && half) {
    s.fail("reproducible", "true needs precision.compute fp64 or fp32 (" + to_string(p.compute) +
                               " is not supported by the reproducible kernels)");
  }
  p.comm = dtype_of(s.choice("comm", p.reproducible ? "fp64" : to_string(p.compute), all_dtypes));
  if (p.reproducible && p.comm != Dtype::fp64) {
    s.fail("comm", to_string(p.comm) + " does not apply with precision.reproducible: true (the exact "
                   "accumulators travel as fp64; allowed: fp64, or leave it unset)");
  }
  parse_loss_scale(s, p);
  if (p.reproducible && p.loss_scale != "none") {
    s.fail("loss_scale", flow(s.node()["loss_scale"]) + " does not apply with precision.reproducible: true "
                         "(fp64 and fp32 need no loss scale; allowed: none)");
  }
  if (s.has("scaler") && p.loss_scale != "dynamic") {
    s.fail("scaler", flow(s.node()["scaler"]) + ": does not apply to loss_scale '" +
                         (p.loss_scale == "static" ? flow(s.node()["loss_scale"]) : p.loss_scale) +
                         "' (allowed only with loss_scale: dynamic)");
  }
  Section scaler = s.section("scaler");
  p.scaler = parse_scaler(scaler);
  s.finish();
  return p;
}

CommConfig parse_comm(Section& s) {
  CommConfig c;
  c.strategy = s.choice("strategy", c.strategy, {"allreduce", "reduce_scatter"});
  c.bucket_bytes = s.integer("bucket_bytes", c.bucket_bytes, 0, unbounded);
  c.overlap = s.boolean("overlap", c.overlap);
  c.model = s.string("model", c.model);
  c.model_where = s.where("model");
  s.finish();
  return c;
}

CheckpointConfig parse_checkpoint(Section& s) {
  CheckpointConfig c;
  c.path = s.string("path", c.path);
  c.every = s.integer("every", c.every, 0, unbounded);
  c.keep = s.integer("keep", c.keep, 1, unbounded);
  c.resume = s.string("resume", c.resume);
  for (const char* key : {"every", "keep"}) {
    if (c.path.empty() && s.has(key)) {
      s.fail(key, flow(s.node()[key]) + " does not apply without checkpoint.path (allowed only with a "
                                        "checkpoint.path: the directory the checkpoints go to)");
    }
  }
  s.finish();
  return c;
}

BenchConfig parse_bench(Section& s, const MeshConfig& mesh) {
  BenchConfig b;
  b.collectives = word_list(s, "collectives", b.collectives, bench_collectives);
  std::vector<std::string> dtype_names;
  for (Dtype d : b.dtypes) dtype_names.push_back(to_string(d));
  b.dtypes.clear();
  for (const auto& name : word_list(s, "dtypes", dtype_names, bench_dtypes))
    b.dtypes.push_back(dtype_of(name));
  const bool reproducible =
      std::find(b.collectives.begin(), b.collectives.end(), "psum_reproducible") != b.collectives.end();
  for (std::size_t i = 0; reproducible && i < b.dtypes.size(); ++i) {
    if (size_of(b.dtypes[i]) == 2) {
      const std::string what = "'" + to_string(b.dtypes[i]) +
                               "' does not apply to psum_reproducible in bench.collectives (allowed with it: fp64, fp32)";
      if (s.has("dtypes")) s.fail_at(s.raw("dtypes")[i], "dtypes[" + std::to_string(i) + "]", what);
      s.fail("collectives", what);
    }
  }
  b.axes = bench_axes(s, mesh);
  b.min_bytes = byte_count(s, "min_bytes", b.min_bytes);
  b.max_bytes = byte_count(s, "max_bytes", b.max_bytes);
  if (b.min_bytes > b.max_bytes) {
    // The message sits at the key the user wrote (max_bytes when both are given).
    const bool at_max = s.has("max_bytes");
    s.fail(at_max ? "max_bytes" : "min_bytes",
           at_max ? std::to_string(b.max_bytes) + " is less than bench.min_bytes " +
                        std::to_string(b.min_bytes) + (s.has("min_bytes") ? "" : " (the default)") +
                        " (allowed: >= " + std::to_string(b.min_bytes) + ")"
                  : std::to_string(b.min_bytes) + " exceeds bench.max_bytes " + std::to_string(b.max_bytes) +
                        " (the default) (allowed: 1 to " + std::to_string(b.max_bytes) + ")");
  }
  b.factor = s.integer("factor", b.factor, 2, unbounded);
  b.iterations = s.integer("iterations", b.iterations, 1, unbounded);
  b.warmup = s.integer("warmup", b.warmup, 0, unbounded);
  b.baseline = s.choice("baseline", b.baseline, {"none", "mpi"});
  s.finish();
  return b;
}

nlohmann::ordered_json to_json(const ProblemConfig& p) {
  if (p.source != "synthetic") {
    return {{"samples", p.samples}, {"features", p.features}, {"bias", p.bias}, {"source", p.source}};
  }
  return {{"samples", p.samples}, {"features", p.features}, {"bias", p.bias},
          {"noise", p.noise},     {"seed", p.seed},         {"weight_scale", p.weight_scale},
          {"source", p.source}};
}

nlohmann::ordered_json to_json(const TrainConfig& t) {
  nlohmann::ordered_json o{{"name", t.optimizer.name}, {"lr", t.optimizer.lr}};
  if (t.optimizer.name == "momentum") o["momentum"] = t.optimizer.momentum;
  if (t.optimizer.name == "adam") {
    o["beta1"] = t.optimizer.beta1;
    o["beta2"] = t.optimizer.beta2;
    o["eps"] = t.optimizer.eps;
  }
  return {{"steps", t.steps},   {"batch", t.batch},   {"accumulation", t.accumulation},
          {"kernel", t.kernel}, {"optimizer", o},   {"max_seconds", t.max_seconds}};
}

nlohmann::ordered_json to_json(const PrecisionConfig& p) {
  nlohmann::ordered_json o{{"compute", to_string(p.compute)},
                           {"params", to_string(p.params)},
                           {"comm", to_string(p.comm)}};
  if (p.loss_scale == "static") {
    o["loss_scale"] = p.static_scale;
  } else {
    o["loss_scale"] = p.loss_scale;
  }
  if (p.loss_scale == "dynamic") {
    o["scaler"] = {{"init", p.scaler.init},
                   {"growth_interval", p.scaler.growth_interval},
                   {"growth_factor", p.scaler.growth_factor},
                   {"backoff_factor", p.scaler.backoff_factor}};
  }
  o["reproducible"] = p.reproducible;
  return o;
}

nlohmann::ordered_json to_json(const CommConfig& c) {
  nlohmann::ordered_json o{{"strategy", c.strategy}, {"bucket_bytes", c.bucket_bytes}, {"overlap", c.overlap}};
  if (!c.model.empty()) o["model"] = c.model;
  return o;
}

nlohmann::ordered_json to_json(const CheckpointConfig& c) {
  nlohmann::ordered_json o{{"path", c.path}};
  if (!c.path.empty()) {  // every and keep apply only with a path
    o["every"] = c.every;
    o["keep"] = c.keep;
  }
  o["resume"] = c.resume;
  return o;
}

nlohmann::ordered_json to_json(const BenchConfig& b) {
  nlohmann::ordered_json dtypes = nlohmann::ordered_json::array(), axes = nlohmann::ordered_json::array();
  for (Dtype d : b.dtypes) dtypes.push_back(to_string(d));
  for (const auto& a : b.axes) {
    if (a.size() == 1)
      axes.push_back(a.front());
    else
      axes.push_back(a);
  }
  return {{"collectives", b.collectives}, {"dtypes", dtypes},         {"axes", axes},
          {"min_bytes", b.min_bytes},     {"max_bytes", b.max_bytes}, {"factor", b.factor},
          {"iterations", b.iterations},   {"warmup", b.warmup},       {"baseline", b.baseline}};
}

}  // namespace kpmap::config
