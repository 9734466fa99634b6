// The deck loader's contract: every bad deck is an InputError whose message names the file,
// the line, the key path and what is allowed.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "kpmap/app/train_mode.hpp"
#include "kpmap/config/config.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/model/gradient_kernel.hpp"

namespace {

std::string write_deck(const std::string& name, const std::string& text) {
  const std::string path = std::string(KPMAP_TEST_TMPDIR) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

kpmap::Config load(const std::string& text, std::vector<std::string> overrides = {}, int ranks = 4) {
  return kpmap::load_config(write_deck("deck.yaml", text), overrides, ranks);
}

// The message of the InputError that loading `text` raises ("" when it loads).
std::string load_error(const std::string& text, std::vector<std::string> overrides = {}, int ranks = 4) {
  const auto path = write_deck("deck.yaml", text);
  try {
    kpmap::load_config(path, overrides, ranks);
  } catch (const kpmap::InputError& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

TEST(Config, MissingFileNamesThePath) {
  try {
    kpmap::load_config("/nonexistent/deck.yaml", {}, 1);
    FAIL() << "no error";
  } catch (const kpmap::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/deck.yaml: cannot open"), std::string::npos) << e.what();
  }
}

TEST(Config, MalformedYamlNamesFileAndLine) {
  const auto msg = load_error("mode: info\nmesh: {axes: {data: 2\nfoo: [1, 2\n");
  EXPECT_NE(msg.find("deck.yaml:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("malformed YAML"), std::string::npos) << msg;
  // The parser stops at line 3 or later (after the unclosed brace), never at line 1.
  EXPECT_EQ(msg.find("deck.yaml:1:"), std::string::npos) << msg;
}

TEST(Config, UnknownModeListsTheAllowedOnesAndSuggests) {
  const auto msg = load_error("mesh: {axes: {data: 4}}\nmode: colectives\n");
  EXPECT_NE(msg.find("deck.yaml:2:7: mode: 'colectives' is not allowed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("train | collectives | bench | info"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'collectives'"), std::string::npos) << msg;
}

TEST(Config, UnknownKeySuggestsTheClosest) {
  const auto msg = load_error("mode: info\nouput: {every: 3}\n");
  EXPECT_NE(msg.find("deck.yaml:2:1: ouput: unknown key; did you mean 'output'?"), std::string::npos) << msg;
}

TEST(Config, MeshProductMustMatchRanks) {
  const auto msg = load_error("mode: info\nmesh: {axes: {data: 3, model: 1}}\n", {}, 4);
  EXPECT_NE(msg.find("mesh.axes: product 3 != 4 ranks"), std::string::npos) << msg;
  EXPECT_NE(msg.find("deck.yaml:2:"), std::string::npos) << msg;
}

TEST(Config, AtMostOneInferredAxis) {
  const auto msg = load_error("mode: info\nmesh: {axes: {data: -1, model: -1}}\n");
  EXPECT_NE(msg.find("'data' and 'model' are both -1"), std::string::npos) << msg;
}

TEST(Config, InferredAxisAndOrderAreKept) {
  const auto path = write_deck("ok.yaml", "mode: info\nmesh: {axes: {model: 2, data: -1}}\n");
  const auto c = kpmap::load_config(path, {}, 4);
  ASSERT_EQ(c.mesh.axes.size(), 2u);
  EXPECT_EQ(c.mesh.axes[0].name, "model");
  EXPECT_EQ(c.mesh.axes[0].size, 2);
  EXPECT_EQ(c.mesh.axes[1].name, "data");
  EXPECT_EQ(c.mesh.axes[1].size, 2);
  EXPECT_EQ(c.resolved["mesh"]["axes"].begin().key(), "model");
}

TEST(Config, WrongTypeNamesKeyAndValue) {
  const auto msg = load_error("mode: info\noutput: {every: often}\n");
  EXPECT_NE(msg.find("deck.yaml:2:17: output.every: 'often' is not an integer"), std::string::npos) << msg;
}

TEST(Config, SetOverridesAndValidatesLikeTheDeck) {
  const auto path = write_deck("set.yaml", "mode: info\noutput: {every: 3}\n");
  const auto c = kpmap::load_config(path, {"output.every=7", "mesh.axes.data=4"}, 4);
  EXPECT_EQ(c.output.every, 7);
  EXPECT_EQ(c.mesh.axes[0].size, 4);
  const auto msg = load_error("mode: info\n", {"output.evry=7"});
  EXPECT_NE(msg.find("output.evry: unknown key; did you mean 'every'?"), std::string::npos) << msg;
  const auto bad = load_error("mode: info\n", {"output.every"});
  EXPECT_NE(bad.find("--set output.every: expected key.path=value"), std::string::npos) << bad;
}

// --- the trainer's sections -------------------------------------------------------------------

// Lines 1-3 of every trainer deck below; the section under test starts at line 4.
const std::string head = "mode: train\nmesh: {axes: {data: -1}}\nproblem: {samples: 4096, features: 8}\n";

// A file source: samples and features wait for the file (0); a relative path in the deck is the
// deck's directory's, one from --set the working directory's; an absolute path stays.
TEST(ConfigTrain, FileSourcePaths) {
  const std::string deck = "mode: train\nproblem: {source: \"csv:data/x.csv\"}\ntrain: {batch: 4}\n";
  const auto c = load(deck);
  EXPECT_EQ(c.problem.samples, 0);
  EXPECT_EQ(c.problem.features, 0);
  EXPECT_EQ(c.problem.source, "csv:data/x.csv");
  EXPECT_EQ(c.problem.data_path, std::string(KPMAP_TEST_TMPDIR) + "/data/x.csv");
  EXPECT_EQ(load(deck, {"problem.source=hdf5:y.h5"}).problem.data_path, "y.h5");
  EXPECT_EQ(load(deck, {"problem.source=hdf5:/abs/y.h5"}).problem.data_path, "/abs/y.h5");
  EXPECT_EQ(load(head).problem.data_path, "");
  EXPECT_FALSE(c.resolved["problem"].contains("seed"));
}

TEST(ConfigTrain, DefaultsFollowTheSchema) {
  const auto c = load(head);
  EXPECT_EQ(c.mode, kpmap::Mode::train);
  EXPECT_EQ(c.problem.samples, 4096);
  EXPECT_EQ(c.problem.features, 8);
  EXPECT_TRUE(c.problem.bias);
  EXPECT_EQ(c.problem.noise, 0.0);
  EXPECT_EQ(c.problem.seed, 42);
  EXPECT_EQ(c.problem.source, "synthetic");
  EXPECT_EQ(c.train.steps, 200);
  EXPECT_EQ(c.train.batch, 1024);
  EXPECT_EQ(c.train.accumulation, 1);
  EXPECT_EQ(c.train.kernel, "auto");  // resolved by the app layer: ResolvedDeck.KernelAutoNamesTheBackendsKernel
  EXPECT_EQ(c.train.optimizer.name, "sgd");
  EXPECT_EQ(c.train.optimizer.lr, 0.05);
  EXPECT_EQ(c.precision.compute, kpmap::Dtype::fp32);
  EXPECT_EQ(c.precision.params, kpmap::Dtype::fp32);
  EXPECT_EQ(c.precision.comm, kpmap::Dtype::fp32);
  EXPECT_EQ(c.precision.loss_scale, "none");
  EXPECT_FALSE(c.precision.reproducible);
  EXPECT_EQ(c.comm.strategy, "allreduce");
  EXPECT_EQ(c.comm.bucket_bytes, 0);
  EXPECT_FALSE(c.comm.overlap);
  EXPECT_EQ(c.output.every, 10);
  EXPECT_EQ(c.output.report, "report.json");
  ASSERT_EQ(c.mesh.axes.size(), 1u);
  EXPECT_EQ(c.mesh.axes[0].name, "data");
  EXPECT_EQ(c.mesh.axes[0].size, 4);
}

TEST(ConfigTrain, EveryKeyIsRead) {
  const auto c = load(
      "mode: train\nmesh: {axes: {model: 2, data: -1}}\n"
      "problem: {samples: 300, features: 5, bias: false, noise: 0.25, seed: 7, source: synthetic}\n"
      "train:\n  steps: 12\n  batch: 96\n  accumulation: 4\n  kernel: kokkos_kernels\n"
      "  optimizer: {name: adam, lr: 0.001, beta1: 0.8, beta2: 0.99, eps: 1.0e-6}\n"
      "precision: {compute: fp64, params: fp64, comm: fp64, loss_scale: none}\n"
      "comm: {strategy: reduce_scatter, bucket_bytes: 16, overlap: true}\n"
      "output: {every: 3, report: ''}\n");
  EXPECT_EQ(c.problem.samples, 300);
  EXPECT_EQ(c.problem.features, 5);
  EXPECT_FALSE(c.problem.bias);
  EXPECT_EQ(c.problem.noise, 0.25);
  EXPECT_EQ(c.problem.seed, 7);
  EXPECT_EQ(c.train.steps, 12);
  EXPECT_EQ(c.train.batch, 96);
  EXPECT_EQ(c.train.accumulation, 4);
  EXPECT_EQ(c.train.kernel, "kokkos_kernels");
  EXPECT_EQ(c.train.optimizer.name, "adam");
  EXPECT_EQ(c.train.optimizer.lr, 0.001);
  EXPECT_EQ(c.train.optimizer.beta1, 0.8);
  EXPECT_EQ(c.train.optimizer.beta2, 0.99);
  EXPECT_EQ(c.train.optimizer.eps, 1.0e-6);
  EXPECT_EQ(c.precision.compute, kpmap::Dtype::fp64);
  EXPECT_EQ(c.precision.params, kpmap::Dtype::fp64);
  EXPECT_EQ(c.precision.comm, kpmap::Dtype::fp64);
  EXPECT_EQ(c.comm.strategy, "reduce_scatter");
  EXPECT_EQ(c.comm.bucket_bytes, 16);
  EXPECT_TRUE(c.comm.overlap);
  EXPECT_EQ(c.output.every, 3);
  EXPECT_EQ(c.output.report, "");
  EXPECT_EQ(c.mesh.axes[0].name, "model");
  EXPECT_EQ(c.mesh.axes[1].size, 2);

  const auto m = load(head + "train: {optimizer: {name: momentum, momentum: 0.5}}\n");
  EXPECT_EQ(m.train.optimizer.name, "momentum");
  EXPECT_EQ(m.train.optimizer.momentum, 0.5);
  const auto d = load(head + "train: {optimizer: {name: adam}}\n");
  EXPECT_EQ(d.train.optimizer.beta1, 0.9);
  EXPECT_EQ(d.train.optimizer.beta2, 0.999);
  EXPECT_EQ(d.train.optimizer.eps, 1e-8);
  EXPECT_EQ(load(head + "train: {optimizer: {name: momentum}}\n").train.optimizer.momentum, 0.9);
}

TEST(ConfigTrain, ParamsAndCommFollowCompute) {
  const auto c = load(head + "precision: {compute: fp64}\n");
  EXPECT_EQ(c.precision.params, kpmap::Dtype::fp64);
  EXPECT_EQ(c.precision.comm, kpmap::Dtype::fp64);
}

// Each deck is `head` plus the lines given; the message must name the file, the line and the
// column of the faulty value, the key path, the value and what is allowed.
struct BadCase {
  std::string lines;
  std::string expected;  // "deck.yaml:L:C: key.path: message"
};

void expect_errors(const std::vector<BadCase>& cases, const std::string& prefix = head) {
  for (const auto& c : cases) {
    const auto msg = load_error(prefix + c.lines);
    EXPECT_NE(msg.find("/" + c.expected), std::string::npos)
        << "deck:\n" << prefix + c.lines << "\nexpected: " << c.expected << "\ngot: " << msg;
  }
}

TEST(ConfigTrain, ProblemTypesAndRanges) {
  const std::string top = "mode: train\nmesh: {axes: {data: -1}}\nproblem:\n";  // keys from line 4
  expect_errors({
      {"  samples: many\n  features: 8\n", "deck.yaml:4:12: problem.samples: 'many' is not an integer"},
      {"  samples: 0\n  features: 8\n", "deck.yaml:4:12: problem.samples: 0 is out of range (allowed: >= 1)"},
      {"  samples: 4096\n  features: 2.5\n", "deck.yaml:5:13: problem.features: '2.5' is not an integer"},
      {"  samples: 4096\n  features: -3\n", "deck.yaml:5:13: problem.features: -3 is out of range (allowed: >= 1)"},
      {"  samples: 4096\n  features: 8\n  bias: maybe\n", "deck.yaml:6:9: problem.bias: 'maybe' is not true or false"},
      {"  samples: 4096\n  features: 8\n  noise: loud\n", "deck.yaml:6:10: problem.noise: 'loud' is not a number"},
      {"  samples: 4096\n  features: 8\n  noise: -0.1\n", "deck.yaml:6:10: problem.noise: -0.1 is out of range (allowed: >= 0)"},
      {"  samples: 4096\n  features: 8\n  noise: .inf\n", "deck.yaml:6:10: problem.noise: '.inf' is not a finite number"},
      {"  samples: 4096\n  features: 8\n  seed: -1\n", "deck.yaml:6:9: problem.seed: -1 is out of range (allowed: >= 0)"},
      {"  samples: 4096\n  features: 8\n  source: file\n",
       "deck.yaml:6:11: problem.source: 'file' is not allowed (allowed: synthetic | hdf5:PATH | csv:PATH)"},
      {"  source: \"hdf5:\"\n", "deck.yaml:4:11: problem.source: 'hdf5:' names no file (allowed: synthetic | hdf5:PATH | csv:PATH)"},
      {"  source: \"hdf:x.h5\"\n",
       "deck.yaml:4:11: problem.source: 'hdf:x.h5' is not allowed (allowed: synthetic | hdf5:PATH | csv:PATH); did you mean 'hdf5'?"},
      {"  source: \"csv:x.csv\"\n  noise: 0.1\n",
       "deck.yaml:5:10: problem.noise: 0.1: does not apply to problem.source 'csv:x.csv' (the data come from the file; allowed with source: synthetic)"},
      {"  samples: 4096\n  features: 8\n  sample: 3\n",
       "deck.yaml:6:3: problem.sample: unknown key; did you mean 'samples'?"},
      {"  features: 8\n", "deck.yaml:4:3: problem.samples: missing; required (an integer >= 1)"},
      {"  samples: 4096\n", "deck.yaml:4:3: problem.features: missing; required (an integer >= 1)"},
  }, top);
  // An absent section has no line: the message names the file and the key.
  EXPECT_NE(load_error("mode: train\n").find("deck.yaml: problem.samples: missing; required"), std::string::npos);
}

TEST(ConfigTrain, TrainTypesAndRanges) {
  expect_errors({
      {"train:\n  steps: 0\n", "deck.yaml:5:10: train.steps: 0 is out of range (allowed: >= 1)"},
      {"train:\n  steps: many\n", "deck.yaml:5:10: train.steps: 'many' is not an integer"},
      {"train:\n  batch: -64\n", "deck.yaml:5:10: train.batch: -64 is out of range (allowed: >= 1)"},
      {"train:\n  batch: 1.5\n", "deck.yaml:5:10: train.batch: '1.5' is not an integer"},
      {"train:\n  accumulation: 0\n", "deck.yaml:5:17: train.accumulation: 0 is out of range (allowed: >= 1)"},
      {"train:\n  kernel: fusd\n",
       "deck.yaml:5:11: train.kernel: 'fusd' is not allowed (allowed: fused | kokkos_kernels | team | auto); did you mean 'fused'?"},
      {"train:\n  kernel: [fused]\n", "deck.yaml:5:11: train.kernel: expected a string, got '[fused]'"},
      {"train: 5\n", "deck.yaml:4:8: train: expected a map of keys, got '5'"},
      {"train:\n  optimizer: sgd\n", "deck.yaml:5:14: train.optimizer: expected a map of keys, got 'sgd'"},
      {"train:\n  step: 3\n", "deck.yaml:5:3: train.step: unknown key; did you mean 'steps'?"},
  });
}

TEST(ConfigTrain, OptimizerTypesRangesAndKeys) {
  const std::string t = "train:\n  optimizer:\n";  // optimizer keys from line 6, value column 4 + len + 3
  expect_errors({
      {t + "    name: adamw\n",
       "deck.yaml:6:11: train.optimizer.name: 'adamw' is not allowed (allowed: sgd | momentum | adam); "
       "did you mean 'adam'?"},
      {t + "    lr: 0\n", "deck.yaml:6:9: train.optimizer.lr: 0 is out of range (allowed: > 0)"},
      {t + "    lr: -0.1\n", "deck.yaml:6:9: train.optimizer.lr: -0.1 is out of range (allowed: > 0)"},
      {t + "    lr: fast\n", "deck.yaml:6:9: train.optimizer.lr: 'fast' is not a number"},
      {t + "    name: momentum\n    momentum: 1\n",
       "deck.yaml:7:15: train.optimizer.momentum: 1 is out of range (allowed: [0, 1))"},
      {t + "    name: momentum\n    momentum: -0.5\n",
       "deck.yaml:7:15: train.optimizer.momentum: -0.5 is out of range (allowed: [0, 1))"},
      {t + "    name: adam\n    beta1: 1.0\n", "deck.yaml:7:12: train.optimizer.beta1: 1.0 is out of range (allowed: [0, 1))"},
      {t + "    name: adam\n    beta2: -0.5\n", "deck.yaml:7:12: train.optimizer.beta2: -0.5 is out of range (allowed: [0, 1))"},
      {t + "    name: adam\n    eps: 0\n", "deck.yaml:7:10: train.optimizer.eps: 0 is out of range (allowed: > 0)"},
      {t + "    name: adam\n    betta1: 0.8\n", "deck.yaml:7:5: train.optimizer.betta1: unknown key; did you mean 'beta1'?"},
      // A key of another optimizer would be silently ignored: rejected instead.
      {t + "    name: sgd\n    beta1: 0.8\n",
       "deck.yaml:7:12: train.optimizer.beta1: 0.8: does not apply to optimizer 'sgd' (its keys: name, lr)"},
      {t + "    momentum: 0.5\n",
       "deck.yaml:6:15: train.optimizer.momentum: 0.5: does not apply to optimizer 'sgd' (its keys: name, lr)"},
      {t + "    name: adam\n    momentum: 0.5\n",
       "deck.yaml:7:15: train.optimizer.momentum: 0.5: does not apply to optimizer 'adam' "
       "(its keys: name, lr, beta1, beta2, eps)"},
      {t + "    name: momentum\n    eps: 1e-6\n",
       "deck.yaml:7:10: train.optimizer.eps: 1e-6: does not apply to optimizer 'momentum' "
       "(its keys: name, lr, momentum)"},
  });
}

TEST(ConfigTrain, PrecisionCombinations) {
  // 16-bit compute: master weights default to fp32, the wire to the compute type.
  auto c = load(head + "precision: {compute: bf16}\n");
  EXPECT_EQ(c.precision.compute, kpmap::Dtype::bf16);
  EXPECT_EQ(c.precision.params, kpmap::Dtype::fp32);
  EXPECT_EQ(c.precision.comm, kpmap::Dtype::bf16);
  c = load(head + "precision: {compute: fp32, params: fp64, comm: fp16, loss_scale: 1024}\n");
  EXPECT_EQ(c.precision.params, kpmap::Dtype::fp64);
  EXPECT_EQ(c.precision.comm, kpmap::Dtype::fp16);
  EXPECT_EQ(c.precision.loss_scale, "static");
  EXPECT_EQ(c.precision.static_scale, 1024.0);
  EXPECT_EQ(c.resolved["precision"].dump(),
            R"({"compute":"fp32","params":"fp64","comm":"fp16","loss_scale":1024.0,"reproducible":false})");
  c = load(head + "precision: {compute: fp16, loss_scale: dynamic, scaler: {growth_interval: 50}}\n");
  EXPECT_EQ(c.precision.loss_scale, "dynamic");
  EXPECT_EQ(c.precision.scaler.growth_interval, 50);
  EXPECT_EQ(c.precision.scaler.init, 65536.0);
  EXPECT_EQ(c.resolved["precision"].dump(),
            R"({"compute":"fp16","params":"fp32","comm":"fp16","loss_scale":"dynamic",)"
            R"("scaler":{"init":65536.0,"growth_interval":50,"growth_factor":2.0,"backoff_factor":0.5},)"
            R"("reproducible":false})");
}

TEST(ConfigTrain, WeightScaleIsPositive) {
  EXPECT_EQ(load(head + "precision: {compute: fp32}\n").problem.weight_scale, 1.0);
  const auto msg = load_error("mode: train\nmesh: {axes: {data: -1}}\n"
                              "problem: {samples: 64, features: 2, weight_scale: 0}\n");
  EXPECT_NE(msg.find("deck.yaml:3:51: problem.weight_scale: 0 is out of range (allowed: > 0)"), std::string::npos) << msg;
}

TEST(ConfigTrain, PrecisionAndCommAcceptTheSchemaAndRejectWhatIsNotBuilt) {
  expect_errors({
      {"precision:\n  compute: fp8\n",
       "deck.yaml:5:12: precision.compute: 'fp8' is not allowed (allowed: fp64 | fp32 | bf16 | fp16)"},
      {"precision:\n  compute: bf16\n  params: fp16\n",
       "deck.yaml:6:11: precision.params: 'fp16' is not allowed (allowed: fp64 | fp32)"},
      {"precision:\n  compute: fp64\n  params: fp32\n",
       "deck.yaml:6:11: precision.params: fp32 is narrower than precision.compute fp64"},
      {"precision:\n  comm: fp8\n",
       "deck.yaml:5:9: precision.comm: 'fp8' is not allowed (allowed: fp64 | fp32 | bf16 | fp16)"},
      {"precision:\n  loss_scale: dynamc\n",
       "deck.yaml:5:15: precision.loss_scale: 'dynamc' is not allowed (allowed: none | dynamic | a positive "
       "number); did you mean 'dynamic'?"},
      {"precision:\n  loss_scale: 0\n", "deck.yaml:5:15: precision.loss_scale: 0 is out of range"},
      {"precision:\n  loss_scale: -8\n", "deck.yaml:5:15: precision.loss_scale: -8 is out of range"},
      {"precision:\n  loss_scale: .nan\n", "deck.yaml:5:15: precision.loss_scale: .nan is out of range"},
      {"precision:\n  loss_scale: nan\n",
       "deck.yaml:5:15: precision.loss_scale: 'nan' is not allowed (allowed: none | dynamic | a positive number)"},
      {"precision:\n  loss_scale: 128\n  scaler: {init: 8}\n",
       "deck.yaml:6:11: precision.scaler: {init: 8}: does not apply to loss_scale '128' (allowed only with "
       "loss_scale: dynamic)"},
      {"precision:\n  scaler: {init: 8}\n",
       "deck.yaml:5:11: precision.scaler: {init: 8}: does not apply to loss_scale 'none'"},
      {"precision:\n  loss_scale: dynamic\n  scaler: {backoff_factor: 1.5}\n",
       "deck.yaml:6:28: precision.scaler.backoff_factor: 1.5 is out of range (allowed: (0, 1))"},
      {"precision:\n  loss_scale: dynamic\n  scaler: {growth_factor: 1}\n",
       "deck.yaml:6:27: precision.scaler.growth_factor: 1 is out of range (allowed: > 1)"},
      {"precision:\n  loss_scale: dynamic\n  scaler: {intervall: 3}\n",
       "deck.yaml:6:12: precision.scaler.intervall: unknown key"},
      {"comm:\n  strategy: ring\n",
       "deck.yaml:5:13: comm.strategy: 'ring' is not allowed (allowed: allreduce | reduce_scatter)"},
      {"comm:\n  bucket_bytes: -1\n", "deck.yaml:5:17: comm.bucket_bytes: -1 is out of range (allowed: >= 0)"},
      {"precision:\n  comm: fp64\ncomm:\n  bucket_bytes: 7\n",
       "deck.yaml:7:17: comm.bucket_bytes: 7 is smaller than one gradient element on the wire (precision.comm "
       "fp64: 8 bytes; allowed: 0 for one message per step, or at least 8)"},
      {"comm:\n  overlap: sometimes\n", "deck.yaml:5:12: comm.overlap: 'sometimes' is not true or false"},
      {"output:\n  every: 0\n", "deck.yaml:5:10: output.every: 0 is out of range (allowed: >= 1)"},
      {"output:\n  report: [a, b]\n", "deck.yaml:5:11: output.report: expected a string, got '[a, b]'"},
      {"trian:\n  steps: 3\n", "deck.yaml:4:1: trian: unknown key; did you mean 'train'?"},
  });
}

TEST(ConfigTrain, ReproducibleSumsAndWhatTheyExclude) {
  const auto c = load(head + "precision: {compute: fp32, reproducible: true}\n");
  EXPECT_TRUE(c.precision.reproducible);
  EXPECT_EQ(c.precision.comm, kpmap::Dtype::fp64);  // the exact accumulators travel as fp64
  EXPECT_EQ(c.resolved["precision"]["reproducible"], true);
  EXPECT_TRUE(load(head + "precision: {compute: fp64, comm: fp64, reproducible: true}\n").precision.reproducible);
  expect_errors({
      {"precision:\n  reproducible: yes please\n",
       "deck.yaml:5:17: precision.reproducible: 'yes please' is not true or false"},
      {"precision:\n  compute: bf16\n  reproducible: true\n",
       "deck.yaml:6:17: precision.reproducible: true needs precision.compute fp64 or fp32 (bf16 is not supported "
       "by the reproducible kernels)"},
      {"precision:\n  comm: fp32\n  reproducible: true\n",
       "deck.yaml:5:9: precision.comm: fp32 does not apply with precision.reproducible: true (the exact "
       "accumulators travel as fp64; allowed: fp64, or leave it unset)"},
      {"precision:\n  reproducible: true\n  loss_scale: 128\n",
       "deck.yaml:6:15: precision.loss_scale: 128 does not apply with precision.reproducible: true"},
      {"precision:\n  reproducible: true\ncomm:\n  strategy: reduce_scatter\n",
       "deck.yaml:7:13: comm.strategy: 'reduce_scatter' does not apply with precision.reproducible: true "
       "(allowed: allreduce)"},
      {"precision:\n  reproducible: true\ncomm:\n  bucket_bytes: 64\n",
       "deck.yaml:7:17: comm.bucket_bytes: 64 does not apply with precision.reproducible: true (allowed: 0)"},
      {"precision:\n  reproducible: true\ncomm:\n  overlap: true\n",
       "deck.yaml:7:12: comm.overlap: true does not apply with precision.reproducible: true (allowed: false)"},
  });
}

// --- rules between keys ----------------------------------------------------------------------

TEST(ConfigRules, BatchAtMostSamples) {
  expect_errors({
      {"train:\n  batch: 4097\n", "deck.yaml:5:10: train.batch: 4097 exceeds problem.samples 4096 (allowed: 1 to 4096)"},
  });
  EXPECT_EQ(load(head + "train: {batch: 4096}\n").train.batch, 4096);
  // The default batch (1024) counts too: the message says it is the default.
  const auto msg = load_error("mode: train\nproblem: {samples: 100, features: 8}\n");
  EXPECT_NE(msg.find("deck.yaml: train.batch: 1024 (the default) exceeds problem.samples 100"), std::string::npos) << msg;
}

TEST(ConfigRules, AccumulationDividesTheBatch) {
  expect_errors({
      {"train:\n  batch: 100\n  accumulation: 3\n",
       "deck.yaml:6:17: train.accumulation: 3 does not divide train.batch 100 (micro-batches are batch / "
       "accumulation rows; allowed: a divisor of 100)"},
      {"train:\n  batch: 4\n  accumulation: 8\n", "deck.yaml:6:17: train.accumulation: 8 does not divide train.batch 4"},
  });
  EXPECT_EQ(load(head + "train: {batch: 100, accumulation: 4}\n").train.accumulation, 4);
  EXPECT_EQ(load(head + "train: {batch: 7, accumulation: 7}\n").train.accumulation, 7);
}

TEST(ConfigRules, TrainMeshAxesAreDataAndModel) {
  const std::string p = "problem: {samples: 4096, features: 8}\n";
  auto msg = load_error("mode: train\nmesh:\n  axes: {i: -1}\n" + p);
  EXPECT_NE(msg.find("deck.yaml:3:13: mesh.axes.i: axis 'i' is not allowed in mode train (allowed: data, model; "
                     "one or both, in either order)"),
            std::string::npos) << msg;
  msg = load_error("mode: train\nmesh:\n  axes: {dat: 2, model: 2}\n" + p);
  EXPECT_NE(msg.find("deck.yaml:3:15: mesh.axes.dat: axis 'dat' is not allowed in mode train"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'data'?"), std::string::npos) << msg;
  // Either order, one or both axes; other modes keep any names.
  EXPECT_EQ(load("mode: train\nmesh: {axes: {model: 2, data: 2}}\n" + p).mesh.axes[0].name, "model");
  EXPECT_EQ(load("mode: train\nmesh: {axes: {model: 4}}\n" + p).mesh.axes[0].size, 4);
  EXPECT_EQ(load("mode: info\nmesh: {axes: {i: -1}}\n" + p).mesh.axes[0].name, "i");
}

TEST(ConfigRules, ModelAxisAtMostFeatures) {
  auto msg = load_error("mode: train\nmesh: {axes: {data: 1, model: -1}}\nproblem: {samples: 64, features: 2}\n"
                        "train: {batch: 64}\n");
  EXPECT_NE(msg.find("deck.yaml:2:31: mesh.axes.model: size 4 (inferred from -1) exceeds problem.features 2 "
                     "(each model rank holds at least one feature; allowed: 1 to 2)"),
            std::string::npos) << msg;
  msg = load_error("mode: train\nmesh: {axes: {model: 4}}\nproblem: {samples: 64, features: 3}\ntrain: {batch: 64}\n");
  EXPECT_NE(msg.find("deck.yaml:2:22: mesh.axes.model: size 4 exceeds problem.features 3"), std::string::npos) << msg;
  EXPECT_EQ(load("mode: train\nmesh: {axes: {model: 4}}\nproblem: {samples: 64, features: 4}\ntrain: {batch: 64}\n")
                .problem.features, 4);
}

TEST(ConfigRules, CollectivesAxisIsAMeshAxis) {
  const auto msg = load_error("mode: collectives\nmesh: {axes: {data: 2, model: 2}}\ncollectives: {axis: modle}\n");
  EXPECT_NE(msg.find("deck.yaml:3:21: collectives.axis: 'modle' is not an axis of the mesh (allowed: data | model); "
                     "did you mean 'model'?"),
            std::string::npos) << msg;
  EXPECT_EQ(load("mode: collectives\nmesh: {axes: {data: 2, model: 2}}\n").collectives.axis, "data");
}

TEST(ConfigRules, OtherModesValidateEveryPresentSection) {
  // Mode info needs no trainer section ...
  const auto c = load("mode: info\nmesh: {axes: {data: -1}}\n");
  std::vector<std::string> keys;
  for (const auto& kv : c.resolved.items()) keys.push_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"mode", "mesh", "collectives", "output"}));
  // ... but one that is present is read completely, rules included.
  auto msg = load_error("mode: info\ntrain: {stepz: 3}\n");
  EXPECT_NE(msg.find("deck.yaml:2:9: train.stepz: unknown key; did you mean 'steps'?"), std::string::npos) << msg;
  msg = load_error("mode: collectives\nproblem: {samples: 10}\n");
  EXPECT_NE(msg.find("problem.features: missing; required"), std::string::npos) << msg;
  msg = load_error("mode: bench\nprecision: {compute: fp16, params: fp16}\n");
  EXPECT_NE(msg.find("deck.yaml:2:36: precision.params: 'fp16' is not allowed"), std::string::npos) << msg;
  msg = load_error("mode: info\nproblem: {samples: 10, features: 2}\ntrain: {batch: 20}\n");
  EXPECT_NE(msg.find("deck.yaml:3:16: train.batch: 20 exceeds problem.samples 10"), std::string::npos) << msg;
}

// --- --set and the resolved deck ------------------------------------------------------------

TEST(ConfigSet, NestedKeysAreOverriddenAndValidated) {
  const auto c = load(head + "train: {optimizer: {name: adam, lr: 0.01}}\n",
                      {"train.optimizer.lr=0.1", "train.optimizer.beta1=0.5", "problem.features=16",
                       "precision.compute=fp64", "comm.overlap=false"});
  EXPECT_EQ(c.train.optimizer.lr, 0.1);
  EXPECT_EQ(c.train.optimizer.beta1, 0.5);
  EXPECT_EQ(c.problem.features, 16);
  EXPECT_EQ(c.precision.params, kpmap::Dtype::fp64);
  // A section the deck lacks is created.
  const auto m = load(head, {"train.optimizer.name=momentum", "train.optimizer.momentum=0.25"});
  EXPECT_EQ(m.train.optimizer.momentum, 0.25);
  // A value given with --set has no line in the deck: the message names the file alone.
  auto msg = load_error(head, {"train.optimizer.lr=-1"});
  EXPECT_NE(msg.find("deck.yaml: train.optimizer.lr: -1 is out of range (allowed: > 0)"), std::string::npos) << msg;
  msg = load_error(head, {"train.optimizer.beta1=0.5"});
  EXPECT_NE(msg.find("deck.yaml: train.optimizer.beta1: 0.5: does not apply to optimizer 'sgd'"), std::string::npos) << msg;
  msg = load_error(head + "train: {optimizer: {lr: 0.1}}\n", {"train.optimizer.lr.x=1"});
  EXPECT_NE(msg.find("--set train.optimizer.lr.x=1: 'lr' is not a map in the deck"), std::string::npos) << msg;
  msg = load_error(head + "train: {optimizer: {lr: 0.1}}\n", {"train.optimizer.lr=[1, 2]"});
  EXPECT_NE(msg.find("deck.yaml: train.optimizer.lr: expected a number, got '[1, 2]'"), std::string::npos) << msg;
  msg = load_error(head, {"train={steps: 0}"});
  EXPECT_NE(msg.find("deck.yaml: train.steps: 0 is out of range (allowed: >= 1)"), std::string::npos) << msg;
}

TEST(ConfigResolved, EveryDefaultInSchemaOrder) {
  const auto c = load("mesh: {axes: {data: 2, model: -1}}\nproblem: {samples: 4096, features: 8}\n"
                      "train: {optimizer: {name: adam}}\noutput: {report: r.json}\n");
  const auto expected = nlohmann::ordered_json::parse(R"({
    "mode": "train",
    "mesh": {"axes": {"data": 2, "model": 2}},
    "problem": {"samples": 4096, "features": 8, "bias": true, "noise": 0.0, "seed": 42,
                "weight_scale": 1.0, "source": "synthetic"},
    "train": {"steps": 200, "batch": 1024, "accumulation": 1, "kernel": "auto",
              "optimizer": {"name": "adam", "lr": 0.05, "beta1": 0.9, "beta2": 0.999, "eps": 1e-8},
              "max_seconds": 0.0},
    "precision": {"compute": "fp32", "params": "fp32", "comm": "fp32", "loss_scale": "none",
                  "reproducible": false},
    "comm": {"strategy": "allreduce", "bucket_bytes": 0, "overlap": false},
    "checkpoint": {"path": "", "resume": ""},
    "output": {"every": 10, "report": "r.json"}})");
  // dump() compares the key order too (ordered_json's == does as well, but says less on failure).
  EXPECT_EQ(c.resolved.dump(), expected.dump());
  // checkpoint.every and keep appear with a path only.
  EXPECT_EQ(load(head + "checkpoint: {path: ck, resume: ck}\n").resolved["checkpoint"].dump(),
            R"({"path":"ck","every":0,"keep":2,"resume":"ck"})");
  // Only the keys of the chosen optimizer appear.
  EXPECT_EQ(load(head).resolved["train"]["optimizer"].dump(), R"({"name":"sgd","lr":0.05})");
  EXPECT_EQ(load(head + "train: {optimizer: {name: momentum}}\n").resolved["train"]["optimizer"].dump(),
            R"({"name":"momentum","lr":0.05,"momentum":0.9})");
}

// train.kernel auto (the default) becomes the backend's kernel in the Config and the resolved
// deck (fused on this host build, team on a GPU one); an explicit value stays.
TEST(ResolvedDeck, KernelAutoNamesTheBackendsKernel) {
  const std::string head = "mesh: {axes: {data: -1}}\nproblem: {samples: 4096, features: 8}\n";
  const std::string backend = kpmap::host_execution_v ? "fused" : "team";
  for (const char* deck : {"", "train: {kernel: auto}\n"}) {
    kpmap::Config c = load(head + deck);
    kpmap::resolve_gradient_kernel(c);
    EXPECT_EQ(c.train.kernel, backend) << deck;
    EXPECT_EQ(c.resolved["train"]["kernel"], backend) << deck;
    EXPECT_EQ(kpmap::train_spec(c).kernel, kpmap::parse_gradient_kernel(backend)) << deck;
  }
  for (const std::string kernel : {"fused", "kokkos_kernels", "team"}) {
    kpmap::Config c = load(head + "train: {kernel: " + kernel + "}\n");
    kpmap::resolve_gradient_kernel(c);
    EXPECT_EQ(c.resolved["train"]["kernel"], kernel);
  }
}

// The fused kernel's widest rows on a GPU backend: Kokkos' CUDA backend refuses a reduction
// whose 34 slots of F + 2 sums exceed 48 KiB of shared memory.
TEST(ResolvedDeck, FusedDeviceLimitIsTheWidestThatFits) {
  for (const std::size_t bytes : {sizeof(double), sizeof(float)}) {
    const long long most = kpmap::fused_device_max_features(bytes);
    EXPECT_LE(34 * (most + 2) * static_cast<long long>(bytes), 49152) << bytes;
    EXPECT_GT(34 * (most + 3) * static_cast<long long>(bytes), 49152) << bytes;
  }
  EXPECT_EQ(kpmap::fused_max_features(8), kpmap::host_execution_v ? -1 : kpmap::fused_device_max_features(8));
  // 178 features with fp64 sums, 359 with fp32, on a GPU; any width on a host backend
  EXPECT_TRUE(kpmap::fused_fits(178, 8));
  EXPECT_EQ(kpmap::fused_fits(179, 8), kpmap::host_execution_v);
  EXPECT_TRUE(kpmap::fused_fits(359, 4));
  EXPECT_EQ(kpmap::fused_fits(360, 4), kpmap::host_execution_v);
}

// train.kernel fused wider than a GPU backend's limit per model rank is refused, naming the key,
// the features per model rank and the limit (check_fused_width, which resolve_gradient_kernel
// calls with the backend's limit; here with a GPU's limit on any backend).
TEST(ResolvedDeck, FusedKernelWiderThanAGpuBlockIsRefused) {
  const auto deck = [](const std::string& axes, long long features, const std::string& kernel) {
    return "mode: train\nmesh: {axes: {" + axes + "}}\nproblem: {samples: 4096, features: " +
           std::to_string(features) + "}\ntrain: {kernel: " + kernel + "}\nprecision: {compute: fp64}\n";
  };
  const long long most = kpmap::fused_device_max_features(sizeof(double));
  EXPECT_NO_THROW(kpmap::check_fused_width(load(deck("data: -1", most, "fused")), most));
  EXPECT_NO_THROW(kpmap::check_fused_width(load(deck("data: 2, model: 2", 2 * most, "fused")), most));
  EXPECT_NO_THROW(kpmap::check_fused_width(load(deck("data: -1", 100000, "team")), most));
  EXPECT_NO_THROW(kpmap::check_fused_width(load(deck("data: -1", 100000, "fused")), -1));
  std::string reproducible = deck("data: -1", most + 1, "fused");  // its own kernels
  reproducible.replace(reproducible.find("compute: fp64"), 13, "compute: fp64, reproducible: true");
  EXPECT_NO_THROW(kpmap::check_fused_width(load(reproducible), most));
  for (const auto& [axes, features] :
       std::vector<std::pair<std::string, long long>>{{"data: -1", most + 1}, {"data: 2, model: 2", 2 * most + 1}}) {
    try {
      kpmap::check_fused_width(load(deck(axes, features, "fused")), most);
      ADD_FAILURE() << axes << ", " << features << " features: no error";
    } catch (const kpmap::InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("train.kernel: 'fused' with " + std::to_string(most + 1) + " features per model rank"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("at most " + std::to_string(most) + " features per model rank"), std::string::npos) << what;
      EXPECT_NE(what.find("team"), std::string::npos) << what;
    }
  }
}

TEST(ConfigResolved, IsAValidDeckThatResolvesToItself) {
  const auto c = load(head + "train: {batch: 96, accumulation: 3, optimizer: {name: momentum, lr: 0.2}}\n"
                      "precision: {compute: fp64}\n");
  const auto again = kpmap::load_config(write_deck("resolved.yaml", c.resolved.dump(2)), {}, 4);
  EXPECT_EQ(again.resolved.dump(), c.resolved.dump());
}

// --- bench ----------------------------------------------------------------------------------

const std::string bench_head = "mode: bench\nmesh: {axes: {data: 2, model: 2}}\n";

TEST(ConfigBench, DefaultsAndResolvedEcho) {
  const auto c = load(bench_head);
  EXPECT_EQ(c.bench.collectives,
            (std::vector<std::string>{"psum", "all_gather", "psum_scatter", "all_to_all"}));
  EXPECT_EQ(c.bench.dtypes, (std::vector<kpmap::Dtype>{kpmap::Dtype::fp32}));
  EXPECT_EQ(c.bench.axes, (std::vector<std::vector<std::string>>{{"data"}, {"model"}}));  // every mesh axis
  EXPECT_EQ(c.bench.min_bytes, 8);
  EXPECT_EQ(c.bench.max_bytes, 1048576);
  EXPECT_EQ(c.bench.factor, 4);
  EXPECT_EQ(c.bench.iterations, 20);
  EXPECT_EQ(c.bench.warmup, 5);
  EXPECT_EQ(c.bench.baseline, "none");
  EXPECT_EQ(c.output.csv, "");
  std::vector<std::string> keys;
  for (const auto& kv : c.resolved.items()) keys.push_back(kv.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"mode", "mesh", "collectives", "bench", "output"}));
  EXPECT_EQ(
      c.resolved["bench"].dump(),
      R"({"collectives":["psum","all_gather","psum_scatter","all_to_all"],"dtypes":["fp32"],)"
      R"("axes":["data","model"],"min_bytes":8,"max_bytes":1048576,"factor":4,"iterations":20,"warmup":5,)"
      R"("baseline":"none"})");
  // Mode train neither needs nor echoes it.
  EXPECT_FALSE(load(head).resolved.contains("bench"));
}

TEST(ConfigBench, EveryKeyIsReadAndResolvesToItself) {
  const auto c =
      load(bench_head +
           "bench:\n  collectives: [ppermute, pbroadcast, pmean, pmax, pmin]\n  dtypes: [fp64, bf16, fp16]\n"
           "  axes: [model, [model, data], [data]]\n  min_bytes: 1K\n  max_bytes: 1MiB\n  factor: 2\n"
           "  iterations: 3\n  warmup: 0\n");
  EXPECT_EQ(c.bench.collectives,
            (std::vector<std::string>{"ppermute", "pbroadcast", "pmean", "pmax", "pmin"}));
  EXPECT_EQ(c.bench.dtypes,
            (std::vector<kpmap::Dtype>{kpmap::Dtype::fp64, kpmap::Dtype::bf16, kpmap::Dtype::fp16}));
  EXPECT_EQ(c.bench.axes, (std::vector<std::vector<std::string>>{{"model"}, {"model", "data"}, {"data"}}));
  EXPECT_EQ(c.bench.min_bytes, 1024);
  EXPECT_EQ(c.bench.max_bytes, 1048576);
  EXPECT_EQ(c.bench.factor, 2);
  EXPECT_EQ(c.bench.iterations, 3);
  EXPECT_EQ(c.bench.warmup, 0);
  EXPECT_EQ(c.resolved["bench"]["axes"].dump(), R"(["model",["model","data"],"data"])");
  const auto again = kpmap::load_config(write_deck("resolved.yaml", c.resolved.dump(2)), {}, 4);
  EXPECT_EQ(again.resolved.dump(), c.resolved.dump());
  // Byte counts take binary suffixes.
  EXPECT_EQ(load(bench_head + "bench: {min_bytes: 64KiB, max_bytes: 1G}\n").bench.max_bytes, 1073741824);
  EXPECT_EQ(load(bench_head + "bench: {min_bytes: 3M}\n", {"bench.max_bytes=3M"}).bench.min_bytes, 3145728);
}

TEST(ConfigBench, ListElementsAreNamedByIndexAndLine) {
  auto msg = load_error(bench_head + "bench: {collectives: [psum, psun]}\n");
  EXPECT_NE(
      msg.find(
          "deck.yaml:3:29: bench.collectives[1]: 'psun' is not allowed (allowed: psum | pmean | pmax | "
          "pmin | all_gather | psum_scatter | all_to_all | ppermute | pbroadcast | psum_reproducible); did you "
          "mean 'psum'?"),
      std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {collectives: [psum, psum_reproducible], dtypes: [fp32, bf16]}\n");
  EXPECT_NE(msg.find("deck.yaml:3:64: bench.dtypes[1]: 'bf16' does not apply to psum_reproducible in "
                     "bench.collectives (allowed with it: fp64, fp32)"),
            std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {dtypes: [fp32, fp8]}\n");
  EXPECT_NE(
      msg.find("deck.yaml:3:24: bench.dtypes[1]: 'fp8' is not allowed (allowed: fp64 | fp32 | bf16 | fp16)"),
      std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {dtypes: [bf16, bf16]}\n");
  EXPECT_NE(msg.find("deck.yaml:3:24: bench.dtypes[1]: 'bf16' is listed twice (allowed: each at most once)"),
            std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {collectives: psum}\n");
  EXPECT_NE(msg.find("deck.yaml:3:22: bench.collectives: expected a non-empty list, got 'psum' (allowed: a "
                     "list of psum"),
            std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {dtypes: []}\n");
  EXPECT_NE(msg.find("bench.dtypes: expected a non-empty list, got '[]'"), std::string::npos) << msg;
  msg = load_error(bench_head + "bench: {collectives: [[psum]]}\n");
  EXPECT_NE(msg.find("deck.yaml:3:23: bench.collectives[0]: expected a name, got '[psum]'"),
            std::string::npos)
      << msg;
  // With --set there is no line: the file alone.
  msg = load_error(bench_head, {"bench.dtypes=[fp32, fp24]"});
  EXPECT_NE(msg.find("deck.yaml: bench.dtypes[1]: 'fp24' is not allowed"), std::string::npos) << msg;
}

TEST(ConfigBench, AxesAreAxesOrTuplesOfTheMesh) {
  auto msg = load_error(bench_head + "bench: {axes: [dta]}\n");
  EXPECT_NE(
      msg.find("deck.yaml:3:16: bench.axes[0]: 'dta' is not an axis of the mesh (allowed: data | model); "
               "did you mean 'data'?"),
      std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {axes: [data, [model, dat]]}\n");
  EXPECT_NE(msg.find("deck.yaml:3:30: bench.axes[1][1]: 'dat' is not an axis of the mesh"), std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {axes: [[data, data]]}\n");
  EXPECT_NE(msg.find("deck.yaml:3:23: bench.axes[0][1]: axis 'data' appears twice in [data, data]"),
            std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {axes: [[]]}\n");
  EXPECT_NE(msg.find("bench.axes[0]: expected an axis or a non-empty list of axes, got '[]'"),
            std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {axes: [data, [data]]}\n");
  EXPECT_NE(msg.find("deck.yaml:3:22: bench.axes[1]: [data] is listed twice"), std::string::npos) << msg;
  msg = load_error(bench_head + "bench: {axes: [[[data]]]}\n");
  EXPECT_NE(msg.find("bench.axes[0][0]: expected an axis name, got '[data]'"), std::string::npos) << msg;
  msg = load_error(bench_head + "bench: {axes: data}\n");
  EXPECT_NE(msg.find("deck.yaml:3:15: bench.axes: expected a non-empty list, got 'data'"), std::string::npos)
      << msg;
}

TEST(ConfigBench, SizesAndCountsAreInRange) {
  auto msg = load_error(bench_head + "bench: {max_bytes: 4}\n");
  EXPECT_NE(
      msg.find(
          "deck.yaml:3:20: bench.max_bytes: 4 is less than bench.min_bytes 8 (the default) (allowed: >= 8)"),
      std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {min_bytes: 2M}\n");
  EXPECT_NE(msg.find("deck.yaml:3:20: bench.min_bytes: 2097152 exceeds bench.max_bytes 1048576 (the default) "
                     "(allowed: 1 to 1048576)"),
            std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {min_bytes: 64, max_bytes: 32}\n");
  EXPECT_NE(msg.find("bench.max_bytes: 32 is less than bench.min_bytes 64 (allowed: >= 64)"),
            std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {max_bytes: 1 MB}\n");
  EXPECT_NE(
      msg.find("deck.yaml:3:20: bench.max_bytes: '1 MB' is not a byte count (allowed: an integer from 1 to "
               "2147483647, optionally with a binary suffix K, M or G"),
      std::string::npos)
      << msg;
  for (const char* bad : {"1.5K", "-8", "K", "8k", "1e6"}) {
    msg = load_error(bench_head + "bench: {min_bytes: " + bad + "}\n");
    EXPECT_NE(msg.find("bench.min_bytes: '" + std::string(bad) + "' is not a byte count"), std::string::npos)
        << msg;
  }
  msg = load_error(bench_head + "bench: {min_bytes: 0}\n");
  EXPECT_NE(msg.find("bench.min_bytes: 0 is out of range (allowed: 1 to 2147483647 bytes"), std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {max_bytes: 2G}\n");
  EXPECT_NE(msg.find("bench.max_bytes: 2G is out of range (allowed: 1 to 2147483647 bytes"),
            std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {max_bytes: 99999999999999999999G}\n");
  EXPECT_NE(msg.find("bench.max_bytes: '99999999999999999999G' is not a byte count"), std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {max_bytes: 8000000000G}\n");
  EXPECT_NE(msg.find("bench.max_bytes: 8000000000G is out of range"), std::string::npos) << msg;
  msg = load_error(bench_head + "bench: {factor: 1}\n");
  EXPECT_NE(msg.find("deck.yaml:3:17: bench.factor: 1 is out of range (allowed: >= 2)"), std::string::npos)
      << msg;
  msg = load_error(bench_head + "bench: {iterations: 0}\n");
  EXPECT_NE(msg.find("bench.iterations: 0 is out of range (allowed: >= 1)"), std::string::npos) << msg;
  msg = load_error(bench_head + "bench: {warmup: -1}\n");
  EXPECT_NE(msg.find("bench.warmup: -1 is out of range (allowed: >= 0)"), std::string::npos) << msg;
  msg = load_error(bench_head + "bench: {warmup: 2, iteration: 3}\n");
  EXPECT_NE(msg.find("deck.yaml:3:20: bench.iteration: unknown key; did you mean 'iterations'?"),
            std::string::npos)
      << msg;
}

TEST(ConfigBench, APresentBenchSectionIsValidatedInEveryMode) {
  auto msg = load_error("mode: info\nbench: {dtypes: [fp8]}\n");
  EXPECT_NE(msg.find("deck.yaml:2:18: bench.dtypes[0]: 'fp8' is not allowed"), std::string::npos) << msg;
  msg = load_error(head + "bench: {factor: 0}\n");
  EXPECT_NE(msg.find("bench.factor: 0 is out of range"), std::string::npos) << msg;
  msg = load_error("mode: bench\nbench: {axes: [model]}\n");  // the default mesh has one axis, data
  EXPECT_NE(msg.find("bench.axes[0]: 'model' is not an axis of the mesh (allowed: data)"), std::string::npos)
      << msg;
}

}  // namespace
