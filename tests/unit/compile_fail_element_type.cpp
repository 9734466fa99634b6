// Must NOT compile: a collective on an unsupported element type (std::complex<double>) stops at
// kpmap::element_type_check's static_assert, whose instantiation names the type. Built only by
// the ctest `collectives_unsupported_element_type`, which expects this failure and message.
#include <complex>

#include "kpmap/collectives/collectives.hpp"

void psum_of_complex(const kpmap::Mesh& mesh, const Kokkos::View<std::complex<double>*>& x) {
  kpmap::psum(mesh, "data", x, x);
}
