# A Spack recipe for kpmap. Add the repository (the folder holding repo.yaml) with
#   spack repo add <kpmap checkout>/spack
# and install with e.g. `spack install kpmap +openmp` or `spack install kpmap +cuda cuda_arch=90`,
# or the collectives alone (Kokkos and MPI only) with `spack install kpmap ~miniapp +cuda
# cuda_arch=90` (docs/cluster.md).
import os

from spack.package import *

# The checkout this recipe lives in (spack/packages/kpmap/ below its root); a site mirror of
# kpmap's git repository replaces it through KPMAP_GIT.
_checkout = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


class Kpmap(CMakePackage, CudaPackage, ROCmPackage):
    """JAX-style named-axis collectives (psum, pmean, all_gather, ...) on Kokkos Views over MPI,
    and a YAML-configured data- and model-parallel linear-regression training mini-app."""

    git = os.environ.get("KPMAP_GIT", "file://" + _checkout)

    version("main", branch="main")
    # No release tags yet: 0.1.0 is a commit whose CMakeLists.txt says project(kpmap VERSION 0.1.0).
    version("0.1.0", commit="3e17426f6c5b994bc2526cacec92793501f297d7")

    # kpmap's kernels run on the first of cuda, rocm, openmp, serial that is on.
    variant("openmp", default=True, description="Kokkos' OpenMP backend (kpmap's kernels without a GPU)")
    variant("serial", default=False, description="Kokkos' Serial backend (kpmap's kernels with ~openmp)")
    variant(
        "miniapp",
        default=True,
        description="The mini-app (kpmap::kpmap, the kpmap driver) and its dependencies (Kokkos "
        "Kernels, yaml-cpp, CLI11, nlohmann-json, HDF5); off: kpmap::collectives alone",
    )
    variant(
        "gpu_aware_mpi",
        default=False,
        description="Hand device View pointers to MPI directly (needs an MPI built with CUDA or "
        "ROCm support, e.g. mpich +cuda or cray-mpich); off: stage through host mirrors",
    )

    conflicts("+cuda", when="+rocm", msg="kpmap runs on one GPU backend")
    conflicts(
        "~openmp ~serial ~cuda ~rocm",
        msg="choose an execution space: +openmp, +serial, +cuda or +rocm",
    )
    conflicts("+gpu_aware_mpi", when="~cuda ~rocm", msg="GPU-aware MPI needs +cuda or +rocm")
    conflicts("+cuda", when="cuda_arch=none", msg="+cuda needs a cuda_arch, e.g. cuda_arch=90")
    conflicts("+rocm", when="amdgpu_target=none", msg="+rocm needs an amdgpu_target, e.g. gfx90a")

    depends_on("c", type="build", when="+miniapp")  # FindHDF5 probes its wrapper in C
    depends_on("cxx", type="build")
    depends_on("cmake@3.16:", type="build")

    depends_on("kokkos@3.4:4")
    depends_on("kokkos-kernels@3.4:4", when="+miniapp")
    depends_on("kokkos+openmp", when="+openmp")
    depends_on("kokkos-kernels+openmp", when="+openmp +miniapp")
    depends_on("kokkos+serial", when="+serial")
    depends_on("kokkos-kernels+serial", when="+serial +miniapp")
    # Kokkos takes one GPU architecture; nvcc_wrapper compiles kpmap's CUDA sources.
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"kokkos+cuda+wrapper cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")
    depends_on("kokkos+cuda_lambda", when="+cuda")
    depends_on("kokkos-kernels+cuda", when="+cuda +miniapp")
    for _target in ROCmPackage.amdgpu_targets:
        depends_on(f"kokkos+rocm amdgpu_target={_target}", when=f"+rocm amdgpu_target={_target}")

    depends_on("mpi")
    depends_on("hdf5@1.10:+mpi~cxx~fortran", when="+miniapp")
    depends_on("yaml-cpp", when="+miniapp")
    depends_on("cli11", when="+miniapp")
    depends_on("nlohmann-json@3:", when="+miniapp")
    depends_on("googletest", type="test")
    depends_on("python@3:", type="test")

    def cmake_args(self):
        spec = self.spec
        if spec.satisfies("+cuda"):
            space = "Cuda"
        elif spec.satisfies("+rocm"):
            space = "HIP"
        elif spec.satisfies("+openmp"):
            space = "OpenMP"
        else:
            space = "Serial"
        args = [
            self.define("KPMAP_EXECUTION_SPACE", space),
            self.define_from_variant("KPMAP_BUILD_MINIAPP", "miniapp"),
            self.define_from_variant("KPMAP_GPU_AWARE_MPI", "gpu_aware_mpi"),
            self.define("KPMAP_ENABLE_TESTS", self.run_tests),
            self.define("KPMAP_ENABLE_BENCHMARKS", False),
            self.define("Kokkos_ROOT", spec["kokkos"].prefix),
        ]
        if spec.satisfies("+miniapp"):
            args.append(self.define("KokkosKernels_ROOT", spec["kokkos-kernels"].prefix))
        if spec.satisfies("+cuda"):
            args.append(self.define("CMAKE_CXX_COMPILER", spec["kokkos"].kokkos_cxx))
        elif spec.satisfies("+rocm"):
            args.append(self.define("CMAKE_CXX_COMPILER", spec["hip"].hipcc))
        return args
