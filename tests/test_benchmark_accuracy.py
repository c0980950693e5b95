"""Tests of ``benchmarks/accuracy.py``: one ``--quick`` run (digits, seconds),
continued with ``--resume`` on few large bags and re-rendered from its JSON;
the committed records against the script and the docs."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "accuracy.py"
COMMITTED = SCRIPT.parent / "results" / "accuracy.json"


@pytest.fixture(scope="module")
def accuracy_module():
    spec = importlib.util.spec_from_file_location("benchmark_accuracy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_quick_run_resume_and_markdown_only(accuracy_module, tmp_path, monkeypatch):
    m, fitted = accuracy_module, []
    fit = m.LLPClassifier.fit

    def spy(self, *args, **kwargs):
        fit(self, *args, **kwargs)
        fitted.append(self)
        return self

    monkeypatch.setattr(m.LLPClassifier, "fit", spy)
    out = ["--quick", "--quiet", "--out", str(tmp_path)]
    output = m.main(out)

    data = json.loads((tmp_path / "accuracy.json").read_text())
    assert data["records"] == output["records"]
    records = data["records"]
    # digits, 1 seed: 4 baggings x 7 LLP methods, 2 batch-128 variants on
    # bags of 256, the Laplacian Mean Map on every bagging, the bound
    assert len(records) == 4 * 7 + 2 + 4 + 1
    runs = {(r["dataset"], r["bagging"], r["method"], r["seed"]) for r in records}
    assert len(runs) == len(records)  # one record per run
    methods = "dllp vat pi rot llpfc easyllp meanmap dllp-batch128 vat-batch128"
    methods += " meanmap-laplacian supervised"
    assert {r["method"] for r in records} == set(methods.split())
    baggings = {"uniform-16", "uniform-64", "uniform-256", "kmeans", "supervised"}
    assert {r["bagging"] for r in records} == baggings
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
            assert record["laplacian_"] in m.LAPLACIAN_GRID
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
            expected = 8 * 256 if record["bagging"] == "uniform-256" else 128
            assert record["batch_size_"] == expected
    # the recorded cosine schedule is the one applied: every fit ends at lr ~0
    networks = [r for r in records if "error" not in r and "meanmap" not in r["method"]]
    assert len(fitted) == len(networks)
    assert all(g["lr"] < 1e-6 for c in fitted for g in c.optimizer_.param_groups)
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

    # --resume runs what is missing only: count-N bags (N random bags of
    # n_train // N rows) on digits and Adult, random bags of 16 on Adult
    more = m.main(
        [*out, "--resume", "--datasets", "digits", "adult"]
        + ["--bag-sizes", "16", "count-10", "--methods", "dllp", "meanmap"]
    )
    assert more["invocations"][-1]["n_runs"] == 6  # of 8: 2 done before
    assert len(more["records"]) == len(records) + 6
    kept = {m.identity(r): r for r in more["records"]}
    assert all(kept[m.identity(r)] == r for r in records)
    few = [r for r in more["records"] if r["bagging"] == "count-10"]
    assert len(few) == 4
    for record in few:
        assert record["bags"]["n_bags"] == 10
        assert record["bags"]["bag_size"] == 600 // 10
    adult = [r for r in few if r["dataset"] == "adult"]
    for record in adult:  # the F1 and AUC of two classes
        assert 0.0 <= record["f1"] <= 1.0 and 0.0 <= record["roc_auc"] <= 1.0
        assert "accuracy_argmax" in record and "f1_argmax" in record
    dllp = next(r for r in adult if r["method"] == "dllp")
    assert dllp["decision"] == "prior"  # two classes, fitted on bags
    assert 0.0 < dllp["threshold_"] < 1.0
    assert dllp["fit_warnings"].get("IdentifiabilityWarning", 0) >= 1

    # --markdown-only writes the same tables from the JSON
    table = (tmp_path / "accuracy.md").read_text()
    assert "in few large bags (%)" in table
    assert "random, 10 bags of 60: F1" in table
    assert table.count("* `python benchmarks/accuracy.py") == 2  # 2 invocations
    (tmp_path / "accuracy.md").unlink()
    m.main(["--markdown-only", "--quiet", "--out", str(tmp_path)])
    assert (tmp_path / "accuracy.md").read_text() == table


def test_count_bags_are_n_bags_of_n_train_over_n_rows(accuracy_module):
    gen, settings = accuracy_module.bag_generator("count-10", 1003, 2, 0)
    assert gen.bag_size == settings["bag_size"] == 100
    assert settings["n_bags_wanted"] == 10
    bags, _ = gen.make_bags(np.zeros((1003, 2)), np.arange(1003) % 2)
    assert len(np.unique(bags[bags >= 0])) == 10  # the 3 rows left over: none


def test_the_committed_records_are_what_the_script_runs(accuracy_module):
    """Every committed record has the settings the script builds for its cell
    (else ``--resume`` would rerun it), and the methods of a data set,
    bagging and seed saw the same bags (same bag statistics)."""
    m = accuracy_module
    records = json.loads(COMMITTED.read_text())["records"]
    done = {m.identity(r): r for r in records}
    args = m.parse_args(["--datasets", "digits", "mnist5k", "fashion", "adult"])
    tasks = m.make_tasks(args)
    assert len(tasks) == len(records) == 465
    stale = [
        m.identity(t)
        for t in tasks
        if m.identity(t) not in done or not m.settings_match(done[m.identity(t)], t)
    ]
    assert stale == []
    bags = {}
    for record in records:
        if record["bagging"] == "supervised" or record.get("bags") is None:
            continue
        key = (record["dataset"], record["bagging"], record["seed"])
        stats = {k: v for k, v in record["bags"].items() if k != "bag_seconds"}
        bags.setdefault(key, []).append((record["method"], stats))
    assert len(bags) == 54  # 4 data sets x 4 or 6 baggings x 3 seeds
    differing = [k for k, seen in bags.items() if any(s != seen[0][1] for _, s in seen)]
    assert differing == []


def _guide_rows(marker):
    """The csv-table rows of the methods guide between ``.. marker`` and
    ``.. /marker``, as markdown rows."""
    page = (SCRIPT.parents[1] / "docs" / "user_guide" / "methods.rst").read_text()
    section = page.split(f".. {marker}")[1].split(f".. /{marker}")[0]
    return [
        "| " + " | ".join(cell.strip() for cell in line.split("|")) + " |"
        for line in section.splitlines()
        if line.startswith("   ") and "|" in line and not line.strip().startswith(":")
    ]


def test_the_guide_accuracy_tables_are_the_committed_ones():
    """Every table row of the user guide's accuracy section (csv-tables
    split by ``|``) is a row of the committed ``accuracy.md``, so the guide
    cannot drift from the JSON."""
    rows = _guide_rows("accuracy-results")
    assert len(rows) >= 20
    table = (COMMITTED.parent / "accuracy.md").read_text().splitlines()
    missing = [row for row in rows if row not in table]
    assert not missing, missing


MANY_BAG_CELLS = [
    (dataset, bagging)
    for dataset in ("digits", "mnist5k", "fashion", "adult")
    for bagging in ("uniform-16", "uniform-64", "uniform-256", "kmeans")
]


def _normalised(path):
    return " ".join(path.read_text().split())


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
        means = accuracy_module.cell_means(recs, bagging, "accuracy")
        row = {m: 100 * value for m, value in means.items()}
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
            f"the fast choice: from {ahead['dllp']} points ahead of VAT to "
            f"{behind['dllp']} behind",
            f"best in {best['pi']} of 16 cells, from {ahead['pi']} points ahead "
            f"of VAT to {behind['pi']} behind",
            f"best in {best['rot']} of 16 cells, from {ahead['rot']} points "
            f"ahead of VAT to {behind['rot']} behind",
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
            f"the best of the 16 such cells in {best['vat']} and within 0.4 "
            f"points of the best in {within}",
            f"DLLP ranges from {ahead['dllp']} points ahead of it to "
            f"{behind['dllp']} behind, the Π-model from {ahead['pi']} ahead to "
            f"{behind['pi']} behind, ROT from {ahead['rot']} ahead to "
            f"{behind['rot']} behind",
            "never ahead of VAT by more than "
            f"{max(max(g) for g in gaps.values()):.1f} points",
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


@pytest.mark.parametrize(
    "results, markers",
    [
        ("default_method.md", ["auto-table"]),
        ("decision_ceiling.md", ["ceiling-table", "prior-table"]),
    ],
)
def test_the_guide_tables_of_studies_are_the_committed_ones(results, markers):
    """Every row of the methods guide's tables of a study (``method="auto"``'s,
    the decision rule's) is a row of the study's committed markdown, and
    every row of that file is in the guide."""
    rows = [row for marker in markers for row in _guide_rows(marker)[1:]]
    table = (COMMITTED.parent / results).read_text().splitlines()
    assert [row for row in rows if row not in table] == []
    cells = [line for line in table if line.startswith("| ") and "---" not in line]
    assert len(rows) == len(cells) - len(markers)  # a header each
