"""Study parameters: their parsing and checks, and the list of runs they make.

Every check here runs before anything is launched; a bad parameter raises StudyInputError, whose
message names the parameter, the value and what is allowed (exit code 2).
"""
import itertools
import os
from dataclasses import dataclass, field

KINDS = ("strong", "weak", "backend")
KERNELS = ("fused", "kokkos_kernels", "team")
PRECISIONS = ("fp64", "fp32", "bf16", "fp16")


class StudyInputError(Exception):
    """A bad study parameter: exit code 2, nothing has run."""


def check_kind(kind):
    if kind not in KINDS:
        raise StudyInputError(f"kind: '{kind}' is not allowed (allowed: {' | '.join(KINDS)})")
    return kind


def parse_int_list(option, text, minimum=1):
    """'1,2,4' -> [1, 2, 4]: non-empty, each an integer >= minimum, each at most once."""
    items = [t.strip() for t in text.split(",")] if text is not None else []
    if not items or items == [""]:
        raise StudyInputError(f"{option}: '{text or ''}' is empty (allowed: a comma-separated list of integers "
                              f">= {minimum}, e.g. 1,2,4)")
    values = []
    for item in items:
        try:
            value = int(item)
        except ValueError:
            raise StudyInputError(f"{option}: '{item}' in '{text}' is not an integer (allowed: a comma-separated "
                                  f"list of integers >= {minimum}, e.g. 1,2,4)") from None
        if value < minimum:
            raise StudyInputError(f"{option}: {value} in '{text}' is out of range (allowed: integers >= {minimum})")
        if value in values:
            raise StudyInputError(f"{option}: {value} appears twice in '{text}' (allowed: each value once)")
        values.append(value)
    return values


def parse_int(option, text, minimum=1):
    try:
        value = int(text)
    except ValueError:
        raise StudyInputError(f"{option}: '{text}' is not an integer (allowed: an integer >= {minimum})") from None
    if value < minimum:
        raise StudyInputError(f"{option}: {value} is out of range (allowed: an integer >= {minimum})")
    return value


def parse_choice_list(option, text, allowed):
    items = [t.strip() for t in text.split(",")] if text is not None else []
    if not items or items == [""]:
        raise StudyInputError(f"{option}: '{text or ''}' is empty (allowed: a comma-separated list of "
                              f"{' | '.join(allowed)})")
    for item in items:
        if item not in allowed:
            raise StudyInputError(f"{option}: '{item}' is not allowed (allowed: {' | '.join(allowed)})")
        if items.count(item) > 1:
            raise StudyInputError(f"{option}: '{item}' appears twice in '{text}' (allowed: each value once)")
    return items


@dataclass(frozen=True)
class MeshPattern:
    """A (data, model) mesh, DxM, where one of the sizes may be -1 (written *): inferred from the rank count."""
    data: int
    model: int

    def __str__(self):
        return "x".join("*" if s == -1 else str(s) for s in (self.data, self.model))

    def resolve(self, ranks):
        """(data, model) on `ranks` ranks, or None when this mesh cannot use that rank count."""
        if self.data == -1:
            return (ranks // self.model, self.model) if ranks % self.model == 0 else None
        if self.model == -1:
            return (self.data, ranks // self.data) if ranks % self.data == 0 else None
        return (self.data, self.model) if self.data * self.model == ranks else None


def parse_meshes(text):
    allowed = "DxM (data x model), each a size >= 1, or * (or -1) for 'the rank count divided by the other', at most one *"
    items = [t.strip() for t in text.split(",")] if text is not None else []
    if not items or items == [""]:
        raise StudyInputError(f"--mesh: '{text or ''}' is empty (allowed: a comma-separated list of {allowed})")
    meshes = []
    for item in items:
        parts = item.lower().split("x")
        try:
            sizes = [-1 if p.strip() == "*" else int(p) for p in parts]
        except ValueError:
            sizes = []
        if len(sizes) != 2 or any(s == 0 or s < -1 for s in sizes) or sizes == [-1, -1]:
            raise StudyInputError(f"--mesh: '{item}' is not a mesh (allowed: {allowed}; e.g. *x1, 2x2, *x2)")
        mesh = MeshPattern(*sizes)
        if mesh in meshes:
            raise StudyInputError(f"--mesh: '{item}' appears twice in '{text}' (allowed: each mesh once)")
        meshes.append(mesh)
    return meshes


def check_mesh_fits(ranks, meshes):
    """Every rank count must be usable by every mesh: each run of the study is a (ranks, mesh) pair."""
    for mesh in meshes:
        bad = [n for n in ranks if mesh.resolve(n) is None]
        if bad:
            if mesh.data == -1 or mesh.model == -1:
                fixed = mesh.model if mesh.data == -1 else mesh.data
                allowed = f"multiples of {fixed}"
            else:
                allowed = f"{mesh.data * mesh.model} (its sizes multiply to that), or a * size to infer one"
            names = ", ".join(str(n) for n in bad)
            raise StudyInputError(f"--ranks: {names} cannot run on --mesh {mesh} (allowed rank counts for that mesh: "
                                  f"{allowed})")


def check_file(option, path):
    if not path:
        raise StudyInputError(f"{option}: no file given (allowed: an existing, readable file)")
    if not os.path.isfile(path):
        raise StudyInputError(f"{option}: '{path}' does not exist or is not a file (allowed: an existing, readable file)")
    if not os.access(path, os.R_OK):
        raise StudyInputError(f"{option}: '{path}' is not readable (allowed: an existing, readable file)")
    return path


def check_sets(sets):
    """--set KEY=VALUE as kpmap takes it; the keys the study itself sets are refused."""
    owned = ("mesh", "output.report", "mode", "comm.model", "train.steps", "train.kernel", "precision.compute")
    for s in sets:
        key, eq, _ = s.partition("=")
        if not eq or not key.strip():
            raise StudyInputError(f"--set: '{s}' is not KEY=VALUE (allowed: a deck key path and a YAML value, "
                                  f"e.g. train.batch=256)")
        key = key.strip()
        for o in owned:
            if key == o or key.startswith(o + ".") or o.startswith(key + "."):
                raise StudyInputError(f"--set: '{key}' is set by the study itself (allowed: any other deck key; "
                                      f"use --mesh, --steps, --kernels, --precisions or --model)")
    return sets


@dataclass
class Run:
    """One launch: `ranks` ranks of `kpmap` on a data x model mesh, with the deck overrides `sets`."""
    index: int
    repeat: int
    kpmap: str
    backend: str
    threads: int
    kernel: str  # "" = the deck's
    precision: str  # "" = the deck's
    ranks: int
    mesh_pattern: MeshPattern
    data: int
    model: int
    sets: list = field(default_factory=list)

    @property
    def mesh(self):
        return f"{self.data}x{self.model}"


def plan_runs(kind, kpmaps, ranks, meshes, threads, kernels, precisions, repeats, base_sets, weak_rows=None):
    """The study's runs, repeats outermost so that they interleave.

    kpmaps: [(path, backend)]. A Serial binary runs at one thread only. For kind 'weak', weak_rows =
    (samples, batch) of one data rank: a run on D data ranks gets D times both.
    """
    runs = []
    for repeat in range(1, repeats + 1):
        combos = itertools.product(kpmaps, threads, kernels, precisions, ranks, meshes)
        for (path, backend), t, kernel, precision, n, mesh in combos:
            if backend == "Serial" and t != threads[0]:
                continue  # the Serial backend has one thread: it runs once, at the first thread count
            data, model = mesh.resolve(n)
            sets = list(base_sets)
            if kernel:
                sets.append(f"train.kernel={kernel}")
            if precision:
                sets.append(f"precision.compute={precision}")
            if kind == "weak":
                samples, batch = weak_rows
                sets += [f"problem.samples={samples * data}", f"train.batch={batch * data}"]
            sets.append(f"mesh.axes={{data: {data}, model: {model}}}")
            runs.append(Run(len(runs) + 1, repeat, path, backend, 1 if backend == "Serial" else t, kernel, precision,
                            n, mesh, data, model, sets))
    return runs
