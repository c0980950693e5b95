"""Does ``check_identifiability`` warn where fits from different seeds disagree?

For groupings of varying quality, the report of
:func:`sklearn_llp.bags.check_identifiability` against 5 DLLP fits that
differ only in the model seed (agreement: mean pairwise Spearman of the test
scores; disagree below 0.9 or an AUC spread above 0.05). See
``benchmarks/README.md``, section ``studies/identifiability.py``.

    python benchmarks/studies/identifiability.py            # full run, ~6 min, 1 core
    python benchmarks/studies/identifiability.py --quick --out /tmp/ident  # < 1 min
    python benchmarks/studies/identifiability.py --markdown-only  # md + png from json
"""

import argparse
import dataclasses
import datetime
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import sklearn
import torch
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from skorch.callbacks import LRScheduler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import (
    FeatureBagGenerator,
    IdentifiabilityReport,
    KMeansBagGenerator,
    UniformBagGenerator,
    check_identifiability,
    label_proportions,
)
from sklearn_llp.bags._identifiability import _findings
from sklearn_llp.datasets import load_adult
from sklearn_llp.datasets._adult import ADULT_N_TRAIN

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import adult_encoder  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"
STEM = "identifiability"

#: Training settings shared by every fit (see the module docstring).
HIDDEN = (64, 64)
LR = 3e-3
MAX_BAG_SIZE = 512
PASSES = 8
MIN_STEPS = 600
MAX_EPOCHS = 300

#: Fits of one grouping "disagree" when the mean pairwise Spearman
#: correlation of their test scores is below AGREEMENT_MIN or their test
#: AUCs differ by more than SPREAD_MAX.
AGREEMENT_MIN = 0.9
SPREAD_MAX = 0.05


def disagree(record):
    return record["agreement"] < AGREEMENT_MIN or record["auc_spread"] > SPREAD_MAX


# ----------------------------------------------------------------------
# data
# ----------------------------------------------------------------------
def synthetic_data(n_train, n_test, seed=0):
    """Gaussian features, logistic labels with ~6 % positives."""
    rng = np.random.default_rng(seed)
    d = 20
    X = rng.standard_normal((n_train + n_test, d))
    w = np.zeros(d)
    w[:6] = [1.5, -1.0, 1.0, 0.7, -0.5, 0.25]
    proba = 1.0 / (1.0 + np.exp(-(X @ w - 4.5)))
    y = (rng.random(len(X)) < proba).astype(np.int64)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(d)])
    X = X.astype(np.float32)
    return {
        "X_train": X[:n_train],
        "X_test": X[n_train:],
        "y_train": y[:n_train],
        "y_test": y[n_train:],
        "frame": frame.iloc[:n_train].reset_index(drop=True),
    }


def adult_data(max_train=None):
    """Adult's original split, one-hot + scaled; the raw training frame."""
    X, y = load_adult(return_X_y=True)
    y = (y == ">50K").to_numpy().astype(np.int64)
    X_train, X_test = X.iloc[:ADULT_N_TRAIN], X.iloc[ADULT_N_TRAIN:]
    y_train, y_test = y[:ADULT_N_TRAIN], y[ADULT_N_TRAIN:]
    if max_train is not None and max_train < len(X_train):
        keep = np.random.RandomState(0).permutation(len(X_train))[:max_train]
        keep.sort()
        X_train, y_train = X_train.iloc[keep], y_train[keep]
    encoder = adult_encoder()
    return {
        "X_train": encoder.fit_transform(X_train).astype(np.float32),
        "X_test": encoder.transform(X_test).astype(np.float32),
        "y_train": y_train,
        "y_test": y_test,
        "frame": X_train.reset_index(drop=True),
    }


# ----------------------------------------------------------------------
# groupings
# ----------------------------------------------------------------------
def _stratified(y, n_bags):
    """Bags with (nearly) identical proportions: every class dealt round."""
    bags = np.empty(len(y), dtype=np.int64)
    for label in np.unique(y):
        rows = np.flatnonzero(y == label)
        bags[rows] = np.arange(len(rows)) % n_bags
    return bags


def _giant_plus_small(n, giant, size, seed=0):
    """One random bag of ``giant`` rows, the rest in random bags of ``size``."""
    order = np.random.RandomState(seed).permutation(n)
    bags = np.empty(n, dtype=np.int64)
    bags[order[:giant]] = 0
    rest = order[giant:]
    bags[rest] = 1 + np.arange(len(rest)) // size
    return bags


def groupings(dataset, data, quick):
    """``(key, label, kind, bags)`` of every grouping of a data set."""
    frame, X, y = data["frame"], data["X_train"], data["y_train"]
    n = len(y)
    out = []

    def feature(columns, n_bins=None, label=None):
        bags = FeatureBagGenerator(columns, n_bins=n_bins).fit_transform(frame)
        key = "feature:" + "x".join(columns) + (f"/{n_bins}" if n_bins else "")
        out.append((key, label or " x ".join(columns), "feature", bags))

    def uniform(size, label=None):
        bags = UniformBagGenerator(size, random_state=0).fit_transform(X)
        out.append(
            (f"random:{size}", label or f"random bags of {size}", "random", bags)
        )

    if dataset == "synthetic":
        feature(["x5"], 6, "6 groups of weak x5 (issue 14)")
        if not quick:
            feature(["x3"], 6, "6 groups of moderate x3")
            feature(["x2"], 6, "6 groups of x2")
            feature(["x0"], 6, "6 groups of strong x0")
            feature(["x5"], 30, "30 groups of weak x5")
            feature(["x5"], 100, "100 groups of weak x5")
            feature(["x0", "x5"], 6, "x0 x x5 (6 x 6 groups)")
        feature(["x0", "x1", "x5"], 6, "x0 x x1 x x5 (216 groups)")
        sizes = (16, 1024, n // 6) if quick else (16, 64, 256, 512, 1024, n // 6)
        for size in sizes:
            uniform(size, f"6 random groups of {size}" if size == n // 6 else None)
        if not quick:
            bags = KMeansBagGenerator(n // 64, random_state=0).fit_transform(X)
            out.append(("kmeans", f"K-means ({n // 64} clusters)", "kmeans", bags))
            out.append(
                (
                    "stratified:300",
                    "300 bags, identical proportions",
                    "other",
                    _stratified(y, 300),
                )
            )
            out.append(
                (
                    "giant+16",
                    f"1 random bag of {n - n // 5} + bags of 16",
                    "other",
                    _giant_plus_small(n, n - n // 5, 16),
                )
            )
    elif dataset == "adult":
        feature(["sex"])
        feature(["race"])
        feature(["relationship"])
        feature(["education"])
        feature(["age", "sex"], 6, "age band x sex")
        feature(["age", "sex", "race"], 6, "age band x sex x race")
        feature(["age", "sex", "education"], 6, "age band x sex x education")
        feature(
            ["age", "sex", "education", "race"], 6, "age band x sex x education x race"
        )
        feature(
            ["age", "sex", "education", "occupation"],
            6,
            "age band x sex x education x occupation",
        )
        for size in (16, 64, 256, 512, 1024, 4096, n // 6, n // 2):
            uniform(size, f"6 random groups of {size}" if size == n // 6 else None)
        bags = KMeansBagGenerator(
            n // 64, n_components=32, random_state=0
        ).fit_transform(X)
        out.append(("kmeans", f"K-means ({n // 64} clusters)", "kmeans", bags))
    return out


# ----------------------------------------------------------------------
# fitting
# ----------------------------------------------------------------------
def budget(sizes, n_rows):
    """``max_epochs`` and ``batch_size`` of a fit on bags of these sizes."""
    capped = np.minimum(sizes, MAX_BAG_SIZE)
    per_epoch = int(capped.sum())
    batch_size = int(np.clip(4 * np.median(capped), 256, 2048))
    steps_per_epoch = max(1, math.ceil(per_epoch / batch_size))
    epochs = max(PASSES * n_rows / per_epoch, MIN_STEPS / steps_per_epoch)
    return {
        "max_epochs": int(min(MAX_EPOCHS, math.ceil(epochs))),
        "batch_size": batch_size,
    }


def make_model(seed, max_epochs, batch_size, passes=None):
    return LLPClassifier(
        method="dllp",
        module__hidden_sizes=HIDDEN,
        lr=LR,
        max_bag_size=MAX_BAG_SIZE,
        batch_size=batch_size,
        max_epochs=max_epochs,
        callbacks=[LRScheduler(policy="CosineAnnealingLR", T_max=max_epochs)],
        random_state=seed,
        verbose=0,
    )


def bag_error(model, X, bags, table):
    """Size-weighted mean |predicted - given| positive rate of the bags."""
    codes = pd.Index(table.index).get_indexer(bags)
    proba = model.predict_proba(X)[:, 1]
    sizes = np.bincount(codes, minlength=len(table))
    predicted = np.bincount(codes, proba, minlength=len(table)) / sizes
    return float(np.sum(sizes * np.abs(predicted - table[1].to_numpy())) / sizes.sum())


def covariance_dimension(X):
    """Participation ratio of the covariance spectrum of X as given."""
    rows = np.linspace(0, len(X) - 1, min(len(X), 2000)).astype(np.int64)
    values = np.asarray(X[rows], dtype=np.float64)
    values = values - values.mean(axis=0)
    eig = np.clip(np.linalg.eigvalsh(values.T @ values), 0, None)
    return float(eig.sum() ** 2 / (eig**2).sum())


def report_dict(report):
    """The report's fields (and verdict) as JSON-ready values."""
    out = {}
    for field in dataclasses.fields(report):
        value = getattr(report, field.name)
        out[field.name] = list(value) if isinstance(value, tuple) else value
    out["classes"] = [int(c) for c in out["classes"]]
    out["between_bag_share"] = report.between_bag_share
    out["ok"] = report.ok
    return json.loads(json.dumps(out, default=float))


def refresh_verdict(stored):
    """Recompute a stored report's problems with the current thresholds."""
    names = [f.name for f in dataclasses.fields(IdentifiabilityReport)]
    fields = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in stored.items()
        if k in names and k not in ("problems", "notes")
    }
    problems, notes = _findings(IdentifiabilityReport(**fields))
    stored.update(problems=list(problems), notes=list(notes), ok=not problems)


def run_grouping(dataset, data, key, label, kind, bags, seeds, quick):
    keep = bags >= 0
    X, y = data["X_train"][keep], data["y_train"][keep]
    bags = bags[keep]
    table = label_proportions(bags, y, classes=[0, 1])
    start = time.perf_counter()
    report = check_identifiability(bags, table, X)
    report_seconds = time.perf_counter() - start
    sizes = np.bincount(pd.Index(table.index).get_indexer(bags))
    settings = budget(sizes, len(y))
    if quick:
        settings["max_epochs"] = max(2, settings["max_epochs"] // 2)
    runs, scores = [], []
    for seed in seeds:
        start = time.perf_counter()
        model = make_model(seed, **settings).fit(X, bags, table)
        seconds = time.perf_counter() - start
        score = model.predict_proba(data["X_test"])[:, 1]
        scores.append(score)
        auc = roc_auc_score(data["y_test"], score)
        runs.append(
            {
                "seed": seed,
                "auc": float(auc),
                "bag_error": bag_error(model, X, bags, table),
                "seconds": seconds,
            }
        )
    aucs = np.array([r["auc"] for r in runs])
    pairs = [
        spearmanr(scores[i], scores[j])[0]
        for i in range(len(scores))
        for j in range(i + 1, len(scores))
    ]
    record = {
        "dataset": dataset,
        "key": key,
        "label": label,
        "kind": kind,
        "n_rows": int(len(y)),
        "n_bags": int(len(table)),
        "size_min": int(sizes.min()),
        "size_median": float(np.median(sizes)),
        "size_max": int(sizes.max()),
        "rate_min": float(table[1].min()),
        "rate_max": float(table[1].max()),
        "report": report_dict(report),
        "report_seconds": report_seconds,
        "settings": settings,
        "runs": runs,
        "auc_mean": float(aucs.mean()),
        "auc_min": float(aucs.min()),
        "auc_max": float(aucs.max()),
        "auc_spread": float(aucs.max() - aucs.min()),
        "agreement": float(np.mean(pairs)) if pairs else math.nan,
        "cov_dimension": covariance_dimension(X),
    }
    print(
        f"{dataset:<9} {label:<44} bags {len(table):>5}  "
        f"{'ok  ' if report.ok else 'WARN'}  AUC {aucs.mean():.3f} "
        f"[{aucs.min():.3f}, {aucs.max():.3f}]  rho {record['agreement']:.2f}  "
        f"info {report.informative_n_bags:.1f} labels {report.effective_labels:.0f}  "
        f"bag err "
        f"{np.mean([r['bag_error'] for r in runs]):.4f}  "
        f"({sum(r['seconds'] for r in runs):.0f} s)",
        flush=True,
    )
    return record


def supervised(dataset, data, quick):
    """The same network on instance labels (one seed): the ceiling."""
    n = len(data["y_train"])
    epochs = 2 if quick else PASSES
    start = time.perf_counter()
    model = make_model(0, epochs, 256).fit(data["X_train"], data["y_train"])
    auc = roc_auc_score(data["y_test"], model.predict_proba(data["X_test"])[:, 1])
    print(
        f"{dataset:<9} {'supervised (instance labels)':<44} rows {n:>5}  AUC {auc:.3f}"
    )
    return {
        "dataset": dataset,
        "key": "supervised",
        "auc": float(auc),
        "seconds": time.perf_counter() - start,
    }


# ----------------------------------------------------------------------
# outputs
# ----------------------------------------------------------------------
DATASET_LABELS = {
    "synthetic": "Synthetic (6 % positives)",
    "adult": "Adult (24 % positives)",
}


def _fmt_share(share):
    return f"{100 * share:.2g} %"


def write_markdown(results, path):
    records = results["records"]
    lines = [
        "# Identifiability report vs agreement of seeds",
        "",
        f"Generated by `benchmarks/studies/identifiability.py` on {results['date']} "
        f"({results['machine']}; torch {results['torch']}, 1 thread; "
        f"{results['minutes']:.1f} min wall{', --quick' if results['quick'] else ''}"
        f"). Model seeds {results['seeds']} (`random_state`; the bags are "
        f"fixed). DLLP, MLP {HIDDEN}, Adam lr {LR} with cosine annealing, "
        f"`max_bag_size={MAX_BAG_SIZE}`, about {PASSES} passes over the rows "
        f"but at least {MIN_STEPS} steps (at most {MAX_EPOCHS} epochs).",
        "",
        "Columns: *share* = between-bag share of the label variance (mean "
        "squared canonical correlation); *inform.* = informative bags; "
        "*labels* = effective labelled rows per class contrast; *dim* = "
        "effective dimension of X; *agree* = mean pairwise Spearman "
        "correlation of the seeds' test scores; *spread* = max - min test "
        "AUC; *bag err* = size-weighted mean |predicted - given| positive "
        "rate of the training bags (mean over seeds): small values say that "
        "the fits reproduced the bags whatever their test AUC. Seeds "
        f"**disagree** (bold) when agree < {AGREEMENT_MIN} or spread > "
        f"{SPREAD_MAX}.",
        "",
    ]
    for dataset in ("synthetic", "adult"):
        rows = [r for r in records if r["dataset"] == dataset]
        if not rows:
            continue
        sup = [x for x in results["supervised"] if x["dataset"] == dataset]
        sup_text = f"; same network on instance labels: test AUC {sup[0]['auc']:.3f}"
        lines += [
            f"## {DATASET_LABELS[dataset]}",
            "",
            f"{rows[0]['n_rows']} training rows{sup_text if sup else ''}.",
            "",
            "| grouping | bags | rates | share | inform. | labels | dim "
            "| report | AUC mean | AUC min-max | spread | agree | bag err |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            rep = r["report"]
            verdict = "ok" if rep["ok"] else "**warns**"
            bad = disagree(r)
            spread = f"{r['auc_spread']:.3f}"
            agree = f"{r['agreement']:.2f}"
            if bad:
                spread, agree = f"**{spread}**", f"**{agree}**"
            err = np.mean([run["bag_error"] for run in r["runs"]])
            lines.append(
                f"| {r['label']} | {r['n_bags']} | "
                f"{100 * r['rate_min']:.1f}-{100 * r['rate_max']:.1f} % | "
                f"{_fmt_share(rep['between_bag_share'])} | "
                f"{rep['informative_n_bags']:.1f} | {rep['effective_labels']:.0f} | "
                f"{rep['effective_dimension']:.1f} | {verdict} | "
                f"{r['auc_mean']:.3f} | {r['auc_min']:.3f}-{r['auc_max']:.3f} | "
                f"{spread} | {agree} | {err:.4f} |"
            )
        lines.append("")
    warned = [r for r in records if not r["report"]["ok"]]
    quiet = [r for r in records if r["report"]["ok"]]
    lines += [
        "## Warning vs seeds",
        "",
        "| | seeds disagree | seeds agree |",
        "|---|---|---|",
        f"| report warns | {sum(map(disagree, warned))} | "
        f"{len(warned) - sum(map(disagree, warned))} |",
        f"| report quiet | {sum(map(disagree, quiet))} | "
        f"{len(quiet) - sum(map(disagree, quiet))} |",
        "",
    ]
    mixed = [
        r["label"] + f" ({r['dataset']})"
        for r in records
        if disagree(r) == r["report"]["ok"]
    ]
    if mixed:
        lines += ["Off the diagonal: " + "; ".join(mixed) + ".", ""]
    path.write_text("\n".join(lines) + "\n")


#: Short names of the groupings in the figure.
SHORT = {
    "feature:x5/6": "x5 (issue 14)",
    "feature:x3/6": "x3",
    "feature:x2/6": "x2",
    "feature:x0/6": "x0",
    "feature:x5/30": "x5, 30 bins",
    "feature:x5/100": "x5, 100 bins",
    "feature:x0xx5/6": "x0 x x5",
    "feature:x0xx1xx5/6": "x0 x x1 x x5",
    "stratified:300": "identical props",
    "giant+16": "giant + 16s",
    "feature:sex": "sex",
    "feature:race": "race",
    "feature:relationship": "relationship",
    "feature:education": "education",
    "feature:agexsex/6": "age x sex",
    "feature:agexsexxrace/6": "age x sex x race",
    "feature:agexsexxeducation/6": "age x sex x edu\n(quickstart)",
    "feature:agexsexxeducationxrace/6": "+ race",
    "feature:agexsexxeducationxoccupation/6": "+ occupation",
    "kmeans": "K-means",
}

#: Label offsets (points) where the default one would overlap.
OFFSETS = {
    ("adult", "feature:agexsexxeducation/6"): (-30, -20),
    ("adult", "feature:agexsexxeducationxrace/6"): (-6, -11),
    ("adult", "feature:agexsexxeducationxoccupation/6"): (-40, -12),
    ("adult", "kmeans"): (-30, 7),
    ("adult", "feature:relationship"): (-20, 6),
    ("synthetic", "kmeans"): (-30, 7),
    ("synthetic", "giant+16"): (5, -10),
    ("synthetic", "feature:x0xx1xx5/6"): (-50, 6),
}


def plot(results, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    records = results["records"]
    datasets = [
        d for d in ("adult", "synthetic") if any(r["dataset"] == d for r in records)
    ]
    fig, axes = plt.subplots(
        1, len(datasets), figsize=(6.6 * len(datasets), 5.0), squeeze=False
    )
    styles = {
        "random": ("tab:orange", "s", "random bags"),
        "feature": ("tab:blue", "o", "feature-defined groups"),
        "kmeans": ("tab:green", "D", "K-means bags"),
        "other": ("tab:purple", "^", "identical props / giant bag"),
    }
    legend = {}
    for ax, dataset in zip(axes[0], datasets):
        rows = [r for r in records if r["dataset"] == dataset]
        seen = {}
        for kind, (color, marker, name) in styles.items():
            part = sorted(
                (r for r in rows if r["kind"] == kind), key=lambda r: r["n_bags"]
            )
            if not part:
                continue
            x = []
            for r in part:  # spread groupings with the same number of bags
                k = seen.get(r["n_bags"], 0)
                seen[r["n_bags"]] = k + 1
                x.append(r["n_bags"] * (1.09**k if kind != "random" else 1.0))
            x = np.array(x)
            mean = np.array([r["auc_mean"] for r in part])
            lo = np.array([r["auc_min"] for r in part])
            hi = np.array([r["auc_max"] for r in part])
            ok = np.array([r["report"]["ok"] for r in part])
            if kind == "random":
                ax.plot(x, mean, color=color, lw=1.3, zorder=2)
                ax.fill_between(x, lo, hi, color=color, alpha=0.25, lw=0)
            else:
                ax.vlines(x, lo, hi, color=color, lw=2.0, alpha=0.6, zorder=2)
            ax.scatter(x[ok], mean[ok], color=color, marker=marker, s=34, zorder=3)
            ax.scatter(
                x[~ok],
                mean[~ok],
                facecolor="white",
                edgecolor=color,
                marker=marker,
                s=40,
                lw=1.5,
                zorder=4,
            )
            ax.scatter(
                x[~ok], mean[~ok], color="red", marker="x", s=22, lw=1.2, zorder=5
            )
            if name not in legend:
                legend[name] = ax.scatter([], [], color=color, marker=marker, s=34)
            if kind != "random":
                for xi, yi, r in zip(x, mean, part):
                    ax.annotate(
                        SHORT.get(r["key"], r["label"]),
                        (xi, yi),
                        xytext=OFFSETS.get((dataset, r["key"]), (5, -2)),
                        textcoords="offset points",
                        fontsize=6.5,
                        color="0.25",
                    )
        sup = [x for x in results["supervised"] if x["dataset"] == dataset]
        if sup:
            line = ax.axhline(sup[0]["auc"], color="gray", ls="--", lw=1)
            legend["same network on instance labels"] = line
            ax.annotate(
                f"instance labels {sup[0]['auc']:.3f}",
                (0, sup[0]["auc"]),
                xycoords=("axes fraction", "data"),
                xytext=(4, 3),
                textcoords="offset points",
                ha="left",
                fontsize=7,
                color="0.4",
            )
        ax.axhline(0.5, color="gray", ls=":", lw=1)
        legend["check_identifiability warns"] = ax.scatter(
            [], [], color="red", marker="x", s=22
        )
        ax.set_xscale("log")
        ax.set_xlabel("number of bags (log scale)")
        ax.set_ylabel("test ROC AUC: mean and min-max over seeds")
        n_rows = rows[0]["n_rows"] if rows else 0
        ax.set_title(f"{DATASET_LABELS[dataset]}, {n_rows} training rows", fontsize=10)
        ax.set_ylim(min(0.3, min(r["auc_min"] for r in rows) - 0.02), 1.0)
        ax.grid(alpha=0.3)
    fig.legend(
        list(legend.values()),
        list(legend.keys()),
        loc="lower center",
        ncol=len(legend),
        fontsize=8,
        frameon=False,
    )
    fig.suptitle(
        f"DLLP on bag proportions, {len(results['seeds'])} model seeds per "
        "grouping (bags fixed); band = min-max over seeds",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=130)
    plt.close(fig)


# ----------------------------------------------------------------------
# main
# ----------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add(
        "--quick", action="store_true", help="small synthetic run, 2 seeds (< 1 minute)"
    )
    add(
        "--out",
        type=Path,
        default=RESULTS_DIR,
        help="output folder (default benchmarks/results)",
    )
    add(
        "--datasets",
        default=None,
        help="comma-separated: synthetic,adult (default both; --quick: synthetic)",
    )
    add(
        "--seeds",
        default=None,
        help="comma-separated model seeds (default 0,1,2,3,4; --quick 0,1)",
    )
    add("--threads", type=int, default=1, help="torch threads")
    add(
        "--markdown-only",
        action="store_true",
        help="redo the table and figure from the JSON",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / f"{STEM}.json"
    if args.markdown_only:
        results = json.loads(json_path.read_text())
        for record in results["records"]:
            refresh_verdict(record["report"])
    else:
        torch.set_num_threads(args.threads)
        datasets = (
            args.datasets or ("synthetic" if args.quick else "synthetic,adult")
        ).split(",")
        seeds = [
            int(s)
            for s in (args.seeds or ("0,1" if args.quick else "0,1,2,3,4")).split(",")
        ]
        start = time.perf_counter()
        records, sup = [], []
        for dataset in datasets:
            if dataset == "synthetic":
                data = synthetic_data(*((6000, 4000) if args.quick else (30000, 20000)))
            elif dataset == "adult":
                data = adult_data(8000 if args.quick else None)
            else:
                raise SystemExit(f"unknown data set {dataset!r}")
            sup.append(supervised(dataset, data, args.quick))
            for key, label, kind, bags in groupings(dataset, data, args.quick):
                records.append(
                    run_grouping(
                        dataset, data, key, label, kind, bags, seeds, args.quick
                    )
                )
        results = {
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "sklearn": sklearn.__version__,
            "quick": args.quick,
            "seeds": seeds,
            "minutes": (time.perf_counter() - start) / 60,
            "supervised": sup,
            "records": records,
        }
        json_path.write_text(json.dumps(results, indent=1))
    write_markdown(results, args.out / f"{STEM}.md")
    plot(results, args.out / f"{STEM}.png")
    written = "" if args.markdown_only else f"{json_path.name}, "
    print(f"wrote {written}{STEM}.md and {STEM}.png in {args.out}")


if __name__ == "__main__":
    main()
