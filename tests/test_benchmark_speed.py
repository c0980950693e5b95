"""Smoke test of benchmarks/speed.py: ``--quick`` and ``--scale`` write the
expected reports, and ``--resummarise`` renders the same tables from them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "speed.py"
# the CPU memory probe resets the peak RSS through /proc/self/clear_refs
MEASURABLE = os.access("/proc/self/clear_refs", os.W_OK)
ENGINES = ("llp-dllp", "bare-dllp", "llp-vat", "bare-vat")
TABLES = ("speed.md", "speed_scale.md")


def speed(*args, out):
    command = [sys.executable, str(SCRIPT), *args, "--out", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.mark.slow
def test_quick_and_scale_runs_write_reports_that_resummarise_renders(tmp_path):
    speed("--quick", out=tmp_path)
    report = json.loads((tmp_path / "speed.json").read_text())
    assert (tmp_path / "speed.md").read_text().startswith("# Training speed")

    assert report["quick"] is True
    machine = report["machine"]
    assert machine["usable_cpus"] >= 1 and machine["device"] == "cpu"
    assert {"torch", "skorch", "sklearn_llp"} <= set(machine["versions"])
    assert report["settings"]["threads"] == 1
    assert report["settings"]["batch_size"] == 128

    results = report["results"]
    assert {r["experiment"] for r in results} == {"rows", "bag_size"}
    assert [r["rows"] for r in results if r["experiment"] == "rows"] == [10_000]
    caps = {(r["bag_size"], r["max_bag_size"]) for r in results if r["bag_size"]}
    assert caps == {(16, 1024), (10_000, 1024), (10_000, None)}
    for r in results:
        assert r["instances_per_epoch"] > 0 and r["batches_per_epoch"] > 0
        assert r["memory_kind"] in ("rss_peak_delta", "cuda_max_memory_allocated_delta")
        for name in ENGINES:
            e = r["engines"][name]
            assert len(e["epoch_s"]) >= 1 and e["epoch_s_median"] > 0
            rate = r["instances_per_epoch"] / e["epoch_s_median"]
            assert np.isclose(e["instances_per_s"], rate)
            # measured where the kernel lets the probe reset its peak, else None
            if MEASURABLE:
                assert isinstance(e["peak_mem_mib"], float)
                assert e["peak_mem_mib"] >= 0
            else:
                assert e["peak_mem_mib"] is None
        for m in ("dllp", "vat"):
            llp, bare = r["engines"][f"llp-{m}"], r["engines"][f"bare-{m}"]
            paired = np.median(np.divide(llp["epoch_s"], bare["epoch_s"]))
            assert np.isclose(r[f"llp_over_bare_{m}"], paired)
            of_medians = llp["epoch_s_median"] / bare["epoch_s_median"]
            assert np.isclose(r[f"llp_over_bare_{m}_of_medians"], of_medians)
        assert r["vat_over_dllp_llp"] > 0 and r["vat_over_dllp_bare"] > 0
        assert r["engines"]["llp-dllp"]["fit_setup_s"] >= 0
    capped = next(r for r in results if r["bag_size"] == 10_000 and r["max_bag_size"])
    assert capped["instances_per_epoch"] == 2 * 10_000  # whole, in chunks

    summary = report["summary"]
    llp_over_bare = summary["llp_over_bare"]
    assert llp_over_bare["target"] == 1.15
    # the summary's worst ratio is the worst of the records', and "met" says
    # whether it is within the target
    worst = max(r[f"llp_over_bare_{m}"] for r in results for m in ("dllp", "vat"))
    assert llp_over_bare["max"] == pytest.approx(worst)
    assert llp_over_bare["met"] is (worst <= 1.15)
    assert summary["vat_over_dllp"]["target"] == 3.0
    assert "with_max_bag_size_1024" in summary["memory_flat_in_bag_size"]
    assert report["wall_s"] < 120

    # --scale: one fit per variant, the table rendered from the JSON
    speed("--scale", "2e4", out=tmp_path)
    report = json.loads((tmp_path / "speed_scale.json").read_text())
    table = (tmp_path / "speed_scale.md").read_text()
    assert [r["variant"] for r in report["records"]][0] == "defaults"
    previous = report["records"][-1]
    assert previous["batch_size_"] == 128 and previous["threads"] == 1
    for r in report["records"]:
        row = f"| {r['fit_s']:.1f} | {r['rows_per_s']:,} | {r['accuracy']:.3f} |"
        assert row in table
        # 4 balanced-ish classes: a model that learned nothing is near 0.25
        assert r["accuracy"] > 0.5
    speed("--overhead", "--repeats", "1", out=tmp_path)  # us a step of each part
    for r in json.loads((tmp_path / "speed_overhead.json").read_text())[
        "results"
    ].values():
        parts = (
            r["bare_us_per_step"] + r["making_us_per_step"] + r["engine_us_per_step"]
        )
        assert r["making_us_per_step"] > 0 and r["llp_us_per_step"] == pytest.approx(
            parts
        )
    tables = {name: (tmp_path / name).read_text() for name in TABLES}
    speed("--resummarise", out=tmp_path)
    assert {name: (tmp_path / name).read_text() for name in TABLES} == tables
