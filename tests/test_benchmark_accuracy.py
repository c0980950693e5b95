"""Smoke test of ``benchmarks/accuracy.py --quick`` (digits, seconds)."""

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "accuracy.py"


@pytest.fixture(scope="module")
def accuracy_module():
    spec = importlib.util.spec_from_file_location("benchmark_accuracy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quick_run_writes_json_and_markdown(accuracy_module, tmp_path):
    output = accuracy_module.main(["--quick", "--quiet", "--out", str(tmp_path)])

    data = json.loads((tmp_path / "accuracy.json").read_text())
    assert data["records"] == output["records"]
    records = data["records"]
    # digits, 1 seed: 4 baggings x 4 LLP methods + the supervised bound
    assert len(records) == 4 * 4 + 1
    runs = {(r["dataset"], r["bagging"], r["method"], r["seed"]) for r in records}
    assert len(runs) == len(records)  # one record per run
    assert {r["method"] for r in records} == {"dllp", "vat", "pi", "rot", "supervised"}
    assert {r["bagging"] for r in records} == {
        "uniform-16",
        "uniform-64",
        "uniform-256",
        "kmeans",
        "supervised",
    }
    for record in records:
        assert record["dataset"] == "digits"
        assert 0.0 <= record["accuracy"] <= 1.0
        assert record["fit_seconds"] >= 0
        hp = record["hyperparameters"]
        # bags of 256 > base batch 128: twice the epochs
        epochs = 20 if record["bagging"] == "uniform-256" else 10
        assert record["epochs"] == hp["max_epochs"] == epochs
        # bags of 256 > base batch 128: 8 per batch; the others: base 128
        batch = {"uniform-256": 2048}
        assert hp["batch_size"] == batch.get(record["bagging"], 128)
        assert hp["lr_schedule"] == "cosine"
        assert record["n_train"] == 600
        assert record["torch_threads"] == 1
    # 10 classes: a trained model beats guessing on the supervised run
    supervised = next(r for r in records if r["method"] == "supervised")
    assert supervised["accuracy"] > 0.5
    vat = next(r for r in records if r["method"] == "vat")
    assert vat["hyperparameters"]["method__eps"] > 0
    bags16 = next(r for r in records if r["bagging"] == "uniform-16")["bags"]
    assert bags16["bag_size_min"] == bags16["bag_size_max"] == 16
    assert data["invocations"][-1]["complete"]

    table = (tmp_path / "accuracy.md").read_text()
    assert "| digits (600 train) | random 16 |" in table
    assert "supervised" in table
    assert "torch threads per run: 1" in table
    assert table.count("| digits (600 train) |") == 4
    assert "| random 256 (20 epochs) |" in table


def test_resume_skips_finished_runs(accuracy_module, tmp_path):
    args = ["--quick", "--quiet", "--out", str(tmp_path), "--methods", "dllp"]
    first = accuracy_module.main([*args, "--bag-sizes", "16"])
    assert len(first["records"]) == 1
    second = accuracy_module.main([*args, "--bag-sizes", "16", "64", "--resume"])
    assert second["invocations"][-1]["n_runs"] == 1  # only the new bag size
    assert len(second["records"]) == 2
    assert second["records"][0] == first["records"][0]

    (tmp_path / "accuracy.md").unlink()
    accuracy_module.main(["--markdown-only", "--quiet", "--out", str(tmp_path)])
    table = (tmp_path / "accuracy.md").read_text()
    assert "| random 16 |" in table and "| random 64 |" in table
    assert table.count("* `python benchmarks/accuracy.py") == 2  # 2 invocations


def test_training_for_packs_eight_large_bags(accuracy_module):
    base = {"max_epochs": 20, "batch_size": 128, "lr": 1e-3}
    training_for = accuracy_module.training_for
    assert training_for(base, "supervised") == base
    assert training_for(base, "uniform-16") == base
    assert training_for(base, "uniform-64") == base  # 2 bags per base batch
    assert training_for(base, "uniform-128") == {**base, "batch_size": 1024}
    assert training_for(base, "uniform-256") == {
        **base,
        "batch_size": 2048,
        "max_epochs": 40,
    }
    assert training_for(base, "kmeans") == base
    wide = {**base, "batch_size": 256}
    assert training_for(wide, "uniform-64") == wide
    assert training_for(wide, "uniform-256") == {**wide, "batch_size": 2048}


def test_cosine_schedule_reaches_zero(accuracy_module, monkeypatch):
    """The recorded schedule is the one applied: lr ends near 0."""
    task = accuracy_module.make_tasks(
        accuracy_module.parse_args(
            ["--quick", "--methods", "dllp", "--bag-sizes", "16", "--out", "x"]
        )
    )[0]
    fitted = []
    original = accuracy_module.LLPClassifier.fit

    def spy(self, *args, **kwargs):
        fitted.append(self)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(accuracy_module.LLPClassifier, "fit", spy)
    accuracy_module.run_task(task)
    (clf,) = fitted
    lrs = [group["lr"] for group in clf.optimizer_.param_groups]
    assert max(lrs) < 1e-6


def test_selected_settings_apply_to_their_cell_only(accuracy_module):
    args = accuracy_module.parse_args(
        ["--datasets", "fashion", "digits", "--methods", "vat", "--seeds", "0"]
    )
    alphas = {
        (t["dataset"], t["bagging"]): accuracy_module.hyperparameters(t)[
            "method__alpha"
        ]
        for t in accuracy_module.make_tasks(args)
    }
    assert alphas.pop(("fashion", "uniform-16")) == 0.1
    assert set(alphas.values()) == {accuracy_module.VAT_ALPHA}


def test_selected_training_applies_to_every_method_of_its_cell(accuracy_module):
    args = accuracy_module.parse_args(["--datasets", "fashion", "--seeds", "0"])
    settings = {
        (t["bagging"], t["method"]): accuracy_module.hyperparameters(t)
        for t in accuracy_module.make_tasks(args)
    }
    for method in accuracy_module.LLP_METHODS:
        # bags of 256: 8 bags a step, the pilots' 80 epochs at lr 5e-4
        cell = settings.pop(("uniform-256", method))
        assert (cell["batch_size"], cell["max_epochs"], cell["lr"]) == (2048, 80, 5e-4)
    # bags of 16: VAT and the Pi-model were selected 40 epochs
    for method in ("vat", "pi"):
        assert settings.pop(("uniform-16", method))["max_epochs"] == 40
    # every other cell, the supervised bound included, keeps the base settings
    assert {(p["max_epochs"], p["lr"]) for p in settings.values()} == {(20, 1e-3)}
