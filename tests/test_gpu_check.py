"""``benchmarks/gpu_check.py`` works end to end: ``--help``, and a dry run on
the CPU with tiny sizes (what a GPU machine runs in full)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "gpu_check.py"


def _run(*args, timeout=120):
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=SCRIPT.parents[1],
    )


@pytest.mark.slow
def test_help_and_a_dry_run_that_writes_the_report(tmp_path):
    done = _run("--help")
    assert done.returncode == 0, done.stderr
    assert "--dry-run" in done.stdout and "SKLEARN_LLP_TEST_DEVICE" in done.stdout
    done = _run("--dry-run", "--out", str(tmp_path))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads((tmp_path / "gpu_check.json").read_text())
    assert report["dry_run"] and report["machine"]["device"] == "cpu"
    assert report["tests"]["returncode"] == 0, report["tests"]
    methods = {r["method"] for r in report["determinism"]}
    assert {"dllp", "vat", "pi", "rot", "llpfc", "easyllp", "noisy"} <= methods
    assert all(r["identical"] for r in report["determinism"])
    rows = report["throughput"]
    assert {r["method"] for r in rows} == {"dllp", "vat"}
    assert all(r["llp_rows_per_s"] > 0 and r["bare_rows_per_s"] > 0 for r in rows)
    assert (
        {r["width"] for r in rows} == {256, 16} == {256, report["goals"]["wide_width"]}
    )
    markdown = (tmp_path / "gpu_check.md").read_text()
    assert "Seeded fits repeated bit for bit" in markdown
