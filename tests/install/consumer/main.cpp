// A project outside kpmap's tree that uses its collectives through the umbrella header only:
// psum of a scalar (rank-0 View), all_gather, psum_scatter and ppermute over a one-axis mesh,
// through an Axis handle and through the axis name. Exit 0 when every result is the value
// computed here from the rank count.
#include <kpmap/collectives.hpp>

#include <iostream>

int main(int argc, char** argv) {
  kpmap::MpiEnvironment mpi(argc, argv);
  int wrong = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", -1}});
    const kpmap::Axis data = mesh.axis("data");
    const int n = data.size(), r = data.index();
    const auto check = [&](const char* what, double got, double want) {
      if (got != want) {
        std::cerr << "rank " << r << ": " << what << " = " << got << ", expected " << want << '\n';
        ++wrong;
      }
    };
    using Host = Kokkos::HostSpace;

    Kokkos::View<double, Host> loss("loss");  // a scalar loss, as JAX's most common psum
    loss() = r + 1;
    kpmap::psum(data, loss, loss);
    check("psum of a scalar", loss(), n * (n + 1) / 2.0);

    Kokkos::View<double*, Host> x("x", 2 * n);
    for (int i = 0; i < 2 * n; ++i) x(i) = 100.0 * r + i;
    const auto gathered = kpmap::all_gather(mesh, "data", x, 0, kpmap::untiled);  // [n, 2n]
    for (int q = 0; q < n; ++q) check("all_gather", gathered(q, 1), 100.0 * q + 1);

    const auto block = kpmap::psum_scatter(data, x, 0, kpmap::tiled);  // [2]: block r of the sum
    for (int i = 0; i < 2; ++i) check("psum_scatter", block(i), 100.0 * n * (n - 1) / 2 + n * (2 * r + i));

    kpmap::Permutation shift;
    for (int q = 0; q < n; ++q) shift.push_back({q, (q + 1) % n});
    const auto shifted = kpmap::ppermute(data, x, shift);
    check("ppermute", shifted(0), 100.0 * ((r + n - 1) % n));

    if (r == 0) std::cout << "consumer: kpmap " << kpmap::version() << ", mesh " << mesh.describe() << '\n';
  }
  return wrong == 0 ? 0 : 1;
}
