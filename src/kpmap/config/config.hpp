// The typed, validated configuration of a run: the YAML deck (DESIGN.md §3) after --set
// overrides, defaults and validation. Every rank loads it identically, so a bad deck fails
// on every rank with the same message.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

enum class Mode { train, collectives, bench, info };

struct MeshConfig {
  std::vector<MeshAxis> axes;  // resolved: sizes multiply to the rank count
};

struct CollectivesConfig {
  std::string axis = "i";  // the mesh axis the one-axis tutorial examples run over
};

struct OutputConfig {
  long long every = 10;              // progress line every this many steps
  std::string report = "report.json";  // JSON report path ("" for none)
};

struct Config {
  std::string deck;  // path of the deck file
  Mode mode = Mode::train;
  MeshConfig mesh;
  CollectivesConfig collectives;
  OutputConfig output;
  nlohmann::ordered_json resolved;  // the deck with every default filled in, echoed into reports
};

std::string to_string(Mode mode);

// Loads and validates the deck for a run on `ranks` ranks. Throws InputError.
Config load_config(const std::string& deck, const std::vector<std::string>& overrides, int ranks);

}  // namespace kpmap
