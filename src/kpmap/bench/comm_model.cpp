#include "kpmap/bench/comm_model.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>

#include "kpmap/core/error.hpp"

namespace kpmap {

namespace {

// Reads the fields of one JSON object, each message naming "<where>: <prefix><key>".
class Fields {
 public:
  Fields(const Json& object, std::string where, std::string prefix = "")
      : object_(object), where_(std::move(where)), prefix_(std::move(prefix)) {}

  const Json& at(const std::string& key, bool (Json::*is)() const, const char* expected) const {
    if (!object_.is_object() || !object_.contains(key))
      fail(key, "missing (expected " + std::string(expected) + ")");
    const Json& v = object_.at(key);
    if (!(v.*is)()) fail(key, v.dump() + " is not " + expected);
    return v;
  }
  std::string text(const std::string& key) const {
    return at(key, &Json::is_string, "a string").get<std::string>();
  }
  double number(const std::string& key, double lo) const {
    const double v = at(key, &Json::is_number, "a number").get<double>();
    if (!std::isfinite(v) || v < lo)
      fail(key, std::to_string(v) + " is out of range (allowed: finite and >= " + std::to_string(lo) + ")");
    return v;
  }
  std::int64_t integer(const std::string& key, std::int64_t lo) const {
    const std::int64_t v = at(key, &Json::is_number_integer, "an integer").get<std::int64_t>();
    if (v < lo) fail(key, std::to_string(v) + " is out of range (allowed: >= " + std::to_string(lo) + ")");
    return v;
  }
  Dtype dtype(const std::string& key) const {
    const std::string name = text(key);
    const std::optional<Dtype> d = dtype_from_string(name);
    if (!d) fail(key, "'" + name + "' is not allowed (allowed: fp64 | fp32 | bf16 | fp16)");
    return *d;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(where_ + ": " + prefix_ + key + ": " + what);
  }

 private:
  const Json& object_;
  std::string where_, prefix_;
};

}  // namespace

const CommModelEntry* CommModel::find(const std::string& collective, const std::string& axis,
                                      Dtype dtype) const {
  for (const auto& e : entries) {
    if (e.collective == collective && e.axis == axis && e.dtype == dtype) return &e;
  }
  return nullptr;
}

AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t) {
  if (x.size() != t.size())
    throw InputError("fit: " + std::to_string(x.size()) + " sizes but " + std::to_string(t.size()) +
                     " times");
  double sw = 0, swx = 0, swt = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!(t[i] > 0) || !std::isfinite(t[i]))
      throw InputError("fit: time " + std::to_string(t[i]) + " is not > 0");
    const double w = 1.0 / (t[i] * t[i]);
    sw += w;
    swx += w * x[i];
    swt += w * t[i];
  }
  // Centred on the weighted mean size, so that sizes of 10^9 bytes lose no digits.
  const double xm = sw > 0 ? swx / sw : 0.0;
  double sxx = 0, sxt = 0, sxx0 = 0, sxt0 = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double w = 1.0 / (t[i] * t[i]), d = x[i] - xm;
    sxx += w * d * d;
    sxt += w * d * t[i];
    sxx0 += w * x[i] * x[i];
    sxt0 += w * x[i] * t[i];
  }
  if (!(sxx > 0)) throw InputError("fit: needs at least two distinct message sizes");
  AlphaBeta f;
  f.beta = sxt / sxx;
  f.alpha = swt / sw - f.beta * xm;
  if (f.alpha < 0) {  // through the origin: t = beta x
    f.alpha = 0;
    f.beta = sxt0 / sxx0;
  } else if (f.beta < 0) {  // a constant: t = alpha
    f.beta = 0;
    f.alpha = swt / sw;
  }
  return f;
}

CommModel fit_comm_model(const Json& report, const std::string& source) {
  if (!report.is_object() || !report.contains("bench") || !report["bench"].is_array()) {
    throw InputError(source +
                     ": not a bench report (expected a JSON object with a \"bench\" list of rows, as mode "
                     "bench writes)");
  }
  struct Group {
    CommModelEntry entry;
    std::vector<double> bytes, seconds;
  };
  std::vector<Group> groups;
  const Json& rows = report["bench"];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Fields f(rows[i], source, "bench[" + std::to_string(i) + "].");
    CommModelEntry key;
    key.collective = f.text("collective");
    key.axis = f.text("axis");
    key.dtype = f.dtype("dtype");
    key.ranks = static_cast<int>(f.integer("ranks", 1));
    const std::int64_t bytes = f.integer("bytes", 1);
    const double us = f.number("time_us", 0);
    if (!(us > 0)) f.fail("time_us", "0 is out of range (allowed: > 0)");
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
      return x.entry.collective == key.collective && x.entry.axis == key.axis && x.entry.dtype == key.dtype;
    });
    if (g == groups.end()) {
      groups.push_back({key, {}, {}});
      g = groups.end() - 1;
    }
    g->bytes.push_back(static_cast<double>(bytes));
    g->seconds.push_back(us * 1e-6);
  }
  if (groups.empty()) throw InputError(source + ": the bench report has no rows");
  CommModel model;
  model.source = source;
  for (auto& g : groups) {
    CommModelEntry e = g.entry;
    AlphaBeta f;
    try {
      f = fit_alpha_beta(g.bytes, g.seconds);
    } catch (const InputError& err) {
      throw InputError(source + ": " + e.collective + " over " + e.axis + " in " + to_string(e.dtype) + ": " +
                       err.what() + " (run the bench over at least two sizes)");
    }
    e.alpha_s = f.alpha;
    e.beta_s_per_byte = f.beta;
    e.min_bytes = static_cast<std::int64_t>(*std::min_element(g.bytes.begin(), g.bytes.end()));
    e.max_bytes = static_cast<std::int64_t>(*std::max_element(g.bytes.begin(), g.bytes.end()));
    e.points = static_cast<int>(g.bytes.size());
    for (std::size_t i = 0; i < g.bytes.size(); ++i) {
      const double t = g.seconds[i];
      e.max_rel_error = std::max(e.max_rel_error, std::abs(f.alpha + f.beta * g.bytes[i] - t) / t);
    }
    model.entries.push_back(e);
  }
  return model;
}

Json to_json(const CommModel& model) {
  Json entries = Json::array();
  for (const auto& e : model.entries) {
    entries.push_back({{"collective", e.collective},
                       {"axis", e.axis},
                       {"dtype", to_string(e.dtype)},
                       {"ranks", e.ranks},
                       {"alpha_s", e.alpha_s},
                       {"beta_s_per_byte", e.beta_s_per_byte},
                       {"min_bytes", e.min_bytes},
                       {"max_bytes", e.max_bytes},
                       {"points", e.points},
                       {"max_rel_error", e.max_rel_error}});
  }
  return Json{{"kind", "kpmap.comm_model"}, {"version", 1}, {"source", model.source}, {"entries", entries}};
}

CommModel comm_model_from_json(const Json& json, const std::string& where) {
  const Fields top(json, where);
  if (top.text("kind") != "kpmap.comm_model") {
    top.fail("kind", "'" + json["kind"].get<std::string>() + "' is not allowed (allowed: kpmap.comm_model)");
  }
  if (top.integer("version", 1) != 1)
    top.fail("version", json["version"].dump() + " is not allowed (allowed: 1)");
  CommModel model;
  model.source = top.text("source");
  const Json& entries = top.at("entries", &Json::is_array, "a list");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Fields f(entries[i], where, "entries[" + std::to_string(i) + "].");
    CommModelEntry e;
    e.collective = f.text("collective");
    e.axis = f.text("axis");
    e.dtype = f.dtype("dtype");
    e.ranks = static_cast<int>(f.integer("ranks", 1));
    e.alpha_s = f.number("alpha_s", 0);
    e.beta_s_per_byte = f.number("beta_s_per_byte", 0);
    e.min_bytes = f.integer("min_bytes", 1);
    e.max_bytes = f.integer("max_bytes", e.min_bytes);
    e.points = static_cast<int>(f.integer("points", 2));
    e.max_rel_error = f.number("max_rel_error", 0);
    if (model.find(e.collective, e.axis, e.dtype) != nullptr) {
      f.fail("collective", "'" + e.collective + "' over '" + e.axis + "' in " + to_string(e.dtype) +
                               " is listed twice (allowed: each collective, axis and dtype at most once)");
    }
    model.entries.push_back(e);
  }
  return model;
}

CommModel read_comm_model(const std::string& path, const std::string& where) {
  std::ifstream in(path);
  if (!in)
    throw InputError(where + ": " + path + ": cannot open the model file (no such file, or not readable)");
  Json json;
  try {
    json = Json::parse(in);
  } catch (const Json::exception& e) {
    throw InputError(where + ": " + path + ": malformed JSON: " + e.what());
  }
  return comm_model_from_json(json, where + ": " + path);
}

}  // namespace kpmap
