"""PNG figures from a study CSV (matplotlib, Agg backend).

scaling.png      time per step (the slowest rank's) against the rank count, strong and weak studies
efficiency.png   parallel efficiency against the rank count: strong T_b N_b / (N T_N), weak T_b / T_N,
                 b the smallest rank count of the curve (1 in the usual study: T1 / (N T_N), T1 / T_N)
comm_model.png   predicted against measured communication time per step (rows with a comm.model)
breakdown.png    compute, communication and optimizer time per step (averages over ranks), stacked,
                 one bar per configuration

Repeated runs of one configuration (--repeat) are reduced to their median.
"""
import csv
import os
import statistics
import sys

from .plan import StudyInputError

# The columns that make a configuration; a curve of a scaling figure varies `ranks` (and with it
# the mesh's data size) and keeps the rest.
CURVE_KEY = ("study_id", "study", "model", "threads", "backend", "kernel", "precision", "features")
CONFIG_KEY = CURVE_KEY + ("ranks", "mesh")


def require_matplotlib():
    """Imports matplotlib with the Agg backend, or exit 2 saying how to install it."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot  # noqa: F401
    except ImportError:
        raise StudyInputError(f"plots: matplotlib cannot be imported by {sys.executable} (allowed: a Python with "
                              "matplotlib: scripts/setup.sh installs Debian's python3-matplotlib for /usr/bin/python3; "
                              "or pip install matplotlib)") from None
    return matplotlib.pyplot


def load_rows(path):
    if not os.path.isfile(path):
        raise StudyInputError(f"csv: '{path}' does not exist (allowed: a CSV written by scripts/study.py run)")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise StudyInputError(f"csv: '{path}' has no rows (allowed: a CSV written by scripts/study.py run)")
    return rows


def efficiency(kind, times):
    """{ranks: seconds per step} -> {ranks: parallel efficiency} relative to the smallest rank count."""
    base = min(times)
    if kind == "strong":
        return {n: times[base] * base / (n * t) for n, t in times.items()}
    return {n: times[base] / t for n, t in times.items()}


def median_by(rows, key, column):
    """{key tuple: median of float(column)} over the rows with a value in `column`."""
    groups = {}
    for r in rows:
        if r.get(column, "") != "":
            groups.setdefault(tuple(r[k] for k in key), []).append(float(r[column]))
    return {k: statistics.median(v) for k, v in groups.items()}


def curves(rows, kind):
    """{curve label: {ranks: median time per step}} for the rows of one study kind."""
    times = median_by([r for r in rows if r["study"] == kind], CONFIG_KEY, "total_s_per_step_max")
    by_key = {}
    for key, t in times.items():
        by_key.setdefault(key[:len(CURVE_KEY)], {})[int(key[len(CURVE_KEY)])] = t
    labels = {}
    for key in by_key:
        c = dict(zip(CURVE_KEY, key))
        labels[key] = f"model={c['model']} {c['backend']} t={c['threads']} {c['kernel']} {c['precision']}"
    # two studies of the same configuration in one CSV: their curves are told apart by study_id
    return {labels[k] + (f" [{k[0]}]" if list(labels.values()).count(labels[k]) > 1 else ""): v
            for k, v in by_key.items()}


def caption(rows):
    def values(column):
        return sorted({r[column] for r in rows if r.get(column)})
    loads = [float(r["load_1min"]) for r in rows if r.get("load_1min")]
    load = f", load {min(loads):.2f}-{max(loads):.2f}" if loads else ""
    return (f"{', '.join(values('hostname'))}: {', '.join(values('cpu_model'))}, {', '.join(values('cores'))} cores"
            f"{load}; kpmap {', '.join(values('kpmap_version'))}, Kokkos {', '.join(values('kokkos_version'))}, "
            f"{', '.join(values('mpi_version'))}")


def _finish(plt, fig, rows, path):
    fig.text(0.01, 0.005, caption(rows), fontsize=6, color="0.35", ha="left", va="bottom")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _scaling_figures(plt, rows, outdir, say):
    kinds = [k for k in ("strong", "weak") if any(r["study"] == k for r in rows)]
    if not kinds:
        say("[plot] scaling.png, efficiency.png: skipped (no strong or weak study rows in the CSV)")
        return []
    written = []
    for name in ("scaling", "efficiency"):
        fig, axes = plt.subplots(1, len(kinds), figsize=(6.4 * len(kinds), 4.8), squeeze=False)
        for ax, kind in zip(axes[0], kinds):
            for label, times in sorted(curves(rows, kind).items()):
                ranks = sorted(times)
                if name == "scaling":
                    line, = ax.plot(ranks, [times[n] * 1e3 for n in ranks], "o-", label=label)
                    base = ranks[0]
                    ideal = [times[base] * (base / n if kind == "strong" else 1.0) * 1e3 for n in ranks]
                    ax.plot(ranks, ideal, ":", color=line.get_color(), alpha=0.6)
                else:
                    e = efficiency(kind, times)
                    ax.plot(ranks, [e[n] for n in ranks], "o-", label=label)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("ranks")
            if name == "scaling":
                ax.set_yscale("log")
                ax.set_ylabel("time per step, slowest rank (ms)")
                ax.set_title(f"{kind} scaling (dotted: ideal)")
            else:
                ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
                ax.set_ylim(bottom=0)
                ax.set_ylabel("T_b N_b / (N T_N)" if kind == "strong" else "T_b / T_N")
                ax.set_title(f"{kind} scaling: parallel efficiency (b: the curve's fewest ranks)")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        path = os.path.join(outdir, f"{name}.png")
        _finish(plt, fig, rows, path)
        written.append(path)
    return written


def _comm_model_figure(plt, rows, outdir, say):
    predicted = median_by(rows, CONFIG_KEY, "predicted_comm_s_per_step")
    measured = median_by(rows, CONFIG_KEY, "measured_comm_s_per_step")
    keys = [k for k in predicted if k in measured]
    if not keys:
        say("[plot] comm_model.png: skipped (no row has predicted_comm_s_per_step: run the study with --model FILE)")
        return []
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    xs = [measured[k] * 1e3 for k in keys]
    ys = [predicted[k] * 1e3 for k in keys]
    ax.scatter(xs, ys, zorder=3)
    for k, x, y in zip(keys, xs, ys):
        c = dict(zip(CONFIG_KEY, k))
        ax.annotate(f"{c['study']} np={c['ranks']} {c['mesh']}", (x, y), fontsize=6, xytext=(3, 3),
                    textcoords="offset points")
    hi = max(xs + ys) * 1.15
    ax.plot([0, hi], [0, hi], "k-", lw=0.8, label="predicted = measured")
    ax.fill_between([0, hi], [0, 0.7 * hi], [0, 1.3 * hi], color="0.85", label="within 30%")
    ax.set_xlim(0, hi)
    ax.set_ylim(0, hi)
    ax.set_xlabel("measured communication per step (ms)")
    ax.set_ylabel("predicted communication per step (ms)")
    ax.set_title("communication model against measurement")
    ax.legend(fontsize=7)
    path = os.path.join(outdir, "comm_model.png")
    _finish(plt, fig, rows, path)
    return [path]


def _breakdown_figure(plt, rows, outdir):
    phases = [("compute", "compute_s_per_step_avg"), ("communication", "comm_s_per_step_avg"),
              ("optimizer", "optimizer_s_per_step_avg")]
    medians = {name: median_by(rows, CONFIG_KEY, column) for name, column in phases}
    keys = list(medians["compute"])  # in CSV order (dicts keep insertion order)
    labels = []
    for k in keys:
        c = dict(zip(CONFIG_KEY, k))
        labels.append(f"{c['study']} np={c['ranks']} {c['mesh']}\n{c['backend']} t={c['threads']} {c['kernel']} "
                      f"{c['precision']}")
    fig, ax = plt.subplots(figsize=(max(6.4, 0.9 * len(keys) + 1.5), 5.2))
    bottom = [0.0] * len(keys)
    for name, _ in phases:
        values = [medians[name][k] * 1e3 for k in keys]
        ax.bar(range(len(keys)), values, bottom=bottom, label=name)
        bottom = [b + v for b, v in zip(bottom, values)]
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(labels, fontsize=6, rotation=60, ha="right")
    ax.set_ylabel("time per step, average over ranks (ms)")
    ax.set_title("where a step's time goes")
    ax.legend(fontsize=7)
    path = os.path.join(outdir, "breakdown.png")
    _finish(plt, fig, rows, path)
    return [path]


def plot(csv_path, outdir, out=sys.stdout):
    """Writes the figures for every row of the CSV into outdir; returns their paths."""
    plt = require_matplotlib()
    rows = load_rows(csv_path)
    os.makedirs(outdir, exist_ok=True)

    def say(message):
        print(message, file=out, flush=True)
    written = _scaling_figures(plt, rows, outdir, say)
    written += _comm_model_figure(plt, rows, outdir, say)
    written += _breakdown_figure(plt, rows, outdir)
    for path in written:
        say(f"[plot] {path}")
    return written
