"""Adult in age x sex x race x education cells (median 2 people), released
with ``dp_proportions`` at its defaults: noise-free DLLP, DLLP dropping cells
under a size threshold, the old noise-aware loss (``loss="shares"``) and the
count likelihood (``method="noisy"`` at its defaults), against epsilon.

Usage: ``python benchmarks/studies/noisy_cells.py [--quick] [--epochs N]
[--seeds 0 1 2] [--epsilons 0.3 1 3 inf] [--out DIR] [--resummarise]``.
"""

import argparse
import json
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import accuracy_score, roc_auc_score

import sklearn_llp
from sklearn_llp import LLPClassifier
from sklearn_llp.exceptions import IdentifiabilityWarning
from sklearn_llp.privacy import dp_proportions, released_rows

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import RESULTS_DIR, adult_in_groups, write_results  # noqa: E402

torch.set_num_threads(1)

EPSILONS = (0.3, 1.0, 3.0, math.inf)
THRESHOLDS = (0, 5, 10, 30)
CELLS = ["age", "sex", "race", "education"]


def data(quick):
    """Adult 70/30; training people in age x sex x race x education cells."""
    return adult_in_groups(CELLS, quick_rows=8000 if quick else None)


DLLP = {"method": "dllp"}


def configs(eps):
    """``(name, min_bag_size, LLPClassifier parameters given the release)``."""
    if math.isinf(eps):
        yield "noise-free DLLP", None, lambda t: DLLP
        yield (
            "noisy (counts)",
            None,
            lambda t: {"method": "noisy", "method__release": t},
        )
        return
    for threshold in THRESHOLDS:
        yield (
            f"DLLP, cells >= {threshold}",
            threshold or None,
            lambda t: DLLP,
        )
    yield (
        "noisy, old (shares)",
        None,
        lambda t: {"method": "noisy", "method__release": t, "method__loss": "shares"},
    )
    yield "noisy (counts)", None, lambda t: {"method": "noisy", "method__release": t}


def fit_score(params, table, d, seed, epochs):
    X, X_test, _, y_test, bags, _ = d
    keep = released_rows(bags, table)
    clf = LLPClassifier(random_state=seed, verbose=0, max_epochs=epochs, **params)
    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        clf.fit(X[keep], bags[keep], table)
    proba = clf.predict_proba(X_test)[:, 1]
    return {
        "roc_auc": float(roc_auc_score(y_test, proba)),
        "accuracy": float(accuracy_score(y_test, proba > 0.5)),
        "rows_kept": float(keep.mean()),
        "seconds": time.perf_counter() - tic,
    }


def summarise(runs):
    out = {}
    for r in runs:
        out.setdefault((r["epsilon"], r["method"]), []).append(r)
    rows = []
    for (eps, method), rs in out.items():
        row = {"epsilon": eps, "method": method, "n": len(rs)}
        for m in ("roc_auc", "accuracy", "rows_kept"):
            v = np.array([r[m] for r in rs])
            row[m], row[m + "_std"] = float(v.mean()), float(v.std())
        rows.append(row)
    return rows


def headline(rows):
    """Per epsilon: noise-free DLLP, the best threshold, the old and new loss."""
    lines = [
        "| epsilon | noise-free DLLP | best threshold (DLLP) | noisy, old (shares) "
        "| noisy (counts) |",
        "|---|---|---|---|---|",
    ]
    free = next(r for r in rows if r["method"] == "noise-free DLLP")
    for eps in sorted({r["epsilon"] for r in rows}):
        if math.isinf(eps):
            continue
        at = {r["method"]: r for r in rows if r["epsilon"] == eps}
        best = max(
            (r for m, r in at.items() if m.startswith("DLLP, cells")),
            key=lambda r: r["roc_auc"],
        )
        cells = [
            f"{free['roc_auc']:.3f}",
            f"{best['roc_auc']:.3f} (cells >= {best['method'].split()[-1]})",
            f"{at['noisy, old (shares)']['roc_auc']:.3f}",
            f"**{at['noisy (counts)']['roc_auc']:.3f}**",
        ]
        lines.append(f"| {eps} | " + " | ".join(cells) + " |")
    inf = {r["method"]: r for r in rows if math.isinf(r["epsilon"])}
    if "noisy (counts)" in inf:
        lines.append(
            f"| inf | {free['roc_auc']:.3f} | - | - | "
            f"**{inf['noisy (counts)']['roc_auc']:.3f}** |"
        )
    return ["ROC AUC, mean over seeds:", ""] + lines


def markdown(payload):
    meta, rows = payload["meta"], payload["summary"]
    lines = [
        "# Noisy cells: Adult in age x sex x race x education cells",
        "",
        f"{meta['n_cells']} cells of {meta['n_train']} training people (median "
        f"{meta['median_cell']}, {meta['share_under_30']:.0%} of cells under 30); "
        f"{meta['n_test']} test people. Release: `dp_proportions(bags, y, epsilon, "
        "classes=[0, 1])` at its defaults (replace-one, one Laplace count of scale "
        f"1/epsilon). MLP, {meta['epochs']} epochs, seeds {meta['seeds']}; mean "
        "(std) over seeds. `noisy (counts)` is `method='noisy'` at its defaults.",
        "",
        "| epsilon | method | ROC AUC | accuracy | rows kept |",
        "|---|---|---|---|---|",
    ]
    lines = lines[:-2] + headline(rows) + ["", "All fits:", ""] + lines[-2:]
    for r in rows:
        lines.append(
            f"| {r['epsilon']} | {r['method']} | {r['roc_auc']:.3f} "
            f"({r['roc_auc_std']:.3f}) | {r['accuracy']:.3f} ({r['accuracy_std']:.3f})"
            f" | {r['rows_kept']:.2f} |"
        )
    lines += ["", f"Quick run: {meta['quick']}. {meta['platform']}."]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--epochs", type=int, default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epsilons", type=float, nargs="+", default=list(EPSILONS))
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument(
        "--resummarise", action="store_true", help="redo the .md from the JSON"
    )
    args = parser.parse_args(argv)
    if args.resummarise:
        stem = "noisy_cells_quick" if args.quick else "noisy_cells"
        payload = json.loads((args.out / f"{stem}.json").read_text())
        for r in payload["summary"] + payload["runs"]:
            r["epsilon"] = float(r["epsilon"])
        write_results(stem, payload, markdown(payload), out_dir=args.out)
        print(markdown(payload))
        return
    epochs = args.epochs or (5 if args.quick else 30)
    d = data(args.quick)
    y_train, sizes = d[2], d[5]
    runs = []
    for eps in args.epsilons:
        for seed in args.seeds:
            for name, threshold, params in configs(eps):
                table = dp_proportions(
                    d[4],
                    y_train,
                    eps,
                    classes=[0, 1],
                    min_bag_size=threshold,
                    random_state=seed,
                )
                scores = fit_score(params(table), table, d, seed, epochs)
                runs.append({"epsilon": eps, "seed": seed, "method": name, **scores})
                print(
                    f"eps {eps:<5} seed {seed} {name:<22} "
                    + "  ".join(f"{k} {v:.3f}" for k, v in scores.items()),
                    flush=True,
                )
    meta = {
        "n_train": int(len(y_train)),
        "n_test": int(len(d[3])),
        "n_cells": int(len(sizes)),
        "median_cell": float(np.median(sizes)),
        "share_under_30": float(np.mean(sizes < 30)),
        "epochs": epochs,
        "seeds": args.seeds,
        "quick": args.quick,
        "platform": f"{platform.processor() or platform.machine()}, 1 CPU thread, "
        f"sklearn_llp {sklearn_llp.__version__}",
    }
    payload = {"meta": meta, "summary": summarise(runs), "runs": runs}
    stem = "noisy_cells_quick" if args.quick else "noisy_cells"
    write_results(stem, payload, markdown(payload), out_dir=args.out)
    print(markdown(payload))


if __name__ == "__main__":
    main()
