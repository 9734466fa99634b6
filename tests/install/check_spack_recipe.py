#!/usr/bin/env python3
"""Checks the Spack recipe without Spack: check_spack_recipe.py SOURCE_DIR

spack/packages/kpmap/package.py must compile as Python and define, as Spack expects of a package
directory named kpmap, a class Kpmap(CMakePackage, CudaPackage, ROCmPackage) with:
- the variants openmp, serial, miniapp (default True) and gpu_aware_mpi (cuda and rocm come from
  the mixins);
- depends_on kokkos, kokkos-kernels, mpi, hdf5, yaml-cpp, cli11, nlohmann-json, cmake, and googletest
  of type "test"; every depends_on of a mini-app dependency (kokkos-kernels and its backend
  variants, hdf5, yaml-cpp, cli11, nlohmann-json) with a when= that requires +miniapp;
- version("main", branch="main") and a version equal to project(kpmap VERSION ...) in
  CMakeLists.txt;
- cmake_args whose KPMAP_* names and define_from_variant options are options or cache variables
  of CMakeLists.txt, whose define_from_variant calls name declared variants (among them
  define_from_variant("KPMAP_BUILD_MINIAPP", "miniapp")), and whose execution spaces are values
  CMakeLists.txt allows for KPMAP_EXECUTION_SPACE.
spack/repo.yaml must name a namespace. Doctored copies of the recipe (another base class, a
missing variant or dependency, a misspelt option, an unknown execution space, a mini-app
dependency without +miniapp, no KPMAP_BUILD_MINIAPP) must fail the same checks. Exit 0 when all hold, 1 otherwise, printing each failure."""
import ast
import os
import re
import sys

WANT_BASES = ["CMakePackage", "CudaPackage", "ROCmPackage"]
WANT_VARIANTS = {"openmp", "serial", "miniapp", "gpu_aware_mpi"}
WANT_DEPENDS = {"kokkos", "kokkos-kernels", "mpi", "hdf5", "yaml-cpp", "cli11", "nlohmann-json", "cmake",
                "googletest"}
# Needed by the mini-app only: Spack installs them for kpmap +miniapp alone.
MINIAPP_DEPENDS = {"kokkos-kernels", "hdf5", "yaml-cpp", "cli11", "nlohmann-json"}


def literal_prefix(node):
    """The text of a string constant, or the literal start of an f-string."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def calls(tree, name):
    """Every call of NAME(...) or self.NAME(...) in TREE."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if (isinstance(f, ast.Name) and f.id == name) or (
                    isinstance(f, ast.Attribute) and f.attr == name):
                yield node


def keyword(call, name):
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def cmake_facts(cmake_text):
    """KPMAP_* cache names, allowed KPMAP_EXECUTION_SPACE values and the project version."""
    names = set(re.findall(r"option\((KPMAP_\w+)", cmake_text))
    names |= set(re.findall(r"set\((KPMAP_\w+)[^)]*CACHE", cmake_text))
    m = re.search(r"set_property\(CACHE KPMAP_EXECUTION_SPACE PROPERTY STRINGS ([^)]*)\)", cmake_text)
    spaces = set(m.group(1).split()) if m else set()
    m = re.search(r"project\(kpmap VERSION ([0-9.]+)", cmake_text)
    return names, spaces, m.group(1) if m else None


def check(source, cmake_text, package_dir="kpmap"):
    failures = []
    try:
        tree = ast.parse(compile(source, "package.py", "exec", ast.PyCF_ONLY_AST))
    except SyntaxError as e:
        return [f"package.py: not valid Python: {e}"]
    class_name = "".join(part.capitalize() for part in re.split(r"[-_]", package_dir))
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name]
    if not classes:
        return [f"package.py: no class {class_name} (Spack's name for the package directory {package_dir})"]
    cls = classes[0]
    bases = [b.id for b in cls.bases if isinstance(b, ast.Name)]
    if bases != WANT_BASES:
        failures.append(f"class {class_name}: bases {bases}, expected {WANT_BASES}")

    variants = {literal_prefix(c.args[0]): c for c in calls(cls, "variant") if c.args}
    for v in sorted(WANT_VARIANTS - set(variants)):
        failures.append(f"variant '{v}' missing (variants: {sorted(v for v in variants if v)})")
    default = keyword(variants["miniapp"], "default") if "miniapp" in variants else None
    if "miniapp" in variants and not (isinstance(default, ast.Constant) and default.value is True):
        failures.append("variant 'miniapp' must default to True (as KPMAP_BUILD_MINIAPP does)")

    depends = {}
    for c in calls(cls, "depends_on"):
        spec = literal_prefix(c.args[0]) if c.args else None
        if spec:
            name = re.match(r"[A-Za-z0-9_-]*", spec).group(0)
            dep_type = keyword(c, "type")
            depends.setdefault(name, set()).add(literal_prefix(dep_type) if dep_type else "default")
            when = literal_prefix(keyword(c, "when")) if keyword(c, "when") else None
            if name in MINIAPP_DEPENDS and "+miniapp" not in (when or "").split():
                failures.append(f"depends_on('{spec}', when={when!r}): a mini-app dependency needs "
                                f"+miniapp in its when=")
    for d in sorted(WANT_DEPENDS - set(depends)):
        failures.append(f"depends_on('{d}') missing")
    if "test" not in depends.get("googletest", set()):
        failures.append("googletest must be a dependency of type 'test'")

    names, spaces, project_version = cmake_facts(cmake_text)
    versions = {}
    for c in calls(cls, "version"):
        if c.args:
            versions[literal_prefix(c.args[0])] = {k.arg: literal_prefix(k.value) for k in c.keywords}
    if versions.get("main", {}).get("branch") != "main":
        failures.append("no version('main', branch='main')")
    if project_version not in versions:
        failures.append(f"no version('{project_version}') (project VERSION in CMakeLists.txt)")

    args = [f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "cmake_args"]
    if not args:
        return failures + ["no cmake_args method"]
    from_variant = list(calls(args[0], "define_from_variant"))
    for c in list(calls(args[0], "define")) + from_variant:
        option = literal_prefix(c.args[0]) if c.args else None
        if option and (option.startswith("KPMAP_") or c in from_variant) and option not in names:
            failures.append(f"cmake_args: {option} is not an option of CMakeLists.txt ({sorted(names)})")
    pairs = set()
    for c in from_variant:
        variant = literal_prefix(c.args[1]) if len(c.args) > 1 else None
        pairs.add((literal_prefix(c.args[0]) if c.args else None, variant))
        if variant not in variants:
            failures.append(f"cmake_args: define_from_variant of undeclared variant '{variant}'")
    if ("KPMAP_BUILD_MINIAPP", "miniapp") not in pairs:
        failures.append("cmake_args: no define_from_variant('KPMAP_BUILD_MINIAPP', 'miniapp')")
    assigned = [
        n.value.value
        for n in ast.walk(args[0])
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
        and any(isinstance(t, ast.Name) and t.id == "space" for t in n.targets)
    ]
    if not assigned:
        failures.append("cmake_args: no execution space assigned to 'space'")
    for space in assigned:
        if space not in spaces:
            failures.append(f"cmake_args: execution space '{space}' is not allowed by CMakeLists.txt "
                            f"{sorted(spaces)}")
    return failures


def main(source_dir):
    recipe = os.path.join(source_dir, "spack", "packages", "kpmap", "package.py")
    source = open(recipe).read()
    cmake_text = open(os.path.join(source_dir, "CMakeLists.txt")).read()
    failures = check(source, cmake_text)
    repo_yaml = open(os.path.join(source_dir, "spack", "repo.yaml")).read()
    if not re.search(r"^repo:\s*\n\s+namespace:\s*['\"]?\w+", repo_yaml, re.M):
        failures.append("spack/repo.yaml: no repo: namespace:")

    doctored = {
        "another base class": ("(CMakePackage, CudaPackage, ROCmPackage)", "(CMakePackage, CudaPackage)"),
        "a missing variant": ('variant("serial"', 'variant("sequential"'),
        "a missing dependency": ('depends_on("yaml-cpp"', 'depends_on("yaml"'),
        "a miniapp variant off by default": ('"miniapp",\n        default=True', '"miniapp",\n        default=False'),
        "an unconditional mini-app dependency": ('depends_on("cli11", when="+miniapp")', 'depends_on("cli11")'),
        "a Kokkos Kernels backend without +miniapp": ('when="+serial +miniapp"', 'when="+serial"'),
        "no KPMAP_BUILD_MINIAPP": ('self.define_from_variant("KPMAP_BUILD_MINIAPP", "miniapp"),', ''),
        "a define_from_variant of a missing option": ('"KPMAP_GPU_AWARE_MPI", "gpu_aware_mpi"',
                                                      '"GPU_AWARE_MPI", "gpu_aware_mpi"'),
        "a misspelt option": ('"KPMAP_GPU_AWARE_MPI"', '"KPMAP_GPU_AWARE"'),
        "an unknown execution space": ('space = "HIP"', 'space = "Rocm"'),
        "a syntax error": ("def cmake_args(self):", "def cmake_args(self)"),
    }
    for what, (old, new) in doctored.items():
        if old not in source:
            failures.append(f"self-test: '{old}' not in the recipe, cannot doctor it for {what}")
        elif not check(source.replace(old, new, 1), cmake_text):
            failures.append(f"self-test: the checks pass a recipe with {what}")
    for f in failures:
        print(f)
    if not failures:
        print(f"{recipe}: its class, bases, variants, dependencies, versions and CMake options check out")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
