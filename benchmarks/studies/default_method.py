"""``LLPClassifier()`` at its defaults across bag regimes: the table behind
``method="auto"`` (issue 33).

Every fit leaves every parameter at its default but ``method``,
``random_state``, ``verbose`` and ``n_threads=1``; every method of a cell
trains on the same bags (``benchmarks/accuracy.py``'s bag generators, or
Adult's census groups). One JSON line per fit, resumable.

    python benchmarks/studies/default_method.py --jobs 2          # the grid
    python benchmarks/studies/default_method.py --markdown-only   # the table
    python benchmarks/studies/default_method.py --methods auto --round r48
        # rerun at today's code: the table shows ``auto``'s new value (was old)
"""

import argparse
import json
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import expand_proportions, label_proportions

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import (  # noqa: E402
    FASHION_DIR,
    RESULTS_DIR,
    adult_in_groups,
    load_dataset,
    machine_info,
)
from accuracy import make_bags  # noqa: E402

STEM = "default_method"
#: cell -> (data set, bagging); ``groups-...``: Adult's census groups
CELLS = {
    "adult-16": ("adult", "uniform-16"),
    "adult-64": ("adult", "uniform-64"),
    "adult-128": ("adult", "uniform-128"),
    "adult-256": ("adult", "uniform-256"),
    "adult-512": ("adult", "uniform-512"),
    "adult-1024": ("adult", "uniform-1024"),
    "adult-50-bags": ("adult", "count-50"),
    "adult-25-bags": ("adult", "count-25"),
    "adult-10-bags": ("adult", "count-10"),
    "adult-kmeans": ("adult", "kmeans"),
    "adult-census-groups": ("adult", "groups-occupation-relationship"),
    "fashion-128": ("fashion", "uniform-128"),
    "fashion-256": ("fashion", "uniform-256"),
    "fashion-512": ("fashion", "uniform-512"),
    "fashion-1024": ("fashion", "uniform-1024"),
}
METHODS = ("auto", "vat", "dllp", "easyllp")


def cell_data(cell, seed):
    """Training rows, bag ids, per-row proportions, test rows and labels."""
    dataset, bagging = CELLS[cell]
    if bagging.startswith("groups-"):
        columns = bagging.split("-")[1:]
        X, X_test, y, y_test, bags, _ = adult_in_groups(columns)
        props = expand_proportions(label_proportions(bags, y, classes=[0, 1]), bags)
        return X, bags, props, X_test, y_test
    X, X_test, y, y_test = load_dataset(dataset)
    bags, props, _ = make_bags(dataset, None, str(FASHION_DIR), bagging, seed)
    keep = bags >= 0
    return X[keep], bags[keep], props[keep], X_test, y_test


def run(task):
    cell, method, seed, tag = task
    torch.set_num_threads(1)
    X, bags, props, X_test, y_test = cell_data(cell, seed)
    clf = LLPClassifier(method=method, random_state=seed, verbose=0, n_threads=1)
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, bags, props)
    record = {
        "cell": cell,
        "method": method,
        "seed": seed,
        "trained": type(clf.method_).__name__,
        "fit_s": round(time.perf_counter() - start, 1),
        "cpu_s": round(time.process_time() - cpu, 1),
        "n_bags": int(len(np.unique(bags))),
        "median_bag": float(np.median(np.bincount(bags)[np.bincount(bags) > 0])),
    }
    pred = clf.predict(X_test)
    record["accuracy"] = float(accuracy_score(y_test, pred))
    if len(clf.classes_) == 2:
        positive = clf.classes_[1]
        record["f1"] = float(f1_score(y_test, pred, pos_label=positive))
        proba = clf.predict_proba(X_test)[:, 1]
        record["auc"] = float(roc_auc_score(y_test == positive, proba))
    return {**record, "round": tag} if tag else record


def _read(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def by_cell(records, cells):
    """``(cell, its records)`` for every cell of ``cells`` that has any."""
    for cell in cells:
        rows = [r for r in records if r["cell"] == cell]
        if rows:
            yield cell, rows


def column_cells(rows, key, columns, text):
    """A markdown row's cells: ``text(column, runs)`` of the records whose
    ``key`` is the column, "–" for a column without any."""
    cells = []
    for column in columns:
        runs = [r for r in rows if r[key] == column]
        cells.append(text(column, runs) if runs else "–")
    return cells


def _method_cell(method, runs):
    text = f"{100 * np.mean([r['accuracy'] for r in runs]):.1f}"
    if "f1" in runs[0]:
        text += f" / {100 * np.mean([r['f1'] for r in runs]):.1f}"
    if method == "auto":
        text += f" ({', '.join(sorted({r['trained'] for r in runs}))})"
    return text


def _rerun(old, new):
    """``auto``'s rerun (accuracy / F1 / AUC) beside its old fits of the
    same seeds, and the accuracy points it lost."""
    old = [r for r in old if r["seed"] in {r["seed"] for r in new}]

    def text(runs):
        if "auc" not in runs[0]:
            return _method_cell("auto", runs)
        return _method_cell("auto", runs) + (
            f" / AUC {100 * np.mean([r['auc'] for r in runs]):.1f}"
        )

    lost = 100 * (
        np.mean([r["accuracy"] for r in old]) - np.mean([r["accuracy"] for r in new])
    )
    return (
        f"**{text(new)}** (was {text(old)}; seeds {len(new)}, {new[0]['round']})",
        lost,
    )


def markdown(records):
    """One row per cell: mean accuracy (and F1 for Adult) of each method;
    ``auto`` rerun (records with a ``round``) as new (was old)."""
    reruns = [r for r in records if r.get("round") and r["method"] == "auto"]
    records, losses = [r for r in records if not r.get("round")], []
    lines = [
        "# `LLPClassifier()` defaults by bag regime "
        "(`benchmarks/studies/default_method.py`)",
        "",
        "Test accuracy in % (Adult: accuracy / F1 of >50K), mean over seeds; "
        "every parameter at its default but `method` (100 epochs, lr 1e-3, "
        '`batch_size="auto"`, `max_bag_size=1024`); `auto` names the method '
        "it trained. 1 torch thread a fit, 2 to 5 fits at a time on 2 cores, CPU.",
        "",
        "| cell | bags | rows a bag | seeds | " + " | ".join(METHODS) + " |",
        "|---|---|---|---|" + "---|" * len(METHODS),
    ]
    for cell, rows in by_cell(records, CELLS):
        cells = column_cells(rows, "method", METHODS, _method_cell)
        if cells[0] == "–" and "f1" not in rows[0]:  # many classes: auto is VAT
            cells[0] = "= vat (VAT, the same fit)"
        new = [r for r in reruns if r["cell"] == cell]
        latest = max((r["round"] for r in new), default=None)
        new = [r for r in new if r["round"] == latest]  # a cell's last rerun
        if new:
            # the first run's auto; with many classes auto is VAT's own fit
            first = [r for r in rows if r["method"] == "auto"]
            first = first or [r for r in rows if r["method"] == "vat"]
            cells[0], lost = _rerun(first, new)
            losses += [f"{cell} ({lost:.1f})"] if lost > 0.5 else []
        seeds = len({r["seed"] for r in rows})
        lines.append(
            f"| {cell} | {rows[0]['n_bags']} | {rows[0]['median_bag']:,.0f} | "
            f"{seeds} | " + " | ".join(cells) + " |"
        )
    if reruns:
        lines[2:3] = [
            f"{lines[2]} **Bold**: `auto` rerun (round r48: the default MLP "
            "standardises its inputs, bags above `max_bag_size` are trained "
            "whole; r49 where named: DLLP and VAT on fewer than 64 bags of two "
            "classes take fewer bags a step, at least 8 steps an epoch), "
            "accuracy / F1 / "
            "ROC AUC, one fit at a time; "
            "(was ...): the first run's `auto` on the same seeds; rows without "
            "bold were not rerun."
        ]
        lines += [
            "",
            f"Cells that lost > 0.5 points of accuracy: {', '.join(losses) or 'none'}.",
        ]
    lines += [
        "",
        "Goals at the defaults (issues 33, 48): Fashion-MNIST random 256 >= 84 %; "
        "Adult random 256 >= 84.5 % and ROC AUC >= 90, bags of 1,024 AUC >= 88, "
        "10 bags F1 >= 58 and AUC >= 82. None is met. Why: on Adult not the "
        "decision rule (`decision_ceiling.md`: the best threshold chosen with "
        "the test labels stays below) but the ranking, which follows the number "
        "of bags where they are few (`bag_count.md`: the same rows in four times "
        "the bags reach AUC 87.5 in bags of 1,024 and 84.1 / F1 60.5 in 40 bags "
        "of 3,256, Fashion-MNIST's rows in twice the bags of 256 85.0 %; the "
        "same bags trained longer gain nothing), and flattens at 88.4 to 88.6 "
        "in Adult's bags of 256 however many. The methods guide, *Large "
        "and few bags: where the defaults stand*.",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", nargs="*", default=list(CELLS))
    parser.add_argument("--methods", nargs="*", default=list(METHODS))
    parser.add_argument("--seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(RESULTS_DIR))
    parser.add_argument("--markdown-only", action="store_true")
    parser.add_argument("--round", help="tag of a rerun, kept beside the first fits")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{STEM}.jsonl"
    done = {(r["cell"], r["method"], r["seed"], r.get("round")) for r in _read(path)}
    tasks = [
        (c, m, s, args.round)
        for s in args.seeds
        for c in args.cells
        for m in args.methods
        if (c, m, s, args.round) not in done
    ]
    if not args.markdown_only and tasks:
        with ProcessPoolExecutor(args.jobs) as pool:
            for record in pool.map(run, tasks):
                with path.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                print(json.dumps(record), flush=True)
    records = _read(path)
    text = markdown(records)
    text += f"\nMachine: {machine_info()['cpu']}.\n"
    (out / f"{STEM}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
