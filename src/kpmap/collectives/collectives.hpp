// kpmap's named-axis collectives on Kokkos Views, with JAX's semantics (docs/collectives.md):
// psum, pmean, pmax, pmin, all_gather, psum_scatter, all_to_all, ppermute, pbroadcast,
// axis_index, axis_size; the reproducible psum / pmean (reproducible.hpp); and the non-blocking
// ipsum, ipsum_scatter, iall_gather, which return a kpmap::Request (request.hpp). Each is
// collective over the ranks of one mesh axis (or tuple of axes): every rank of that group calls
// it with the same arguments and the same shapes.
#pragma once

#include "kpmap/collectives/all_to_all.hpp"
#include "kpmap/collectives/gather.hpp"
#include "kpmap/collectives/pack.hpp"
#include "kpmap/collectives/permute.hpp"
#include "kpmap/collectives/reduce.hpp"
#include "kpmap/collectives/reproducible.hpp"
#include "kpmap/collectives/request.hpp"
#include "kpmap/collectives/shape.hpp"
