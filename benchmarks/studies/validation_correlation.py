"""Do bag-level validation errors pick good instance classifiers?

Table 4 of Tsai & Lin (2020) on digits; see ``benchmarks/README.md``, section
``studies/validation_correlation.py``. Options: ``--quick``, ``--out DIR``,
``--markdown-only`` (redo the .md from the .json).
"""

import argparse
import json
import sys
import time
from itertools import product
from pathlib import Path

import numpy as np
import torch
from scipy.stats import pearsonr, spearmanr
from sklearn.datasets import load_digits

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import KMeansBagGenerator, UniformBagGenerator
from sklearn_llp.metrics import BAG_METRICS, bag_errors
from sklearn_llp.model_selection import BagShuffleSplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import RESULTS_DIR, split_standardise, versions, write_results  # noqa: E402

STEM, SEED, TEST_SIZE = "validation_correlation", 0, 0.25
#: Rows of the table, in the paper's order.
LABELS = dict(
    hard_l1="Hard L1", soft_l1="Soft L1", hard_kl="Hard KL", soft_kl="Soft KL"
)
DESCRIPTION = (
    "Pearson correlation between each bag-level error on held-out validation bags "
    "(10 % of the bags) and the instance test error, over a grid of LLPClassifier "
    "models, per bag setting, on scikit-learn's digits."
)
#: Bag settings: column label, generator (fitted on the standardised images).
BAG_SETTINGS = {
    "uniform-16": ("bags of 16", UniformBagGenerator(16, random_state=SEED)),
    "uniform-64": ("bags of 64", UniformBagGenerator(64, random_state=SEED)),
    "kmeans-40": (
        "K-means bags (40)",
        KMeansBagGenerator(40, n_components=10, random_state=SEED),
    ),
}
#: (method, VAT alpha) pairs, max_epochs, lr, hidden sizes; full: the paper's grid.
FULL = (
    [("dllp", None), ("vat", 0.01), ("vat", 0.05), ("vat", 0.5)],
    [2, 5, 20, 60],
    [1e-4, 3e-4, 1e-3, 3e-3],
    (256, 256),
)
QUICK = [("dllp", None), ("vat", 0.5)], [1, 4], [1e-3], (32,)


def model_grid(quick):
    """Hyperparameters of every model to train, as ``LLPClassifier`` kwargs."""
    methods, epochs, lrs, hidden = QUICK if quick else FULL
    grid = []
    for (method, alpha), max_epochs, lr in product(methods, epochs, lrs):
        params = dict(method=method, max_epochs=max_epochs, lr=lr)
        params["module__hidden_sizes"] = hidden
        grid.append(params if alpha is None else params | {"method__alpha": alpha})
    return grid


def run_setting(name, X_train, X_test, y_train, y_test, grid, log):
    """Train the grid on one bag setting: its summary, and a row per model."""
    label, generator = BAG_SETTINGS[name]
    bags, props = generator.make_bags(X_train, y_train)
    keep = bags >= 0
    X, bags, props = X_train[keep], bags[keep], props[keep]
    splitter = BagShuffleSplit(n_splits=1, test_size=0.1, random_state=SEED)
    train, valid = next(splitter.split(X, bags))  # whole bags on each side
    sizes = np.unique(bags, return_counts=True)[1]
    info = dict(label=label, n_instances=len(X), n_bags=len(sizes))
    info |= dict(bag_size_min=int(sizes.min()), bag_size_mean=float(sizes.mean()))
    info |= dict(bag_size_max=int(sizes.max()), n_train_bags=len(set(bags[train])))
    info |= dict(n_valid_bags=len(set(bags[valid])), n_valid_instances=len(valid))
    log(f"== {label}: {info['n_bags']} bags, {len(grid)} models")
    rows = []
    for params in grid:
        start = time.perf_counter()
        clf = LLPClassifier(random_state=SEED, verbose=0, **params)
        clf.fit(X[train], bags[train], props[train])
        proba = clf.predict_proba(X[valid])
        errors = bag_errors(bags[valid], props[valid], proba, classes=clf.classes_)
        row = {"setting": name, **params}
        row["module__hidden_sizes"] = list(params["module__hidden_sizes"])
        row |= {f"valid_{metric}": float(errors[metric]) for metric in BAG_METRICS}
        row["test_error"] = float(np.mean(clf.predict(X_test) != y_test))
        row["fit_seconds"] = round(time.perf_counter() - start, 3)
        rows.append(row)
        log(f"  {params}: test error {row['test_error']:.3f}")
    info["test_error_min"] = min(row["test_error"] for row in rows)
    info["test_error_max"] = max(row["test_error"] for row in rows)
    return info, rows


def correlations(rows):
    """Pearson r (p-value) and Spearman rho of every bag error with the test
    error; None where an input is constant."""
    error, result = np.array([row["test_error"] for row in rows]), {}
    for metric in BAG_METRICS:
        values = np.array([row[f"valid_{metric}"] for row in rows])
        r = p = rho = None
        if len(values) >= 3 and np.ptp(values) > 0 and np.ptp(error) > 0:
            r, p = (float(v) for v in pearsonr(values, error))
            rho = float(spearmanr(values, error)[0])
        result[metric] = {"pearson_r": r, "p_value": p, "spearman_rho": rho}
    return result


def markdown_table(settings, results, n_models, quick):
    """The paper's layout: a row per bag error, a column per bag setting."""
    grid = "quick smoke grid" if quick else "full grid"
    names = [s["label"] for s in settings.values()]
    lines = [
        "Pearson correlation between the bag error on held-out validation bags",
        f"and the instance test error, over {n_models} models per bag setting "
        f"(digits; {grid}).",
        "Higher means the bag error tracks the test error more closely.",
        "",
        "| validation metric | " + " | ".join(names) + " |",
        "|---" * (len(settings) + 1) + "|",
    ]
    for metric, label in LABELS.items():
        cells = [results[name][metric]["pearson_r"] for name in settings]
        cells = ["n/a" if r is None else f"{r:.3f}" for r in cells]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| bag setting | bags (train / validation) | bag size | test error range |",
        "|---|---|---|---|",
    ]
    for s in settings.values():
        size = f"{s['bag_size_min']}"
        if s["bag_size_min"] != s["bag_size_max"]:
            size += f"-{s['bag_size_max']} (mean {s['bag_size_mean']:.0f})"
        lines.append(
            f"| {s['label']} | {s['n_train_bags']} / {s['n_valid_bags']} | {size} "
            f"| {s['test_error_min']:.3f}-{s['test_error_max']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    """Run the benchmark; return the results that were written as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="a tiny grid that runs in seconds")
    add("--out", type=Path, default=RESULTS_DIR, help="folder of the .json and .md")
    add("--settings", nargs="+", choices=list(BAG_SETTINGS), default=list(BAG_SETTINGS))
    add("--threads", type=int, default=1, help="torch threads (default: 1)")
    add("--quiet", action="store_true", help="print only the table")
    add("--markdown-only", action="store_true", help="redo the .md from the .json")
    args = parser.parse_args(argv)
    if args.markdown_only:
        out = json.loads((args.out / f"{STEM}.json").read_text())
        n_models = len(out["rows"]) // len(out["settings"])
        settings, results = out["settings"], out["correlations"]
        table = markdown_table(settings, results, n_models, out["quick"])
        (args.out / f"{STEM}.md").write_text(table)
        return out
    torch.set_num_threads(args.threads)
    start, log = time.perf_counter(), (lambda message: None) if args.quiet else print
    data = split_standardise(*load_digits(return_X_y=True), test_size=TEST_SIZE)
    grid, settings, results, rows = model_grid(args.quick), {}, {}, []
    for name in args.settings:
        settings[name], new = run_setting(name, *data, grid, log)
        results[name], rows = correlations(new), rows + new
    seconds = time.perf_counter() - start
    methods, epochs, lrs, hidden = QUICK if args.quick else FULL
    methods = [{"method": m, "alpha": a} for m, a in methods]
    grid_info = {"methods": methods, "max_epochs": epochs, "lr": lrs}
    grid_info["module__hidden_sizes"] = list(hidden)
    output = {"description": DESCRIPTION, "quick": args.quick, "seed": SEED}
    output |= {"test_size": TEST_SIZE, "n_train_images": len(data[0])}
    output |= {"n_test_images": len(data[1]), "grid": grid_info, "settings": settings}
    output |= {"correlations": results, "rows": rows, "seconds": round(seconds, 1)}
    output |= {"torch_threads": args.threads, "versions": versions()}
    table = markdown_table(settings, results, len(grid), args.quick)
    write_results(STEM, output, table, args.out)
    print(table)
    print(f"{len(rows)} models in {seconds:.0f} s; results in {args.out}")
    return output


if __name__ == "__main__":
    main()
