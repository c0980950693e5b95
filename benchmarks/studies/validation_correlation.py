"""Do bag-level validation errors pick good instance classifiers?

Table 4 of Tsai & Lin (2020) on digits: per bag setting, a grid of models
scored by the four bag errors on held-out bags and by the instance test
error, and their correlation. See ``benchmarks/README.md``, section
``studies/validation_correlation.py``.

    python benchmarks/studies/validation_correlation.py            # full grid
    python benchmarks/studies/validation_correlation.py --quick --out /tmp/x
"""

import argparse
import platform
import sys
import time
from itertools import product
from pathlib import Path

import numpy as np
import scipy
import sklearn
import torch
from scipy.stats import pearsonr, spearmanr
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

import sklearn_llp
from sklearn_llp import LLPClassifier
from sklearn_llp.bags import KMeansBagGenerator, UniformBagGenerator
from sklearn_llp.metrics import BAG_METRICS, bag_errors
from sklearn_llp.model_selection import BagShuffleSplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import write_results  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
STEM = "validation_correlation"

#: Row labels of the table, in the paper's order.
METRIC_LABELS = {
    "hard_l1": "Hard L1",
    "soft_l1": "Soft L1",
    "hard_kl": "Hard KL",
    "soft_kl": "Soft KL",
}

#: Bag settings: column label and generator (fitted on the standardised
#: training images).
BAG_SETTINGS = {
    "uniform-16": (
        "bags of 16",
        lambda seed: UniformBagGenerator(16, random_state=seed),
    ),
    "uniform-64": (
        "bags of 64",
        lambda seed: UniformBagGenerator(64, random_state=seed),
    ),
    "kmeans-40": (
        "K-means bags (40)",
        lambda seed: KMeansBagGenerator(40, n_components=10, random_state=seed),
    ),
}

#: (method, alpha) pairs: DLLP, and LLP-VAT with the paper's range of alpha.
METHODS_FULL = [("dllp", None), ("vat", 0.01), ("vat", 0.05), ("vat", 0.5)]
EPOCHS_FULL = [2, 5, 20, 60]
LRS_FULL = [1e-4, 3e-4, 1e-3, 3e-3]
HIDDEN_FULL = (256, 256)  # the default MLP

METHODS_QUICK = [("dllp", None), ("vat", 0.5)]
EPOCHS_QUICK = [1, 4]
LRS_QUICK = [1e-3]
HIDDEN_QUICK = (32,)


def model_grid(quick):
    """Hyperparameters of every model to train, as ``LLPClassifier`` kwargs."""
    if quick:
        methods, epochs, lrs, hidden = (
            METHODS_QUICK,
            EPOCHS_QUICK,
            LRS_QUICK,
            HIDDEN_QUICK,
        )
    else:
        methods, epochs, lrs, hidden = METHODS_FULL, EPOCHS_FULL, LRS_FULL, HIDDEN_FULL
    grid = []
    for (method, alpha), max_epochs, lr in product(methods, epochs, lrs):
        params = {
            "method": method,
            "max_epochs": max_epochs,
            "lr": lr,
            "module__hidden_sizes": hidden,
        }
        if alpha is not None:
            params["method__alpha"] = alpha
        grid.append(params)
    return grid


def load_data(test_size, seed):
    """Digits split into training and test images, standardised on training."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, random_state=seed, stratify=y
    )
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


def correlation(x, y, method=pearsonr):
    """Correlation coefficient and p-value; None for a constant input."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, None
    result = method(x, y)
    return float(result[0]), float(result[1])


def run_setting(name, X_train, y_train, X_test, y_test, grid, seed, log):
    """Train the grid on one bag setting; one row per model."""
    label, make_generator = BAG_SETTINGS[name]
    bags, props = make_generator(seed).make_bags(X_train, y_train)
    keep = bags >= 0
    X, bags, props = X_train[keep], bags[keep], props[keep]
    splitter = BagShuffleSplit(n_splits=1, test_size=0.1, random_state=seed)
    train, valid = next(splitter.split(X, bags))
    assert not set(bags[train]) & set(bags[valid])  # whole bags on each side
    sizes = np.unique(bags, return_counts=True)[1]
    info = {
        "label": label,
        "n_instances": int(len(X)),
        "n_bags": int(len(sizes)),
        "bag_size_min": int(sizes.min()),
        "bag_size_mean": float(sizes.mean()),
        "bag_size_max": int(sizes.max()),
        "n_train_bags": int(len(np.unique(bags[train]))),
        "n_valid_bags": int(len(np.unique(bags[valid]))),
        "n_valid_instances": int(len(valid)),
    }
    log(
        f"== {label}: {info['n_bags']} bags ({info['n_train_bags']} train, "
        f"{info['n_valid_bags']} validation), sizes {info['bag_size_min']}-"
        f"{info['bag_size_max']}, {len(grid)} models"
    )
    rows = []
    for params in grid:
        start = time.perf_counter()
        clf = LLPClassifier(random_state=seed, verbose=0, **params)
        clf.fit(X[train], bags[train], props[train])
        errors = bag_errors(
            bags[valid], props[valid], clf.predict_proba(X[valid]), classes=clf.classes_
        )
        test_error = float(np.mean(clf.predict(X_test) != y_test))
        row = {
            "setting": name,
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in params.items()},
            **{f"valid_{metric}": float(errors[metric]) for metric in BAG_METRICS},
            "test_error": test_error,
            "fit_seconds": round(time.perf_counter() - start, 3),
        }
        rows.append(row)
        log(
            f"  {params['method']:<4} alpha={params.get('method__alpha')!s:<5} "
            f"lr={params['lr']:<7g} epochs={params['max_epochs']:<3} "
            f"hard_l1={row['valid_hard_l1']:.3f} test_error={test_error:.3f}"
        )
    return info, rows


def correlations(rows):
    """Pearson (and Spearman) correlation of every bag error with test error."""
    test_error = [row["test_error"] for row in rows]
    result = {}
    for metric in BAG_METRICS:
        values = [row[f"valid_{metric}"] for row in rows]
        r, p = correlation(values, test_error)
        rho, _ = correlation(values, test_error, spearmanr)
        result[metric] = {"pearson_r": r, "p_value": p, "spearman_rho": rho}
    return result


def markdown_table(settings, results, n_models, quick):
    """The paper's layout: a row per bag error, a column per bag setting."""
    names = list(settings)
    header = "| validation metric | " + " | ".join(
        settings[name]["label"] for name in names
    )
    lines = [
        "Pearson correlation between the bag error on held-out validation bags",
        "and the instance test error, over "
        f"{n_models} models per bag setting (digits; "
        + ("quick smoke grid" if quick else "full grid")
        + ").",
        "Higher means the bag error tracks the test error more closely.",
        "",
        header + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for metric, label in METRIC_LABELS.items():
        cells = []
        for name in names:
            r = results[name][metric]["pearson_r"]
            cells.append("n/a" if r is None else f"{r:.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| bag setting | bags (train / validation) | bag size | test error range |",
        "|---|---|---|---|",
    ]
    for name in names:
        info = settings[name]
        size = (
            str(info["bag_size_min"])
            if info["bag_size_min"] == info["bag_size_max"]
            else f"{info['bag_size_min']}-{info['bag_size_max']} "
            f"(mean {info['bag_size_mean']:.0f})"
        )
        lines.append(
            f"| {info['label']} | {info['n_train_bags']} / {info['n_valid_bags']} "
            f"| {size} | {info['test_error_min']:.3f}-{info['test_error_max']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Correlation of bag-level validation errors with the "
        "instance test error (digits, LLPClassifier)."
    )
    add = parser.add_argument
    add(
        "--quick",
        action="store_true",
        help="a tiny grid that runs in seconds (smoke test)",
    )
    add(
        "--out",
        type=Path,
        default=RESULTS_DIR,
        help="directory for the .json and .md results (default: %(default)s)",
    )
    add(
        "--settings",
        nargs="+",
        choices=list(BAG_SETTINGS),
        default=list(BAG_SETTINGS),
        help="bag settings to run (default: all)",
    )
    add("--seed", type=int, default=0, help="seed of everything")
    add("--threads", type=int, default=1, help="torch threads (default: 1)")
    add("--test-size", type=float, default=0.25, help="fraction of test images")
    add("--quiet", action="store_true", help="print only the table")
    return parser.parse_args(argv)


def main(argv=None):
    """Run the benchmark; return the results that were written as JSON."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)

    def log(message):
        if not args.quiet:
            print(message, flush=True)

    start = time.perf_counter()
    X_train, X_test, y_train, y_test = load_data(args.test_size, args.seed)
    grid = model_grid(args.quick)
    settings, all_rows, results = {}, [], {}
    for name in args.settings:
        info, rows = run_setting(
            name, X_train, y_train, X_test, y_test, grid, args.seed, log
        )
        errors = [row["test_error"] for row in rows]
        info["test_error_min"], info["test_error_max"] = min(errors), max(errors)
        settings[name] = info
        results[name] = correlations(rows)
        all_rows += rows
    seconds = time.perf_counter() - start

    output = {
        "description": (
            "Pearson correlation between each bag-level error on held-out "
            "validation bags (10 % of the bags) and the instance test error, "
            "over a grid of LLPClassifier models, per bag setting, on "
            "scikit-learn's digits."
        ),
        "quick": args.quick,
        "seed": args.seed,
        "test_size": args.test_size,
        "n_train_images": int(len(X_train)),
        "n_test_images": int(len(X_test)),
        "grid": {
            "methods": [
                {"method": m, "alpha": a}
                for m, a in (METHODS_QUICK if args.quick else METHODS_FULL)
            ],
            "max_epochs": EPOCHS_QUICK if args.quick else EPOCHS_FULL,
            "lr": LRS_QUICK if args.quick else LRS_FULL,
            "module__hidden_sizes": list(HIDDEN_QUICK if args.quick else HIDDEN_FULL),
        },
        "settings": settings,
        "correlations": results,
        "rows": all_rows,
        "seconds": round(seconds, 1),
        "torch_threads": args.threads,
        "versions": {
            "python": platform.python_version(),
            "sklearn_llp": sklearn_llp.__version__,
            "torch": torch.__version__,
            "scikit-learn": sklearn.__version__,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
    }
    table = markdown_table(settings, results, len(grid), args.quick)
    write_results(STEM, output, table, args.out)
    print(table)
    print(f"{len(all_rows)} models in {seconds:.0f} s; results in {args.out}")
    return output


if __name__ == "__main__":
    main()
