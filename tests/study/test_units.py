#!/usr/bin/env python3
"""The study scripts' pieces against hand-computed values (no MPI; the plot case needs matplotlib).

test_units.py [--plots DIR]   with --plots also draws the figures of a CSV whose rows carry a
communication model (predicted and measured times) and checks comm_model.png like check_study.py.
"""
import argparse
import csv
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts"))
sys.path.insert(0, HERE)

from kpmap_study import machine, plan, plot, runner  # noqa: E402

PLOTS = None


def report(ranks, data, model, steps, total, comm, comm_model=None):
    """A train report with the fields src/kpmap/app/train_mode.cpp writes."""
    def stat(v):
        return {"min": v / 2, "avg": v, "max": 2 * v}
    r = {"versions": {"kpmap": "0.1.0", "kokkos": "3.4.1", "kokkos_backends": ["OpenMP", "Serial"],
                      "execution_space": "OpenMP", "kokkos_kernels": "3.4.01", "mpi": "MPICH Version:\t4.0.2"},
         "config": {"mode": "train", "mesh": {"axes": {"data": data, "model": model}},
                    "problem": {"samples": 4096, "features": 16}, "train": {"steps": steps, "batch": 256,
                                                                            "kernel": "fused"},
                    "precision": {"compute": "bf16"}},
         "mesh": {"axes": {"data": data, "model": model}, "ranks": ranks},
         "final_loss": 0.5, "timing": {"total": stat(total), "compute": stat(total - comm - 0.01), "comm": stat(comm),
                                       "comm_wait": stat(0.0), "comm_in_flight": stat(0.0), "optimizer": stat(0.01)},
         "comm_bytes": stat(76.0), "comm_calls": stat(1.0)}
    if comm_model:
        r["comm_model"] = comm_model
    return r


def run_of(ranks, data, model, threads=1):
    return plan.Run(1, 1, "/bin/kpmap", "OpenMP", threads, "fused", "bf16", ranks, plan.MeshPattern(-1, model),
                    data, model)


MACHINE = {"hostname": "h", "cpu_model": "CPU", "cores": 2, "load_1min": "0.50"}


class Units(unittest.TestCase):
    def test_efficiency_closed_forms(self):
        times = {1: 4.0, 2: 2.5, 4: 2.0}
        self.assertEqual(plot.efficiency("strong", times), {1: 1.0, 2: 0.8, 4: 0.5})  # 4 / (2 * 2.5), 4 / (4 * 2)
        self.assertEqual(plot.efficiency("weak", times), {1: 1.0, 2: 1.6, 4: 2.0})
        # without a 1-rank run the base is the smallest rank count: 2 * 3 / (4 * 2) = 0.75
        self.assertEqual(plot.efficiency("strong", {2: 3.0, 4: 2.0}), {2: 1.0, 4: 0.75})

    def test_mesh_resolution(self):
        self.assertEqual(plan.MeshPattern(-1, 1).resolve(4), (4, 1))
        self.assertEqual(plan.MeshPattern(-1, 2).resolve(4), (2, 2))
        self.assertIsNone(plan.MeshPattern(-1, 2).resolve(3))
        self.assertEqual(plan.MeshPattern(2, -1).resolve(6), (2, 3))
        self.assertIsNone(plan.MeshPattern(2, 2).resolve(3))
        self.assertEqual(plan.MeshPattern(2, 2).resolve(4), (2, 2))
        self.assertEqual(plan.parse_meshes("*x1,2x2, 1x-1"),
                         [plan.MeshPattern(-1, 1), plan.MeshPattern(2, 2), plan.MeshPattern(1, -1)])
        for bad in ("2", "*x*", "0x2", "-2x1", "ax1", "2x2x1"):
            with self.assertRaises(plan.StudyInputError, msg=bad):
                plan.parse_meshes(bad)
        plan.check_mesh_fits([2, 4], [plan.MeshPattern(-1, 2)])
        with self.assertRaisesRegex(plan.StudyInputError, r"--ranks: 2, 3 cannot run on --mesh 2x2"):
            plan.check_mesh_fits([2, 3, 4], [plan.MeshPattern(2, 2)])

    def test_plan_weak_and_serial(self):
        kpmaps = [("/omp/kpmap", "OpenMP"), ("/serial/kpmap", "Serial")]
        runs = plan.plan_runs("weak", kpmaps, [1, 4], [plan.MeshPattern(-1, 1)],
                              [1, 2], ["fused"], ["fp32", "bf16"], 2, ["train.steps=3"], weak_rows=(1000, 100))
        # per repeat: OpenMP 2 threads x 2 precisions x 2 rank counts + Serial 1 x 2 x 2 = 12; 2 repeats
        self.assertEqual(len(runs), 24)
        self.assertEqual([r.index for r in runs], list(range(1, 25)))
        self.assertEqual({r.threads for r in runs if r.backend == "Serial"}, {1})
        four = [r for r in runs if r.ranks == 4][0]
        self.assertIn("problem.samples=4000", four.sets)
        self.assertIn("train.batch=400", four.sets)
        self.assertEqual(four.sets[-1], "mesh.axes={data: 4, model: 1}")
        self.assertEqual([r.repeat for r in runs], [1] * 12 + [2] * 12)
        strong = plan.plan_runs("strong", kpmaps[:1], [2], [plan.MeshPattern(-1, 2)], [1], [""], [""], 1, [])
        self.assertEqual(strong[0].sets, ["mesh.axes={data: 1, model: 2}"])

    def test_curves_take_the_median_and_tell_studies_apart(self):
        def row(study_id, ranks, model, seconds):
            return {"study_id": study_id, "study": "strong", "model": str(model), "threads": "1", "backend": "OpenMP",
                    "kernel": "fused", "precision": "fp32", "features": "16", "ranks": str(ranks),
                    "mesh": f"{ranks // model}x{model}", "total_s_per_step_max": str(seconds)}
        rows = [row("a", 1, 1, 4.0), row("a", 1, 1, 9.0), row("a", 1, 1, 5.0), row("a", 2, 1, 3.0),
                row("a", 2, 2, 2.0), row("b", 1, 1, 1.0)]
        self.assertEqual(plot.curves(rows, "strong"),
                         {"model=1 OpenMP t=1 fused fp32 [a]": {1: 5.0, 2: 3.0},  # 5 = median of 4, 9, 5
                          "model=2 OpenMP t=1 fused fp32": {2: 2.0},
                          "model=1 OpenMP t=1 fused fp32 [b]": {1: 1.0}})
        self.assertEqual(plot.curves(rows, "weak"), {})

    def test_int_lists(self):
        self.assertEqual(plan.parse_int_list("--ranks", "1, 2,4"), [1, 2, 4])
        for bad in ("", ",", "1,,2", "1,1", "0", "x"):
            with self.assertRaises(plan.StudyInputError, msg=bad):
                plan.parse_int_list("--ranks", bad)

    def test_row_without_and_with_comm_model(self):
        plain = runner.report_row(report(2, 2, 1, 4, 0.2, 0.08), run_of(2, 2, 1), "strong", "id", MACHINE, 1.5,
                                  "/bin/kpmap", "r.json", ["mpiexec", "-n", "2", "kpmap"])
        self.assertEqual(list(plain), runner.COLUMNS)
        self.assertEqual(plain["mesh"], "2x1")
        self.assertEqual(plain["precision"], "bf16")
        self.assertEqual(plain["total_s_per_step_avg"], "0.05")  # 0.2 s over 4 steps
        self.assertEqual(plain["total_s_per_step_max"], "0.1")
        self.assertEqual(plain["comm_s_per_step_avg"], "0.02")
        self.assertEqual(plain["mpi_version"], "MPICH Version: 4.0.2")
        self.assertEqual((plain["comm_model_file"], plain["predicted_comm_s_per_step"],
                          plain["measured_comm_s_per_step"]), ("", "", ""))
        self.assertEqual(json.loads(plain["config"])["mesh"]["axes"], {"data": 2, "model": 1})
        model = {"file": "m.json", "predicted_s_per_step": 0.0125, "measured_s_per_step": 0.02, "collectives": []}
        with_model = runner.report_row(report(2, 2, 1, 4, 0.2, 0.08, model), run_of(2, 2, 1), "strong", "id",
                                       MACHINE, 1.5, "/bin/kpmap", "r.json", ["kpmap"])
        self.assertEqual((with_model["comm_model_file"], with_model["predicted_comm_s_per_step"],
                          with_model["measured_comm_s_per_step"]), ("m.json", "0.0125", "0.02"))

    def test_csv_columns_checked(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.csv")
            runner.check_csv(path)  # new: fine
            with open(path, "w", newline="") as f:
                csv.writer(f).writerow(runner.COLUMNS)
            runner.check_csv(path)  # ours: appended to
            with open(path, "w") as f:
                f.write("a,b\n")
            with self.assertRaisesRegex(plan.StudyInputError, "exists with other columns"):
                runner.check_csv(path)
            with self.assertRaisesRegex(plan.StudyInputError, "does not exist"):
                runner.check_csv(os.path.join(d, "no", "s.csv"))

    def test_cpu_model(self):
        with tempfile.NamedTemporaryFile("w", suffix="cpuinfo", delete=False) as f:
            f.write("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD  EPYC 7B13\n\nprocessor\t: 1\n"
                    "model name\t: other\n")
        try:
            self.assertEqual(machine.cpu_model(f.name), "AMD EPYC 7B13")
        finally:
            os.unlink(f.name)
        self.assertEqual(machine.cpu_model("/nonexistent/cpuinfo"), "")

    def test_sets_owned_by_the_study(self):
        plan.check_sets(["train.batch=64", "problem.seed=3", "comm.strategy=reduce_scatter"])
        for bad in ("mesh.axes={data: 2}", "mesh={axes: {data: 1}}", "train.steps=3", "output.report=x",
                    "comm.model=f", "comm={model: f}", "nokey"):
            with self.assertRaises(plan.StudyInputError, msg=bad):
                plan.check_sets([bad])

    def test_plots_with_a_comm_model(self):
        if PLOTS is None:
            self.skipTest("needs --plots DIR (and matplotlib)")
        import check_study
        csv_path = os.path.join(PLOTS, "model.csv")
        with open(csv_path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=runner.COLUMNS)
            w.writeheader()
            for n, total, comm, predicted in ((1, 0.4, 0.0, 0.0), (2, 0.24, 0.04, 0.009), (4, 0.16, 0.06, 0.012)):
                model = {"file": "m.json", "predicted_s_per_step": predicted, "measured_s_per_step": comm / 4,
                         "collectives": []}
                w.writerow(runner.report_row(report(n, n, 1, 4, total, comm, model), run_of(n, n, 1), "strong", "id",
                                             MACHINE, 1.0, "/bin/kpmap", "r.json", ["kpmap"]))
        out = io.StringIO()
        written = plot.plot(csv_path, PLOTS, out=out)
        names = sorted(os.path.basename(p) for p in written)
        self.assertEqual(names, ["breakdown.png", "comm_model.png", "efficiency.png", "scaling.png"], out.getvalue())
        for p in written:
            check_study.check_png(p)
        self.assertEqual(check_study.problems, [])


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--plots")
    a, rest = p.parse_known_args()
    if a.plots:
        os.makedirs(a.plots, exist_ok=True)
        PLOTS = a.plots  # noqa: F811 (read by the test at run time)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
