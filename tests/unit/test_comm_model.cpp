// The alpha-beta communication model (bench/comm_model.hpp): the fit recovers alpha and beta
// written into a synthetic bench report (exact times t = alpha + beta S, computed here), keeps
// them non-negative, round-trips through its file, and rejects malformed files with the field's
// path; step_collective_keys lists what a step makes, written out by hand for each case.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "kpmap/bench/comm_model.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/train/trainer.hpp"

namespace {

using kpmap::CommModel;
using kpmap::Dtype;
using kpmap::Json;

struct Truth {
  const char* collective;
  const char* axis;
  const char* dtype;
  int ranks;
  double alpha, beta;
};

// A bench report of the given groups over sizes 8, 32, ..., 2 MiB, times exact for each.
Json synthetic_report(const std::vector<Truth>& groups) {
  Json rows = Json::array();
  for (const auto& g : groups) {
    for (long long s = 8; s <= (2 << 20); s *= 4) {
      rows.push_back({{"collective", g.collective},
                      {"dtype", g.dtype},
                      {"axis", g.axis},
                      {"ranks", g.ranks},
                      {"bytes", s},
                      {"count", s / 4},
                      {"time_us", (g.alpha + g.beta * static_cast<double>(s)) * 1e6},
                      {"algbw_gbs", 0.0},
                      {"busbw_gbs", 0.0},
                      {"wrong", 0}});
    }
  }
  return Json{{"bench", rows}};
}

void expect_relative(double got, double want, double tol, const std::string& what) {
  EXPECT_LE(std::abs(got - want), tol * std::abs(want)) << what << ": got " << got << ", want " << want;
}

TEST(CommModel, FitRecoversKnownAlphaAndBeta) {
  const std::vector<Truth> truth{{"psum", "data", "fp32", 2, 3.7e-6, 1.0 / 2.3e9},
                                 {"all_gather", "model", "fp64", 4, 11.0e-6, 1.0 / 0.9e9},
                                 {"psum_scatter", "(data, model)", "bf16", 8, 0.25e-6, 1.0 / 17.0e9}};
  const CommModel model = kpmap::fit_comm_model(synthetic_report(truth), "synthetic.json");
  ASSERT_EQ(model.entries.size(), truth.size());
  EXPECT_EQ(model.source, "synthetic.json");
  for (std::size_t i = 0; i < truth.size(); ++i) {
    const auto& e = model.entries[i];
    const auto& t = truth[i];
    EXPECT_EQ(e.collective, t.collective);
    EXPECT_EQ(e.axis, t.axis);
    EXPECT_EQ(kpmap::to_string(e.dtype), t.dtype);
    EXPECT_EQ(e.ranks, t.ranks);
    expect_relative(e.alpha_s, t.alpha, 1e-9, std::string(t.collective) + " alpha");
    expect_relative(e.beta_s_per_byte, t.beta, 1e-9, std::string(t.collective) + " beta");
    EXPECT_EQ(e.min_bytes, 8);
    EXPECT_EQ(e.max_bytes, 2 << 20);
    EXPECT_EQ(e.points, 10);  // 8 * 4^k for k = 0..9
    EXPECT_LT(e.max_rel_error, 1e-9);
    expect_relative(e.seconds(1000), t.alpha + t.beta * 1000, 1e-9, std::string(t.collective) + " t(1000)");
  }
  EXPECT_NE(model.find("all_gather", "model", Dtype::fp64), nullptr);
  EXPECT_EQ(model.find("all_gather", "model", Dtype::fp32), nullptr);
  EXPECT_EQ(model.find("psum", "model", Dtype::fp32), nullptr);
}

// Relative least squares: the objective the fit minimises, evaluated here.
double objective(const std::vector<double>& x, const std::vector<double>& t, double a, double b) {
  double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += std::pow((a + b * x[i] - t[i]) / t[i], 2);
  return sum;
}

TEST(CommModel, NegativeParametersAreFixedAtZero) {
  // Times that fall with size: the free fit's beta is negative, so beta = 0 and alpha the best
  // constant.
  const std::vector<double> x{100, 1000, 10000}, falling{3e-6, 2e-6, 1e-6};
  const auto flat = kpmap::fit_alpha_beta(x, falling);
  EXPECT_EQ(flat.beta, 0.0);
  EXPECT_GT(flat.alpha, 0.0);
  for (double d : {0.99, 1.01})
    EXPECT_LT(objective(x, falling, flat.alpha, 0), objective(x, falling, flat.alpha * d, 0));
  // t = beta (S - 500): a negative intercept, so alpha = 0 and beta the best slope through 0.
  const std::vector<double> xs{1000, 4000, 16000}, ts{0.5e-6, 3.5e-6, 15.5e-6};
  const auto origin = kpmap::fit_alpha_beta(xs, ts);
  EXPECT_EQ(origin.alpha, 0.0);
  EXPECT_GT(origin.beta, 0.0);
  for (double d : {0.99, 1.01})
    EXPECT_LT(objective(xs, ts, 0, origin.beta), objective(xs, ts, 0, origin.beta * d));
}

TEST(CommModel, FitNeedsTwoSizes) {
  EXPECT_THROW(kpmap::fit_alpha_beta({64, 64}, {1e-6, 2e-6}), kpmap::InputError);
  Json one = synthetic_report({{"psum", "data", "fp32", 2, 1e-6, 1e-9}});
  one["bench"] = Json::array({one["bench"][0]});
  try {
    kpmap::fit_comm_model(one, "one.json");
    FAIL() << "a group of one size was fitted";
  } catch (const kpmap::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "one.json: psum over data in fp32: fit: needs at least two distinct message sizes"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(kpmap::fit_comm_model(Json{{"history", Json::array()}}, "train.json"), kpmap::InputError);
}

TEST(CommModel, FileRoundTrips) {
  const CommModel model =
      kpmap::fit_comm_model(synthetic_report({{"psum", "data", "fp64", 4, 9.5e-6, 1.0 / 3.1e9},
                                              {"pmax", "model", "fp64", 2, 1e-6, 0.0}}),
                            "bench.json");
  const std::string path = std::string(KPMAP_TEST_TMPDIR) + "/comm_model_roundtrip.json";
  {
    std::ofstream out(path);
    out << kpmap::to_json(model).dump(2);
  }
  const CommModel back = kpmap::read_comm_model(path, "comm.model");
  EXPECT_EQ(kpmap::to_json(back), kpmap::to_json(model));
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[0].alpha_s, model.entries[0].alpha_s);  // bit for bit
  EXPECT_EQ(back.entries[0].beta_s_per_byte, model.entries[0].beta_s_per_byte);
  EXPECT_EQ(back.entries[1].axis, "model");
  std::remove(path.c_str());
}

std::string error_of(const Json& json) {
  try {
    kpmap::comm_model_from_json(json, "comm.model: m.json");
  } catch (const kpmap::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CommModel, MalformedModelsNameTheField) {
  const Json good = kpmap::to_json(
      kpmap::fit_comm_model(synthetic_report({{"psum", "data", "fp32", 2, 1e-6, 1e-9}}), "b.json"));
  Json j = good;
  j["kind"] = "kpmap.report";
  EXPECT_NE(error_of(j).find("comm.model: m.json: kind: 'kpmap.report' is not allowed"), std::string::npos)
      << error_of(j);
  j = good;
  j["entries"][0].erase("beta_s_per_byte");
  EXPECT_NE(error_of(j).find("entries[0].beta_s_per_byte: missing"), std::string::npos) << error_of(j);
  j = good;
  j["entries"][0]["alpha_s"] = -1.0;
  EXPECT_NE(error_of(j).find("entries[0].alpha_s: -1"), std::string::npos) << error_of(j);
  j = good;
  j["entries"][0]["dtype"] = "fp8";
  EXPECT_NE(error_of(j).find("entries[0].dtype: 'fp8' is not allowed"), std::string::npos) << error_of(j);
  j = good;
  j["entries"].push_back(j["entries"][0]);
  EXPECT_NE(error_of(j).find("entries[1].collective: 'psum' over 'data' in fp32 is listed twice"),
            std::string::npos)
      << error_of(j);
  EXPECT_NE(error_of(Json::array()).find("kind: missing"), std::string::npos);
  try {
    kpmap::read_comm_model("/nonexistent/model.json", "deck.yaml:3:10: comm.model");
    FAIL();
  } catch (const kpmap::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("deck.yaml:3:10: comm.model: /nonexistent/model.json: cannot open"),
              std::string::npos)
        << e.what();
  }
}

// What each configuration's step makes, written out from docs/train.md.
TEST(CommModel, StepCollectiveKeys) {
  using kpmap::CollectiveKey;
  using kpmap::MeshAxis;
  kpmap::TrainSpec spec;
  spec.compute = spec.params = spec.comm = Dtype::fp64;
  const auto keys = [&](std::vector<MeshAxis> axes) { return kpmap::step_collective_keys(spec, axes); };
  EXPECT_TRUE(keys({{"data", 1}}).empty());
  EXPECT_EQ(keys({{"data", 4}}), (std::vector<CollectiveKey>{{"psum", "data", Dtype::fp64}}));
  // A model axis: the ranks' reduced sums differ, so the finite check's flag travels every step.
  EXPECT_EQ(keys({{"data", 2}, {"model", 2}}),
            (std::vector<CollectiveKey>{{"psum", "model", Dtype::fp64},
                                        {"psum", "data", Dtype::fp64},
                                        {"pmin", "(data, model)", Dtype::fp32}}));
  EXPECT_EQ(keys({{"data", 1}, {"model", 2}}),
            (std::vector<CollectiveKey>{{"psum", "model", Dtype::fp64}, {"pmin", "(data, model)", Dtype::fp32}}));
  // bf16 data, fp32 master weights, a bf16 wire, ZeRO and a dynamic loss scale.
  spec.compute = Dtype::bf16;
  spec.params = Dtype::fp32;
  spec.comm = Dtype::bf16;
  spec.comm_spec.strategy = kpmap::CommStrategy::reduce_scatter;
  spec.loss_scale.kind = kpmap::LossScaleSpec::Kind::dynamic;
  EXPECT_EQ(keys({{"data", 2}, {"model", 2}}),
            (std::vector<CollectiveKey>{{"psum", "model", Dtype::fp32},
                                        {"psum_scatter", "data", Dtype::bf16},
                                        {"pmin", "(data, model)", Dtype::fp32},
                                        {"all_gather", "data", Dtype::bf16}}));
  // fp32 data with an fp32 wire and no scale: the sums travel as they are.
  spec.compute = spec.comm = Dtype::fp32;
  spec.comm_spec.strategy = kpmap::CommStrategy::allreduce;
  spec.loss_scale.kind = kpmap::LossScaleSpec::Kind::none;
  EXPECT_EQ(keys({{"data", 4}}), (std::vector<CollectiveKey>{{"psum", "data", Dtype::fp32}}));
  // Reproducible sums: exact accumulators in fp64, and the bound of max |w| over model.
  spec.reproducible = true;
  EXPECT_EQ(keys({{"data", 2}, {"model", 2}}), (std::vector<CollectiveKey>{{"pmax", "model", Dtype::fp64},
                                                                           {"psum", "model", Dtype::fp64},
                                                                           {"psum", "data", Dtype::fp64}}));
}

}  // namespace
