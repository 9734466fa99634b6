#include "kpmap/config/sections.hpp"

#include <algorithm>

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

Dtype parse_dtype(Section& s, const std::string& key, const std::string& fallback) {
  const std::string d = s.choice(key, fallback, {"fp64", "fp32"}, {"bf16", "fp16"});
  return d == "fp64" ? Dtype::fp64 : Dtype::fp32;
}

}  // namespace

ProblemConfig parse_problem(Section& s) {
  ProblemConfig p;
  require(s, "samples", "an integer >= 1");
  require(s, "features", "an integer >= 1");
  p.samples = s.integer("samples", p.samples, 1, unbounded);
  p.features = s.integer("features", p.features, 1, unbounded);
  p.bias = s.boolean("bias", p.bias);
  p.noise = s.number("noise", p.noise, non_negative);
  p.seed = s.integer("seed", p.seed, 0, unbounded);
  p.source = s.choice("source", p.source, {"synthetic"});
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
  t.kernel = s.choice("kernel", t.kernel, {"fused", "kokkos_kernels"});
  Section optimizer = s.section("optimizer");
  t.optimizer = parse_optimizer(optimizer);
  s.finish();
  return t;
}

PrecisionConfig parse_precision(Section& s) {
  PrecisionConfig p;
  p.compute = parse_dtype(s, "compute", "fp32");
  // params and comm follow compute unless given, so `compute: fp64` alone is a valid deck.
  for (const char* key : {"params", "comm"}) {
    const Dtype d = parse_dtype(s, key, to_string(p.compute));
    if (d != p.compute) {
      s.fail(key, to_string(d) + " differs from precision.compute " + to_string(p.compute) +
                      "; mixed precision is not available in this build yet (allowed: " +
                      to_string(p.compute) + ", the same as precision.compute)");
    }
    (std::string(key) == "params" ? p.params : p.comm) = d;
  }
  p.loss_scale = s.choice("loss_scale", p.loss_scale, {"none"});
  s.finish();
  return p;
}

CommConfig parse_comm(Section& s) {
  CommConfig c;
  c.strategy = s.choice("strategy", c.strategy, {"allreduce"}, {"reduce_scatter"});
  c.bucket_bytes = s.integer("bucket_bytes", c.bucket_bytes, 0, unbounded);
  if (c.bucket_bytes != 0) {
    s.fail("bucket_bytes", std::to_string(c.bucket_bytes) +
                               ": bucketed communication is not available in this build yet (allowed: 0)");
  }
  c.overlap = s.boolean("overlap", c.overlap);
  if (c.overlap) {
    s.fail("overlap", "true: overlapping communication with compute is not available in this build "
                      "yet (allowed: false)");
  }
  s.finish();
  return c;
}

nlohmann::ordered_json to_json(const ProblemConfig& p) {
  return {{"samples", p.samples}, {"features", p.features}, {"bias", p.bias},
          {"noise", p.noise},     {"seed", p.seed},         {"source", p.source}};
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
          {"kernel", t.kernel}, {"optimizer", o}};
}

nlohmann::ordered_json to_json(const PrecisionConfig& p) {
  return {{"compute", to_string(p.compute)},
          {"params", to_string(p.params)},
          {"comm", to_string(p.comm)},
          {"loss_scale", p.loss_scale}};
}

nlohmann::ordered_json to_json(const CommConfig& c) {
  return {{"strategy", c.strategy}, {"bucket_bytes", c.bucket_bytes}, {"overlap", c.overlap}};
}

}  // namespace kpmap::config
