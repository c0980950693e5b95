"""Smoke test of ``benchmarks/studies/tune.py`` on digits (seconds)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "studies" / "tune.py"


@pytest.fixture(scope="module")
def tune_module():
    sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("benchmark_tune", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.path.remove(str(SCRIPT.parent))


def test_pilot_run_scores_held_out_bags(tune_module, tmp_path):
    common = ["--dataset", "digits", "--epochs", "3", "--every", "2"]
    out = ["--out", str(tmp_path)]
    tune_module.main([*common, "--bag", "16", "--schedule", "cos", "--tag", "a", *out])
    tune_module.main([*common, "--bag", "16", "--method", "sup", "--tag", "b", *out])

    records = [json.loads(line) for line in (tmp_path / "tuning.jsonl").open()]
    assert [r["tag"] for r in records] == ["a", "b"]
    llp, supervised = records
    # 1,437 training rows in 89 bags of 16 (13 left over): 8 bags held out
    assert llp["n_held_out"] == supervised["n_held_out"] == 8 * 16
    assert llp["n_train"] == 81 * 16
    assert [p["epoch"] for p in llp["curve"]] == [2, 3]
    assert 0.0 <= llp["final"]["hard_l1"] <= 2.0
    # the supervised model is scored on the same held-out bags
    assert 0.0 <= supervised["final"]["hard_l1"] <= 2.0
    assert supervised["method"] == "sup"
    assert supervised["final"]["accuracy"] > 0.5  # 10 classes, labels seen

    table = (tmp_path / "tuning.md").read_text()
    assert table.count("| digits | 16 |") == 2
    assert "| cos |" in table
