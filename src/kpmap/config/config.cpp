#include "kpmap/config/config.hpp"

#include "kpmap/config/deck.hpp"

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

Mode parse_mode(Section& deck) {
  const std::string m = deck.choice("mode", "train", {"train", "collectives", "bench", "info"});
  if (m == "collectives") return Mode::collectives;
  if (m == "bench") return Mode::bench;
  if (m == "info") return Mode::info;
  return Mode::train;
}

MeshConfig parse_mesh(Section& deck, int ranks) {
  Section mesh = deck.section("mesh");
  MeshConfig out;
  Section axes = mesh.section("axes");
  if (axes.node().size() == 0) {
    out.axes = {{"data", -1}};
  } else {
    for (const auto& kv : axes.node()) {
      const std::string name = kv.first.as<std::string>();
      out.axes.push_back({name, static_cast<int>(axes.integer(name, 0, -1, 1 << 20))});
    }
  }
  axes.finish();
  mesh.finish();
  out.axes = Mesh::resolve(out.axes, ranks, axes.where());
  return out;
}

}  // namespace

Config load_config(const std::string& deck_path, const std::vector<std::string>& overrides, int ranks) {
  Section deck(config::load_deck(deck_path, overrides), "", deck_path);
  Config c;
  c.deck = deck_path;
  c.mode = parse_mode(deck);
  c.mesh = parse_mesh(deck, ranks);

  Section collectives = deck.section("collectives");
  c.collectives.axis = collectives.string("axis", c.mesh.axes.front().name);
  collectives.finish();

  Section output = deck.section("output");
  c.output.every = output.integer("every", c.output.every, 1, 1LL << 40);
  c.output.report = output.string("report", c.output.report);
  output.finish();
  deck.finish();

  auto& r = c.resolved;
  r["mode"] = to_string(c.mode);
  for (const auto& a : c.mesh.axes) r["mesh"]["axes"][a.name] = a.size;
  r["collectives"]["axis"] = c.collectives.axis;
  r["output"] = {{"every", c.output.every}, {"report", c.output.report}};
  return c;
}

}  // namespace kpmap
