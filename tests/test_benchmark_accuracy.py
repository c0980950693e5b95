"""Tests of ``benchmarks/accuracy.py``: the ``--quick`` smoke run (digits,
seconds), the bookkeeping, and that ``batch_size="auto"`` repeats the batch
the grid used to set by hand."""

import importlib.util
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from sklearn_llp.methods import method_params

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "accuracy.py"
COMMITTED = SCRIPT.parent / "results" / "accuracy.json"

#: The grid's hand rule before ``batch_size="auto"``: a base batch per data
#: set, and random bags at least as large packed 8 to a batch.
OLD_BASE_BATCH = {"digits": 128, "mnist5k": 128, "fashion": 128, "adult": 256}


def old_batch(dataset, bagging):
    base = OLD_BASE_BATCH[dataset]
    if bagging.startswith("uniform-"):
        size = int(bagging.split("-")[1])
        if size >= base:
            return 8 * size
    return base


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
    # digits, 1 seed: 4 baggings x 7 LLP methods, 2 batch-128 variants on
    # bags of 256, the Laplacian Mean Map on every bagging, the bound
    assert len(records) == 4 * 7 + 2 + 4 + 1
    runs = {(r["dataset"], r["bagging"], r["method"], r["seed"]) for r in records}
    assert len(runs) == len(records)  # one record per run
    assert {r["method"] for r in records} == {
        "dllp",
        "vat",
        "pi",
        "rot",
        "llpfc",
        "easyllp",
        "meanmap",
        "dllp-batch128",
        "vat-batch128",
        "meanmap-laplacian",
        "supervised",
    }
    assert {r["bagging"] for r in records} == {
        "uniform-16",
        "uniform-64",
        "uniform-256",
        "kmeans",
        "supervised",
    }
    variants = [r for r in records if r["method"].endswith("-batch128")]
    assert {r["bagging"] for r in variants} == {"uniform-256"}
    for record in records:
        assert record["dataset"] == "digits"
        assert record["fit_seconds"] >= 0
        assert record["n_train"] == 600
        assert record["torch_threads"] == 1
        hp = record["hyperparameters"]
        if "error" in record:
            # LLPFC groups bags by the 10 classes: 600 rows in bags of 64
            # (9 bags) or 256 (2) and 9 K-means bags are too few
            # the Laplacian Mean Map's held-out selection needs 6 bags
            assert record["method"] in ("llpfc", "meanmap-laplacian")
            assert record["status"] == "refused"
            assert record["bagging"] != "uniform-16"
            continue
        assert 0.0 <= record["accuracy"] <= 1.0
        assert record["decision"] == "argmax"  # 10 classes
        if record["method"] == "meanmap-laplacian":
            assert hp["laplacian"] == "held-out"
            assert record["laplacian_"] in accuracy_module.LAPLACIAN_GRID
            continue
        if record["method"] == "meanmap":
            assert hp["C"] == 1e-3  # the package default
            assert record["batch_size_"] is None and record["epochs"] is None
            assert record["n_iter"] >= 1
            continue
        # bags of 256 >= 128 rows: twice the epochs
        epochs = 20 if record["bagging"] == "uniform-256" else 10
        assert record["epochs"] == hp["max_epochs"] == epochs
        assert hp["lr_schedule"] == "cosine"
        assert hp["threshold"] == "auto"
        if record["method"].endswith("-batch128"):
            assert hp["batch_size"] == record["batch_size_"] == 128
        else:
            # "auto": 8 bags of 256 a step, 128 rows for smaller bags
            assert hp["batch_size"] == "auto"
            assert record["batch_size_"] == old_batch("digits", record["bagging"])
    # 10 classes: a trained model beats guessing on the supervised run
    supervised = next(r for r in records if r["method"] == "supervised")
    assert supervised["accuracy"] > 0.5
    vat = next(r for r in records if r["method"] == "vat")
    assert vat["hyperparameters"]["method__eps"] > 0
    assert vat["hyperparameters"]["method__xi"] == "auto"
    llpfc = next(r for r in records if r["method"] == "llpfc")
    assert llpfc["hyperparameters"]["method__regroup_every"] == 20
    bags16 = next(r for r in records if r["bagging"] == "uniform-16")["bags"]
    assert bags16["bag_size_min"] == bags16["bag_size_max"] == 16
    assert data["invocations"][-1]["complete"]

    table = (tmp_path / "accuracy.md").read_text()
    assert "| digits (600 train) | random 16 |" in table
    assert "| LLPFC | EasyLLP | Mean Map | supervised (same MLP) |" in table
    assert "torch threads per run: 1" in table
    assert table.count("| digits (600 train) |") == 4
    assert "| random 256 (20 epochs) |" in table
    assert "refused" in table
    assert "| DLLP, batch 128 | 128 / 2048 |" in table
    assert "## Fit time" in table


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


def test_few_large_bags_on_adult(accuracy_module, tmp_path):
    """count-N baggings: N bags of n_train // N rows; Mean Map and the F1 /
    AUC of two classes; the few-bags table."""
    args = ["--quick", "--quiet", "--out", str(tmp_path), "--datasets", "adult"]
    output = accuracy_module.main(
        [*args, "--bag-sizes", "count-10", "--methods", "dllp", "meanmap"]
    )
    records = output["records"]
    assert len(records) == 2
    for record in records:
        assert record["bags"]["n_bags"] == 10
        assert record["bags"]["bag_size"] == 600 // 10
        assert 0.0 <= record["f1"] <= 1.0 and 0.0 <= record["roc_auc"] <= 1.0
        assert "accuracy_argmax" in record and "f1_argmax" in record
    dllp = next(r for r in records if r["method"] == "dllp")
    assert dllp["decision"] == "prior"  # two classes, fitted on bags
    assert 0.0 < dllp["threshold_"] < 1.0
    assert dllp["fit_warnings"].get("IdentifiabilityWarning", 0) >= 1
    table = (tmp_path / "accuracy.md").read_text()
    assert "in few large bags (%)" in table
    assert "random, 10 bags of 60: F1" in table


def test_training_for_multiplies_epochs_of_large_bags(accuracy_module):
    base = {"max_epochs": 20, "lr": 1e-3}
    training_for = accuracy_module.training_for
    assert training_for(base, "supervised") == base
    assert training_for(base, "uniform-16") == base
    assert training_for(base, "uniform-64") == base
    assert training_for(base, "uniform-128") == base
    assert training_for(base, "uniform-256") == {**base, "max_epochs": 40}
    assert training_for(base, "kmeans") == base
    # Adult's few bags: 10 of 3,256 rows, 25 of 1,302 rows
    assert training_for(base, "count-10", 32561)["max_epochs"] == 20 * 25
    assert training_for(base, "count-25", 32561)["max_epochs"] == 20 * 10
    assert training_for(base, "count-10", 600) == base  # bags of 60


def test_bag_generator_count_bags(accuracy_module):
    gen, settings = accuracy_module.bag_generator("count-25", 32561, 108, 0)
    assert gen.bag_size == 32561 // 25 == settings["bag_size"]
    assert settings["n_bags_wanted"] == 25
    X = np.zeros((1003, 2), dtype=np.float32)
    y = np.arange(1003) % 2
    gen, _ = accuracy_module.bag_generator("count-10", len(X), 2, 0)
    bags, _ = gen.make_bags(X, y)
    assert len(np.unique(bags[bags >= 0])) == 10


def test_variants_run_on_their_cells_only(accuracy_module):
    args = accuracy_module.parse_args(
        ["--datasets", "digits", "adult", "--seeds", "0", "--max-train", "2000"]
    )
    cells = {}
    for task in accuracy_module.make_tasks(args):
        cells.setdefault(task["method"], set()).add((task["dataset"], task["bagging"]))
    for variant in ("dllp-batch128", "vat-batch128"):
        assert cells[variant] == {("digits", "uniform-256"), ("adult", "uniform-256")}
    assert cells["vat-batch256"] == {
        ("adult", "uniform-16"),
        ("adult", "uniform-64"),
        ("adult", "kmeans"),
    }
    # few bags on Adult only, every method there
    count_cells = {c for c in cells["meanmap"] if c[1].startswith("count-")}
    assert count_cells == {("adult", "count-10"), ("adult", "count-25")}
    assert all(
        {("adult", "count-10"), ("adult", "count-25")} <= cells[m]
        for m in accuracy_module.LLP_METHODS
    )
    task = next(
        t for t in accuracy_module.make_tasks(args) if t["method"] == "vat-batch128"
    )
    params = accuracy_module.hyperparameters(task)
    assert params["method"] == "vat" and params["batch_size"] == 128


def test_auto_batch_is_the_old_hand_rule_on_digits(accuracy_module):
    """``LLPClassifier(batch_size="auto")`` resolves, on every digits cell,
    to the batch the grid set by hand."""
    m = accuracy_module
    X_train, _, y_train, _ = m.load_dataset("digits")
    for bagging in ("uniform-16", "uniform-64", "uniform-256", "kmeans"):
        bags, props, info = m.make_bags("digits", None, str(m.FASHION_DIR), bagging, 0)
        keep = bags >= 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = m.LLPClassifier(method="dllp", max_epochs=0, verbose=0, device="cpu")
            clf.fit(X_train[keep], bags[keep], props[keep])
        assert clf.batch_size_ == old_batch("digits", bagging)
    clf = m.LLPClassifier(method="dllp", max_epochs=0, verbose=0, device="cpu")
    clf.fit(X_train, y_train)
    assert clf.batch_size_ == old_batch("digits", "supervised") == 128


def test_resume_recognises_every_committed_record(accuracy_module):
    """The settings the script builds from the package's defaults are those
    of every committed record: a changed default (or a hand-typed value
    drifting from it) would make ``--resume`` rerun them, and the committed
    table would no longer be what the script computes."""
    m = accuracy_module
    output = json.loads((m.RESULTS_DIR / "accuracy.json").read_text())
    done = {m.identity(r): r for r in output["records"]}
    args = m.parse_args(["--datasets", "digits", "mnist5k", "fashion", "adult"])
    tasks = m.make_tasks(args)
    assert len(tasks) == len(output["records"]) == 465
    stale = [
        m.identity(t)
        for t in tasks
        if m.identity(t) not in done or not m.settings_match(done[m.identity(t)], t)
    ]
    assert stale == []


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
    assert set(alphas.values()) == {method_params("vat")["alpha"]}


def test_selected_training_applies_to_every_method_of_its_cell(accuracy_module):
    args = accuracy_module.parse_args(["--datasets", "fashion", "--seeds", "0"])
    settings = {
        (t["bagging"], t["method"]): accuracy_module.hyperparameters(t)
        for t in accuracy_module.make_tasks(args)
    }
    for method in accuracy_module.NETWORK_METHODS:
        # bags of 256: the pilots' 80 epochs at lr 5e-4 (8 bags a step: auto)
        cell = settings.pop(("uniform-256", method))
        assert (cell["batch_size"], cell["max_epochs"], cell["lr"]) == (
            "auto",
            80,
            5e-4,
        )
    for variant in ("dllp-batch128", "vat-batch128"):
        cell = settings.pop(("uniform-256", variant))
        assert (cell["batch_size"], cell["max_epochs"], cell["lr"]) == (128, 80, 5e-4)
    # bags of 16: VAT and the Pi-model were selected 40 epochs
    for method in ("vat", "pi"):
        assert settings.pop(("uniform-16", method))["max_epochs"] == 40
    # Mean Map has no epochs
    for bagging in ("uniform-16", "uniform-64", "uniform-256", "kmeans"):
        assert "max_epochs" not in settings.pop((bagging, "meanmap"))
    # every other cell, the supervised bound included, keeps the base settings
    assert {(p["max_epochs"], p["lr"]) for p in settings.values()} == {(20, 1e-3)}


@pytest.mark.skipif(not COMMITTED.exists(), reason="no committed results")
def test_readme_accuracy_tables_are_the_committed_ones():
    """Every table row of the README's accuracy section is a row of the
    committed ``accuracy.md``, so the README cannot drift from the JSON."""
    readme = (SCRIPT.parents[1] / "README.md").read_text()
    section = readme.split("<!-- accuracy-results -->")[1]
    section = section.split("<!-- /accuracy-results -->")[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert len(rows) >= 20
    table = (COMMITTED.parent / "accuracy.md").read_text().splitlines()
    missing = [row for row in rows if row not in table]
    assert not missing, missing


def test_every_method_of_a_cell_saw_the_same_bags():
    """The methods of a row are compared on the same bags: within a data
    set, bagging and seed every committed record has the same bag
    statistics (records kept from an earlier run once had other K-means
    bags than the rest of their row)."""
    records = json.loads(COMMITTED.read_text())["records"]
    bags = {}
    for record in records:
        if record["bagging"] == "supervised" or record.get("bags") is None:
            continue
        key = (record["dataset"], record["bagging"], record["seed"])
        stats = {k: v for k, v in record["bags"].items() if k != "bag_seconds"}
        bags.setdefault(key, []).append((record["method"], stats))
    assert len(bags) == 54  # 4 data sets x 4 or 6 baggings x 3 seeds
    differing = {
        key: seen
        for key, seen in bags.items()
        if any(stats != seen[0][1] for _, stats in seen)
    }
    assert differing == {}


MANY_BAG_CELLS = [
    (dataset, bagging)
    for dataset in ("digits", "mnist5k", "fashion", "adult")
    for bagging in ("uniform-16", "uniform-64", "uniform-256", "kmeans")
]


def _normalised(path):
    return " ".join(path.read_text().split())


@pytest.mark.skipif(not COMMITTED.exists(), reason="no committed results")
def test_grid_summaries_in_the_docs_are_the_committed_ones(accuracy_module):
    """The prose that sums up the grid (best counts, how far DLLP, Π and ROT
    are from VAT) is recomputed from the committed records with the means
    behind the tables' bold marks: rerunning the grid without rewriting these
    sentences fails here."""
    records = json.loads(COMMITTED.read_text())["records"]
    best = dict.fromkeys(accuracy_module.LLP_METHODS, 0)
    within, gaps = 0, {}
    for dataset, bagging in MANY_BAG_CELLS:
        recs = [r for r in records if r["dataset"] == dataset]
        # in %; LLPFC has no values where it refused (digits, bags of 256)
        row = {
            m: 100 * value
            for m, value in accuracy_module.cell_means(
                recs, bagging, "accuracy"
            ).items()
        }
        winner = max(row, key=row.get)
        best[winner] += 1
        within += row[winner] - row["vat"] <= 0.4
        for method in ("dllp", "pi", "rot"):
            gaps.setdefault(method, []).append(row[method] - row["vat"])
    ahead = {m: f"{max(g):.1f}" for m, g in gaps.items()}
    behind = {m: f"{-min(g):.1f}" for m, g in gaps.items()}
    root = SCRIPT.parents[1]
    expected = {
        "README.md": [
            f"the best of the 16 such cells in {best['vat']} and within 0.4 "
            f"points of the best in {within}",
            f"DLLP ranges from {ahead['dllp']} points ahead of it to "
            f"{behind['dllp']} behind, the Π-model from {ahead['pi']} ahead to "
            f"{behind['pi']} behind, ROT from {ahead['rot']} ahead to "
            f"{behind['rot']} behind",
            f"the fast choice: from {ahead['dllp']} points ahead of VAT to "
            f"{behind['dllp']} behind",
            f"best in {best['pi']} of 16 cells, from {ahead['pi']} points ahead "
            f"of VAT to {behind['pi']} behind",
            f"best in {best['rot']} of 16 cells, from {ahead['rot']} points "
            f"ahead of VAT to {behind['rot']} behind",
            "never ahead of VAT by more than "
            f"{max(max(g) for g in gaps.values()):.1f} points",
        ],
        "benchmarks/README.md": [
            f"LLP-VAT is best in {best['vat']} and within 0.4 points of the best "
            f"in {within}",
            f"Π is best in {best['pi']}, ROT in {best['rot']}, DLLP in {best['dllp']}",
            f"DLLP ranges from {ahead['dllp']} points ahead of VAT to "
            f"{behind['dllp']} behind, Π from {ahead['pi']} ahead to "
            f"{behind['pi']} behind, ROT from {ahead['rot']} ahead to "
            f"{behind['rot']} behind",
        ],
        "docs/user_guide/methods.rst": [
            f'``"vat"`` is best in {best["vat"]} and within 0.4 points of the '
            f'best in {within}; ``"pi"`` is best in {best["pi"]}, ``"rot"`` in '
            f'{best["rot"]}, ``"dllp"`` in {best["dllp"]} and never more than '
            f"{behind['dllp']} points behind VAT",
        ],
    }
    missing = {
        name: [s for s in sentences if s not in _normalised(root / name)]
        for name, sentences in expected.items()
    }
    assert missing == dict.fromkeys(expected, []), missing
