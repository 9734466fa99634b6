#include "kpmap/config/config.hpp"

#include <algorithm>

#include "kpmap/config/deck.hpp"
#include "kpmap/config/sections.hpp"

namespace kpmap {

using config::Section;

std::string to_string(Mode mode) {
  switch (mode) {
    case Mode::train: return "train";
    case Mode::collectives: return "collectives";
    case Mode::bench: return "bench";
    case Mode::info: return "info";
  }
  return "?";
}

namespace {

const std::vector<std::string> train_axes{"data", "model"};

Mode parse_mode(Section& deck) {
  const std::string m = deck.choice("mode", "train", {"train", "collectives", "bench", "info"});
  if (m == "collectives") return Mode::collectives;
  if (m == "bench") return Mode::bench;
  if (m == "info") return Mode::info;
  return Mode::train;
}

// The trainer knows two axes: rows of X over `data`, columns over `model`.
void check_train_axis_names(const Section& axes) {
  for (const auto& kv : axes.node()) {
    const std::string name = kv.first.Scalar();
    if (std::find(train_axes.begin(), train_axes.end(), name) != train_axes.end()) continue;
    const std::string hint = config::closest(name, train_axes);
    axes.fail(name, "axis '" + name +
                        "' is not allowed in mode train (allowed: data, model; one or both, in "
                        "either order)" +
                        (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
  }
}

MeshConfig parse_mesh(Section& mesh, Section& axes, Mode mode, int ranks) {
  MeshConfig out;
  if (axes.node().size() == 0) {
    out.axes = {{"data", -1}};
  } else {
    for (const auto& kv : axes.node()) {
      const std::string name = kv.first.Scalar();
      out.axes.push_back({name, static_cast<int>(axes.integer(name, 0, -1, 1 << 20))});
    }
  }
  axes.finish();
  mesh.finish();
  if (mode == Mode::train) check_train_axis_names(axes);
  out.axes = Mesh::resolve(out.axes, ranks, axes.where());
  return out;
}

void parse_collectives(Section& s, Config& c) {
  const bool given = s.has("axis");
  c.collectives.axis = s.string("axis", c.mesh.axes.front().name);
  s.finish();
  if (!given) return;
  std::vector<std::string> names;
  for (const auto& a : c.mesh.axes) names.push_back(a.name);
  if (std::find(names.begin(), names.end(), c.collectives.axis) != names.end()) return;
  const std::string hint = config::closest(c.collectives.axis, names);
  s.fail("axis", "'" + c.collectives.axis + "' is not an axis of the mesh (allowed: " +
                     config::join(names) + ")" + (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
}

// Rules between sections; each message sits at the key the user most likely has to change.
void check_batch(const Config& c, const Section& train) {
  if (c.train.batch <= c.problem.samples) return;
  train.fail("batch", std::to_string(c.train.batch) + (train.has("batch") ? "" : " (the default)") +
                          " exceeds problem.samples " + std::to_string(c.problem.samples) +
                          " (allowed: 1 to " + std::to_string(c.problem.samples) + ")");
}

void check_model_axis(const Config& c, const Section& axes) {
  for (const auto& a : c.mesh.axes) {
    if (a.name != "model" || a.size <= c.problem.features) continue;
    const bool inferred = axes.node()["model"].as<long long>() == -1;
    axes.fail("model", "size " + std::to_string(a.size) + (inferred ? " (inferred from -1)" : "") +
                           " exceeds problem.features " + std::to_string(c.problem.features) +
                           " (each model rank holds at least one feature; allowed: 1 to " +
                           std::to_string(c.problem.features) + ")");
  }
}

// A bucket holds whole gradient elements of the wire type (precision.comm).
void check_bucket_bytes(const Config& c, const Section& comm) {
  const long long element = static_cast<long long>(size_of(c.precision.comm));
  if (c.comm.bucket_bytes == 0 || c.comm.bucket_bytes >= element) return;
  comm.fail("bucket_bytes", std::to_string(c.comm.bucket_bytes) + " is smaller than one gradient element on the wire (precision.comm " +
                                to_string(c.precision.comm) + ": " + std::to_string(element) +
                                " bytes; allowed: 0 for one message per step, or at least " + std::to_string(element) + ")");
}

// precision.reproducible sums the gradient in one exact message per step: allreduce, no
// buckets, no overlap.
void check_reproducible(const Config& c, const Section& comm) {
  if (!c.precision.reproducible) return;
  const auto fail = [&](const std::string& key, const std::string& value, const std::string& allowed) {
    comm.fail(key, value + " does not apply with precision.reproducible: true (allowed: " + allowed + ")");
  };
  if (c.comm.strategy != "allreduce") fail("strategy", "'" + c.comm.strategy + "'", "allreduce");
  if (c.comm.bucket_bytes != 0) fail("bucket_bytes", std::to_string(c.comm.bucket_bytes), "0");
  if (c.comm.overlap) fail("overlap", "true", "false");
}

// Checkpoints belong to training runs; a time limit stops a run resumably, so it needs somewhere
// to put the checkpoint.
void check_checkpoint(const Config& c, const Section& checkpoint, const Section& train) {
  if (c.mode != Mode::train && checkpoint.node().size() > 0) {
    const std::string key = checkpoint.node().begin()->first.Scalar();
    checkpoint.fail(key, "does not apply to mode " + to_string(c.mode) +
                             " (allowed only with mode: train, whose state a checkpoint holds)");
  }
  if (c.train.max_seconds > 0 && c.checkpoint.path.empty()) {
    train.fail("max_seconds", config::flow(train.node()["max_seconds"]) +
                                  " needs checkpoint.path: the run stops after that time with a checkpoint "
                                  "to resume from (allowed: 0 without checkpoint.path)");
  }
}

// Which optional sections were read (and so belong in the resolved deck).
struct SectionsRead {
  bool problem, train, precision, comm, checkpoint, collectives, bench;
};

nlohmann::ordered_json resolve(const Config& c, const SectionsRead& read) {
  nlohmann::ordered_json r;
  r["mode"] = to_string(c.mode);
  for (const auto& a : c.mesh.axes) r["mesh"]["axes"][a.name] = a.size;
  if (read.problem) r["problem"] = config::to_json(c.problem);
  if (read.train) r["train"] = config::to_json(c.train);
  if (read.precision) r["precision"] = config::to_json(c.precision);
  if (read.comm) r["comm"] = config::to_json(c.comm);
  if (read.checkpoint) r["checkpoint"] = config::to_json(c.checkpoint);
  if (read.collectives) r["collectives"]["axis"] = c.collectives.axis;
  if (read.bench) r["bench"] = config::to_json(c.bench);
  r["output"] = {{"every", c.output.every}, {"report", c.output.report}};
  if (c.mode == Mode::bench) r["output"]["csv"] = c.output.csv;
  return r;
}

Config parse_config(const std::string& deck_path, const std::vector<std::string>& overrides, int ranks) {
  Section deck(config::load_deck(deck_path, overrides), "", deck_path);
  Config c;
  c.deck = deck_path;
  c.mode = parse_mode(deck);
  Section mesh = deck.section("mesh");
  Section problem = deck.section("problem");
  Section train = deck.section("train");
  Section precision = deck.section("precision");
  Section comm = deck.section("comm");
  Section checkpoint = deck.section("checkpoint");
  Section collectives = deck.section("collectives");
  Section bench = deck.section("bench");
  Section output = deck.section("output");
  deck.finish();  // first, so that a misspelt section is named as such, not as a missing one

  Section axes = mesh.section("axes");
  c.mesh = parse_mesh(mesh, axes, c.mode, ranks);
  // Mode train needs these sections (with their defaults); in any other mode a section that is
  // present is still read completely, so a typo in it is never ignored.
  const bool train_mode = c.mode == Mode::train;
  const auto wanted = [&](const std::string& key) { return train_mode || deck.has(key); };
  const SectionsRead read{wanted("problem"), wanted("train"), wanted("precision"), wanted("comm"), wanted("checkpoint"),
                          !train_mode || deck.has("collectives"),
                          c.mode == Mode::bench || deck.has("bench")};
  if (read.problem) c.problem = config::parse_problem(problem);
  if (read.train) c.train = config::parse_train(train);
  if (read.precision) c.precision = config::parse_precision(precision);
  if (read.comm) c.comm = config::parse_comm(comm);
  if (read.checkpoint) c.checkpoint = config::parse_checkpoint(checkpoint);
  parse_collectives(collectives, c);
  if (read.bench) c.bench = config::parse_bench(bench, c.mesh);
  c.output.every = output.integer("every", c.output.every, 1, config::unbounded);
  c.output.report = output.string("report", c.output.report);
  c.output.csv = output.string("csv", c.output.csv);
  if (!c.output.csv.empty() && c.mode != Mode::bench) {
    output.fail("csv", "'" + c.output.csv + "' does not apply to mode " + to_string(c.mode) +
                           " (allowed only with mode: bench, which writes its rows as CSV)");
  }
  output.finish();

  if (read.problem && read.train) check_batch(c, train);
  if (train_mode) check_model_axis(c, axes);
  if (read.precision && read.comm) check_bucket_bytes(c, comm);
  if (read.precision && read.comm) check_reproducible(c, comm);
  check_checkpoint(c, checkpoint, train);
  c.resolved = resolve(c, read);
  return c;
}

}  // namespace

Config load_config(const std::string& deck_path, const std::vector<std::string>& overrides, int ranks) {
  try {
    return parse_config(deck_path, overrides, ranks);
  } catch (const YAML::Exception& e) {
    // A yaml-cpp conversion the checks above did not anticipate: still the deck's fault.
    throw InputError(deck_path + (e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1) + ":" +
                                                             std::to_string(e.mark.column + 1)) +
                     ": " + e.msg);
  }
}

}  // namespace kpmap
