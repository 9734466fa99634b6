// `mode: collectives`: runs and prints the reference tutorial's examples (DESIGN.md §3) over the
// deck's `collectives.axis`, each with its expected value (a closed form in the axis size) and a
// check mark, then psum over `data`, `model` and `(data, model)` of a 2 x (ranks/2) mesh.
#pragma once

#include "kpmap/config/config.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

// Collective over the mesh. Returns 0 when every check passes. Throws InputError (before any
// communication, identically on every rank) for an unknown collectives.axis, and RuntimeError
// when a check fails (the verdict is agreed over the mesh, so every rank throws).
int run_collectives(const Config& config, const Mesh& mesh);

}  // namespace kpmap
