"""Does ``check_identifiability`` warn where DLLP fits from different seeds disagree?

Per grouping: the report, and fits that differ only in the model seed. Details and
findings: ``benchmarks/README.md``, section ``studies/identifiability.py``.

    python benchmarks/studies/identifiability.py [--quick --out DIR] [--markdown-only]
"""

import argparse
import dataclasses
import datetime
import json
import math
import platform
import sys
import time
from itertools import combinations
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import sklearn
import torch
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from skorch.callbacks import LRScheduler

import sklearn_llp.bags as llp_bags
from sklearn_llp import LLPClassifier
from sklearn_llp.datasets import load_adult
from sklearn_llp.datasets._adult import ADULT_N_TRAIN

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import RESULTS_DIR, load_dataset  # noqa: E402

STEM = "identifiability"
HIDDEN, LR, MAX_BAG_SIZE = (64, 64), 3e-3, 512
PASSES, MIN_STEPS, MAX_EPOCHS = 8, 600, 300  # training budget of every fit
AGREEMENT_MIN, SPREAD_MAX = 0.9, 0.05  # seeds disagree below / above these
DATASETS = {"synthetic": "Synthetic (6 % positives)", "adult": "Adult (24 % positives)"}

#: Feature groupings ("columns/bins", label, short name in the figure); Adult's
#: labels are its columns, with age cut into bands.
FEATURES = {
    "synthetic": [
        ("x5/6", "6 groups of weak x5 (issue 14)", "x5 (issue 14)"),
        ("x3/6", "6 groups of moderate x3", "x3"),
        ("x2/6", "6 groups of x2", "x2"),
        ("x0/6", "6 groups of strong x0", "x0"),
        ("x5/30", "30 groups of weak x5", "x5, 30 bins"),
        ("x5/100", "100 groups of weak x5", "x5, 100 bins"),
        ("x0 x5/6", "x0 x x5 (6 x 6 groups)", "x0 x x5"),
        ("x0 x1 x5/6", "x0 x x1 x x5 (216 groups)", "x0 x x1 x x5"),
    ],
    "adult": [
        ("sex", None, None),
        ("race", None, None),
        ("relationship", None, None),
        ("education", None, None),
        ("age sex/6", None, "age x sex"),
        ("age sex race/6", None, "age x sex x race"),
        ("age sex education/6", None, "age x sex x edu\n(quickstart)"),
        ("age sex education race/6", None, "+ race"),
        ("age sex education occupation/6", None, "+ occupation"),
    ],
}
QUICK_FEATURES = {"x5/6", "x0 x1 x5/6"}


def feature_key(spec):
    columns, _, n_bins = spec.partition("/")
    return "feature:" + columns.replace(" ", "x") + (n_bins and "/" + n_bins)


#: Figure: short names of the groupings, and label offsets (points) where the
#: default one would overlap.
SHORT = {"kmeans": "K-means", "stratified:300": "identical props"}
SHORT["giant+16"] = "giant + 16s"
for spec, _, short in FEATURES["synthetic"] + FEATURES["adult"]:
    SHORT[feature_key(spec)] = short or spec
OFFSETS = {
    "adult/feature:agexsexxeducation/6": (-30, -20),
    "adult/feature:agexsexxeducationxrace/6": (-6, -11),
    "adult/feature:agexsexxeducationxoccupation/6": (-40, -12),
    "adult/kmeans": (-30, 7),
    "adult/feature:relationship": (-20, 6),
    "synthetic/kmeans": (-30, 7),
    "synthetic/giant+16": (5, -10),
    "synthetic/feature:x0xx1xx5/6": (-50, 6),
}


def disagree(record):
    return record["agreement"] < AGREEMENT_MIN or record["auc_spread"] > SPREAD_MAX


def synthetic_data(n_train, n_test):
    """20 N(0, 1) features, logistic labels with ~6 % positives; raw frame."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_train + n_test, 20))
    w = np.r_[1.5, -1.0, 1.0, 0.7, -0.5, 0.25, np.zeros(14)]
    y = (rng.random(len(X)) < 1.0 / (1.0 + np.exp(-(X @ w - 4.5)))).astype(np.int64)
    frame = pd.DataFrame(X[:n_train], columns=[f"x{j}" for j in range(20)])
    X = X.astype(np.float32)
    return X[:n_train], X[n_train:], y[:n_train], y[n_train:], frame


def adult_data():
    """Adult's original split, encoded, and the raw training frame to group."""
    frame = load_adult(return_X_y=True)[0].iloc[:ADULT_N_TRAIN]
    return (*load_dataset("adult"), frame.reset_index(drop=True))


def groupings(dataset, X, y, frame, quick):
    """``(key, label, kind, bags)`` of every grouping of a data set, in order."""
    n, adult = len(y), dataset == "adult"
    small = quick and not adult  # the quick synthetic run: a few groupings
    for spec, label, _ in FEATURES[dataset]:
        columns, _, n_bins = spec.partition("/")
        if small and spec not in QUICK_FEATURES:
            continue
        n_bins = int(n_bins) if n_bins else None
        bags = llp_bags.FeatureBagGenerator(columns.split(), n_bins=n_bins)
        label = label or columns.replace(" ", " x ").replace("age", "age band")
        yield feature_key(spec), label, "feature", bags.fit_transform(frame)
    sizes = (16, 64, 256, 512, 1024) + ((4096, n // 6, n // 2) if adult else (n // 6,))
    for size in (16, 1024, n // 6) if small else sizes:
        bags = llp_bags.UniformBagGenerator(size, random_state=0).fit_transform(X)
        label = "6 random groups" if size == n // 6 else "random bags"
        yield f"random:{size}", f"{label} of {size}", "random", bags
    if small:
        return
    pca = 32 if adult else None  # Adult: cluster 32 principal components
    bags = llp_bags.KMeansBagGenerator(n // 64, n_components=pca, random_state=0)
    yield "kmeans", f"K-means ({n // 64} clusters)", "kmeans", bags.fit_transform(X)
    if not adult:
        bags = np.empty(n, dtype=np.int64)  # every class dealt round 300 bags
        for label in (0, 1):
            bags[y == label] = np.arange(np.sum(y == label)) % 300
        yield "stratified:300", "300 bags, identical proportions", "other", bags
        giant, order = n - n // 5, np.random.RandomState(0).permutation(n)
        bags = np.empty(n, dtype=np.int64)
        bags[order] = np.r_[np.zeros(giant, np.int64), 1 + np.arange(n - giant) // 16]
        yield "giant+16", f"1 random bag of {giant} + bags of 16", "other", bags


def budget(sizes, n_rows):
    """About PASSES passes over the rows, but at least MIN_STEPS steps."""
    capped = np.minimum(sizes, MAX_BAG_SIZE)
    per_epoch = int(capped.sum())
    batch_size = int(np.clip(4 * np.median(capped), 256, 2048))
    steps_per_epoch = max(1, math.ceil(per_epoch / batch_size))
    epochs = max(PASSES * n_rows / per_epoch, MIN_STEPS / steps_per_epoch)
    return {"max_epochs": min(MAX_EPOCHS, math.ceil(epochs)), "batch_size": batch_size}


def make_model(seed, max_epochs, batch_size):
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


def covariance_dimension(X):
    """Participation ratio of the covariance spectrum of (2000 rows of) X."""
    rows = np.linspace(0, len(X) - 1, min(len(X), 2000)).astype(np.int64)
    values = np.asarray(X[rows], dtype=np.float64)
    values = values - values.mean(axis=0)
    eig = np.clip(np.linalg.eigvalsh(values.T @ values), 0, None)
    return float(eig.sum() ** 2 / (eig**2).sum())


def run_grouping(dataset, data, key, label, kind, bags, seeds, quick):
    """The report on one grouping and the fits of every seed: one record."""
    keep = bags >= 0
    X, y, bags = data[0][keep], data[2][keep], bags[keep]
    table = llp_bags.label_proportions(bags, y, classes=[0, 1])
    start = time.perf_counter()
    report = llp_bags.check_identifiability(X, bags, table)
    report_seconds = time.perf_counter() - start
    codes = pd.Index(table.index).get_indexer(bags)
    sizes = np.bincount(codes)
    settings = budget(sizes, len(y))
    if quick:
        settings["max_epochs"] = max(2, settings["max_epochs"] // 2)
    runs, scores = [], []
    for seed in seeds:
        start = time.perf_counter()
        model = make_model(seed, **settings).fit(X, bags, table)
        seconds = time.perf_counter() - start
        scores.append(model.predict_proba(data[1])[:, 1])
        # bag error: size-weighted mean |predicted - given| positive rate
        predicted = np.bincount(codes, model.predict_proba(X)[:, 1]) / sizes
        error = np.sum(sizes * np.abs(predicted - table[1].to_numpy())) / sizes.sum()
        auc = float(roc_auc_score(data[3], scores[-1]))
        runs.append(dict(seed=seed, auc=auc, bag_error=float(error), seconds=seconds))
    aucs = np.array([r["auc"] for r in runs])
    pairs = [spearmanr(a, b)[0] for a, b in combinations(scores, 2)]
    fields = dataclasses.asdict(report) | {"classes": [int(c) for c in report.classes]}
    fields |= {"between_bag_share": report.between_bag_share, "ok": report.ok}
    record = {
        "dataset": dataset,
        "key": key,
        "label": label,
        "kind": kind,
        "n_rows": len(y),
        "n_bags": len(table),
        "size_min": int(sizes.min()),
        "size_median": float(np.median(sizes)),
        "size_max": int(sizes.max()),
        "rate_min": float(table[1].min()),
        "rate_max": float(table[1].max()),
        "report": json.loads(json.dumps(fields, default=float)),
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
    print(f"{dataset} {label}: ok={report.ok} AUC {aucs.mean():.3f}", flush=True)
    return record


def supervised(dataset, data, quick):
    """The same network on instance labels (one seed): the ceiling."""
    start = time.perf_counter()
    model = make_model(0, 2 if quick else PASSES, 256).fit(data[0], data[2])
    auc = float(roc_auc_score(data[3], model.predict_proba(data[1])[:, 1]))
    print(f"{dataset} supervised (instance labels): AUC {auc:.3f}")
    seconds = time.perf_counter() - start
    return {"dataset": dataset, "key": "supervised", "auc": auc, "seconds": seconds}


#: Head of the markdown; its paragraphs are single lines there.
HEADER = """# Identifiability report vs agreement of seeds

Generated by `benchmarks/studies/identifiability.py` on {date} ({machine}; torch
{torch}, 1 thread; {minutes:.1f} min wall{quick}). Model seeds {seeds}
(`random_state`; the bags are fixed). DLLP, MLP {HIDDEN}, Adam lr {LR} with cosine
annealing, `max_bag_size={MAX_BAG_SIZE}`, about {PASSES} passes over the rows but
at least {MIN_STEPS} steps (at most {MAX_EPOCHS} epochs).

Columns: *share* = between-bag share of the label variance (mean squared canonical
correlation); *inform.* = informative bags; *labels* = effective labelled rows per
class contrast; *dim* = effective dimension of X; *agree* = mean pairwise Spearman
correlation of the seeds' test scores; *spread* = max - min test AUC; *bag err* =
size-weighted mean |predicted - given| positive rate of the training bags (mean
over seeds): small values say that the fits reproduced the bags whatever their test
AUC. Seeds **disagree** (bold) when agree < {AGREEMENT_MIN} or spread > {SPREAD_MAX}.

"""
COLUMNS = "grouping | bags | rates | share | inform. | labels | dim | report"
COLUMNS += " | AUC mean | AUC min-max | spread | agree | bag err"


def markdown(results):
    quick = ", --quick" if results["quick"] else ""
    head, lines = HEADER.format_map(globals() | results | {"quick": quick}), []
    for paragraph in head.strip().split("\n\n"):  # HEADER knows the constants too
        lines += [paragraph.replace("\n", " "), ""]
    for dataset, title in DATASETS.items():
        rows = [r for r in results["records"] if r["dataset"] == dataset]
        sup = [s["auc"] for s in results["supervised"] if s["dataset"] == dataset]
        if not rows:
            continue
        sup = f"; same network on instance labels: test AUC {sup[0]:.3f}" if sup else ""
        lines += [f"## {title}", "", f"{rows[0]['n_rows']} training rows{sup}.", ""]
        lines += [f"| {COLUMNS} |", "|---" * 13 + "|"]
        for r in rows:
            rep, bold = r["report"], "**" if disagree(r) else ""
            lines.append(
                f"| {r['label']} | {r['n_bags']} | "
                f"{100 * r['rate_min']:.1f}-{100 * r['rate_max']:.1f} % | "
                f"{100 * rep['between_bag_share']:.2g} % | "
                f"{rep['informative_n_bags']:.1f} | {rep['effective_labels']:.0f} | "
                f"{rep['effective_dimension']:.1f} | "
                f"{'ok' if rep['ok'] else '**warns**'} | "
                f"{r['auc_mean']:.3f} | {r['auc_min']:.3f}-{r['auc_max']:.3f} | "
                f"{bold}{r['auc_spread']:.3f}{bold} | "
                f"{bold}{r['agreement']:.2f}{bold} | "
                f"{np.mean([run['bag_error'] for run in r['runs']]):.4f} |"
            )
        lines.append("")
    lines += ["## Warning vs seeds", "", "| | seeds disagree | seeds agree |"]
    lines.append("|---|---|---|")
    for name, ok in (("warns", False), ("quiet", True)):
        bad = [disagree(r) for r in results["records"] if r["report"]["ok"] == ok]
        lines.append(f"| report {name} | {sum(bad)} | {len(bad) - sum(bad)} |")
    lines.append("")
    records = results["records"]
    mixed = [r for r in records if disagree(r) == r["report"]["ok"]]
    if mixed:
        mixed = "; ".join(f"{r['label']} ({r['dataset']})" for r in mixed)
        lines += [f"Off the diagonal: {mixed}.", ""]
    return "\n".join(lines) + "\n"


#: Figure: colour, marker and legend entry of each kind of grouping.
STYLES = {
    "random": ("tab:orange", "s", "random bags"),
    "feature": ("tab:blue", "o", "feature-defined groups"),
    "kmeans": ("tab:green", "D", "K-means bags"),
    "other": ("tab:purple", "^", "identical props / giant bag"),
}
CROSS = {"color": "red", "marker": "x", "s": 22}  # warned groupings


def plot(results, path):
    """Test AUC (mean, min-max over seeds) against the number of bags."""
    records, legend = results["records"], {}
    present = {r["dataset"] for r in records}
    datasets = [d for d in ("adult", "synthetic") if d in present]
    size = (6.6 * len(datasets), 5.0)
    fig, axes = plt.subplots(1, len(datasets), figsize=size, squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        rows, seen = [r for r in records if r["dataset"] == dataset], {}
        for kind, (color, marker, name) in STYLES.items():
            part = sorted(
                (r for r in rows if r["kind"] == kind), key=lambda r: r["n_bags"]
            )
            if not part:
                continue
            x = []
            for r in part:  # spread groupings with the same number of bags
                seen[r["n_bags"]] = k = seen.get(r["n_bags"], 0) + 1
                x.append(r["n_bags"] * (1.09 ** (k - 1) if kind != "random" else 1.0))
            x, mean = np.array(x), np.array([r["auc_mean"] for r in part])
            lo, hi = [r["auc_min"] for r in part], [r["auc_max"] for r in part]
            ok = np.array([r["report"]["ok"] for r in part])
            if kind == "random":
                ax.plot(x, mean, color=color, lw=1.3, zorder=2)
                ax.fill_between(x, lo, hi, color=color, alpha=0.25, lw=0)
            else:
                ax.vlines(x, lo, hi, color=color, lw=2.0, alpha=0.6, zorder=2)
            ax.scatter(x[ok], mean[ok], color=color, marker=marker, s=34, zorder=3)
            hollow = dict(facecolor="white", edgecolor=color, s=40, lw=1.5, zorder=4)
            ax.scatter(x[~ok], mean[~ok], marker=marker, **hollow)
            ax.scatter(x[~ok], mean[~ok], lw=1.2, zorder=5, **CROSS)
            if name not in legend:
                legend[name] = ax.scatter([], [], color=color, marker=marker, s=34)
            for xi, yi, r in zip(x, mean, part) if kind != "random" else ():
                offset = OFFSETS.get(f"{dataset}/{r['key']}", (5, -2))
                name = SHORT.get(r["key"], r["label"])
                style = dict(textcoords="offset points", fontsize=6.5, color="0.25")
                ax.annotate(name, (xi, yi), xytext=offset, **style)
        for s in [s for s in results["supervised"] if s["dataset"] == dataset][:1]:
            line = ax.axhline(s["auc"], color="gray", ls="--", lw=1)
            legend["same network on instance labels"] = line
            where = dict(xycoords=("axes fraction", "data"), textcoords="offset points")
            text = f"instance labels {s['auc']:.3f}"
            style = dict(ha="left", fontsize=7, color="0.4")
            ax.annotate(text, (0, s["auc"]), xytext=(4, 3), **where, **style)
        ax.axhline(0.5, color="gray", ls=":", lw=1)
        legend["check_identifiability warns"] = ax.scatter([], [], **CROSS)
        ax.set_xscale("log")
        ax.set_xlabel("number of bags (log scale)")
        ax.set_ylabel("test ROC AUC: mean and min-max over seeds")
        title = f"{DATASETS[dataset]}, {rows[0]['n_rows']} training rows"
        ax.set_title(title, fontsize=10)
        ax.set_ylim(min(0.3, min(r["auc_min"] for r in rows) - 0.02), 1.0)
        ax.grid(alpha=0.3)
    keys = dict(loc="lower center", ncol=len(legend), fontsize=8, frameon=False)
    fig.legend(list(legend.values()), list(legend), **keys)
    seeds = f"{len(results['seeds'])} model seeds per grouping (bags fixed)"
    fig.suptitle(
        f"DLLP on bag proportions, {seeds}; band = min-max over seeds", fontsize=10
    )
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=130)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="small synthetic run, 2 seeds")
    add("--out", type=Path, default=RESULTS_DIR, help="output folder")
    add("--datasets", help="synthetic,adult (default both; --quick synthetic)")
    add("--seeds", help="model seeds (default 0,1,2,3,4; --quick 0,1)")
    add("--threads", type=int, default=1, help="torch threads")
    add("--markdown-only", action="store_true", help="redo .md, .png from the JSON")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / f"{STEM}.json"
    if args.markdown_only:
        results = json.loads(json_path.read_text())
    else:
        torch.set_num_threads(args.threads)
        quick = args.quick
        datasets = args.datasets or ("synthetic" if quick else "synthetic,adult")
        seeds = [
            int(s) for s in (args.seeds or ("0,1" if quick else "0,1,2,3,4")).split(",")
        ]
        start, records, sup = time.perf_counter(), [], []
        for dataset in datasets.split(","):
            sizes = (6000, 4000) if quick else (30000, 20000)
            data = synthetic_data(*sizes) if dataset == "synthetic" else adult_data()
            sup.append(supervised(dataset, data, quick))
            X, y, frame = data[0], data[2], data[4]
            for grouping in list(groupings(dataset, X, y, frame, quick)):
                records.append(run_grouping(dataset, data, *grouping, seeds, quick))
        results = {
            "date": datetime.date.today().isoformat(),
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
            "python": sys.version.split()[0],
            "torch": torch.__version__,
            "sklearn": sklearn.__version__,
            "quick": quick,
            "seeds": seeds,
            "minutes": (time.perf_counter() - start) / 60,
            "supervised": sup,
            "records": records,
        }
        json_path.write_text(json.dumps(results, indent=1))
    (args.out / f"{STEM}.md").write_text(markdown(results))
    plot(results, args.out / f"{STEM}.png")
    print(f"wrote {STEM}.json/.md/.png in {args.out}")


if __name__ == "__main__":
    main()
