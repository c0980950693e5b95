"""Tests of ``benchmarks/studies/adult_few_bags.py``: the ``--quick`` run (seconds) and
that the committed table is the committed results, number for number."""

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks/studies/adult_few_bags.py"
COMMITTED_JSON = SCRIPT.parents[1] / "results" / "adult_few_bags.json"
COMMITTED_MD = SCRIPT.parents[1] / "results" / "adult_few_bags.md"
RECORD_KEYS = {
    "variant", "seed", "method", "chosen", "held_out_hard_l1", "roc_auc",
    "f1_argmax", "f1_prior", "accuracy_argmax", "accuracy_prior",
    "positive_rate_argmax", "positive_rate_prior", "threshold_",
    "select_seconds", "fit_seconds", "n_train", "n_test", "bag_sizes", "warnings",
}  # fmt: skip


@pytest.fixture(scope="module")
def module():
    spec = importlib.util.spec_from_file_location("benchmark_adult_few_bags", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_rows(markdown, heading):
    """``{method name: [cells]}`` of the table under ``heading``."""
    section = markdown.split(heading, 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    return {row[0]: row[1:] for row in cells if row[0] != "method"}


def test_quick_run_writes_json_and_markdown(module, tmp_path):
    output = module.main(["--quick", "--out", str(tmp_path)])

    data = json.loads((tmp_path / "adult_few_bags.json").read_text())
    assert data == json.loads(json.dumps(output))
    settings = data["settings"]
    assert settings["quick"] is True
    assert (settings["n_rows"], settings["epochs"]) == (2000, 2)
    assert data["published"] == json.loads(json.dumps(module.PUBLISHED))
    records = data["records"]
    runs = [(r["variant"], r["seed"], r["method"]) for r in records]
    assert runs == [("equal", 0, "dllp"), ("equal", 0, "meanmap")]
    for record, grid in zip(records, (settings["lr_grid"], settings["c_grid"])):
        assert set(record) == RECORD_KEYS
        assert record["chosen"] in grid
        assert set(record["held_out_hard_l1"]) == {repr(v) for v in grid}
        assert record["n_train"] == 1500 and record["n_test"] == 500
        assert len(record["bag_sizes"]) == 10 and sum(record["bag_sizes"]) == 1500
        for key in module.COLUMNS:
            assert 0.0 <= record[key] <= 1.0
    markdown = (tmp_path / "adult_few_bags.md").read_text()
    assert markdown == module.markdown(data)
    assert set(table_rows(markdown, "## naive-large-equal")) == {"DLLP", "Mean Map"}


def test_committed_table_matches_committed_results(module):
    data = json.loads(COMMITTED_JSON.read_text())
    markdown = COMMITTED_MD.read_text()
    assert not data["settings"]["quick"]
    assert data["settings"]["n_rows"] == 48842 and data["settings"]["epochs"] == 100
    assert data["published"] == json.loads(json.dumps(module.PUBLISHED))
    # the whole file is what the script writes from the JSON ...
    assert markdown == module.markdown(data)
    # ... and, number for number, each row is the mean of its records
    pub = module.PUBLISHED
    for variant in sorted({r["variant"] for r in data["records"]}):
        rows = table_rows(markdown, f"## naive-large-{variant}")
        methods = {r["method"] for r in data["records"] if r["variant"] == variant}
        assert set(rows) == {module.NAMES[m] for m in methods}
        for method in methods:
            recs = [r for r in data["records"] if r["variant"] == variant]
            recs = [r for r in recs if r["method"] == method]
            cells = rows[module.NAMES[method]]
            if method in pub["methods"]:
                i = pub["methods"].index(method)
                f1, ci = pub["f1"][variant][i] * 100, pub["ci"][variant][i] * 100
                assert cells[0] == f"{f1:.1f} ± {ci:.1f}"
            for key, text in zip(module.COLUMNS, cells[1:]):
                mean = float(re.match(r"-?[\d.]+", text).group())
                expected = 100 * np.mean([r[key] for r in recs])
                assert mean == pytest.approx(expected, abs=0.05)
            assert cells[len(module.COLUMNS) + 1] == ", ".join(
                f"{r['chosen']:g}" for r in recs
            )
    # the published table holds both variants' rows
    published = table_rows(markdown, "# Adult")
    assert published["LLPFC"][:2] == ["39.0 ± 3.7", "36.1 ± 3.7"]
    assert published["Mean Map"][:2] == ["15.5 ± 7.4", "17.6 ± 7.4"]
