"""Noisy (differentially private) group proportions: DLLP with and without
the noise-aware loss, accuracy and ROC AUC against epsilon.

Adult in census-style groups, each group's income shares released by
:func:`sklearn_llp.bags.dp_proportions` (epsilon-DP for neighbouring data
sets that differ in one person's label, the group sizes public); a digits
study does the same with many classes. Setup and results:
``benchmarks/README.md``, section ``studies/noisy_proportions.py``.

Usage: ``python benchmarks/studies/noisy_proportions.py [--quick] [--out DIR]
[--epochs N] [--seeds N] [--epsilons 0.1,1,inf] [--methods dllp,size,noisy]
[--resummarise]`` (``--resummarise`` redoes the table and figure from the
JSON, relabelling an old one).
"""

import argparse
import json
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split

import sklearn_llp
from sklearn_llp import LLPClassifier
from sklearn_llp.bags import (
    FeatureBagGenerator,
    dp_noise_scale,
    dp_proportions,
    noise_variance,
    released_rows,
)
from sklearn_llp.datasets import load_adult
from sklearn_llp.exceptions import IdentifiabilityWarning

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import adult_encoder  # noqa: E402

matplotlib.use("Agg")
torch.set_num_threads(1)

#: Laplace scale 2 / epsilon: 20, 10, 3.3, 1, 0.33, 0.1, 0 (the scales of the
#: committed run, labelled 0.05 .. 10 under the earlier accounting)
EPSILONS = (0.1, 0.2, 0.6, 2.0, 6.0, 20.0, math.inf)
#: L1 sensitivity of the released table of counts (dp_proportions' default:
#: one person's label changed, group sizes public)
SENSITIVITY = dp_noise_scale(1.0)
#: ... and of the JSONs written before it (``meta`` without "sensitivity")
OLD_SENSITIVITY = 1.0
#: method name -> (label, method parameters of LLPClassifier given the release)
METHODS = {
    "dllp": ("DLLP (noise ignored)", lambda table: {"method": "dllp"}),
    "size": (
        "DLLP weighted by group size (noise ignored)",
        lambda table: {"method": "noisy", "method__scale": 0.0},
    ),
    "noisy": (
        "noise-aware (method='noisy')",
        lambda table: {
            "method": "noisy",
            "method__noise": table.attrs["noise"],
            "method__scale": table.attrs["noise_scale"],
        },
    ),
    "reliability": (
        "noise-aware, weighting='reliability'",
        lambda table: {
            "method": "noisy",
            "method__noise": table.attrs["noise"],
            "method__scale": table.attrs["noise_scale"],
            "method__weighting": "reliability",
        },
    ),
}
DEFAULT_METHODS = ("dllp", "size", "noisy")
COLOURS = {
    "dllp": "tab:gray",
    "size": "tab:orange",
    "noisy": "tab:blue",
    "reliability": "tab:green",
}


RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


def data(quick):
    """Preprocessed train/test features, training labels and groups."""
    X, y = load_adult(return_X_y=True)
    y = (y == ">50K").to_numpy().astype(int)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )
    if quick:
        X_train, _, y_train, _ = train_test_split(
            X_train, y_train, train_size=5000, stratify=y_train, random_state=0
        )
    prep = adult_encoder()
    groups = FeatureBagGenerator(["age", "sex", "education"], n_bins={"age": 6})
    bags = groups.fit_transform(X_train)
    return (
        prep.fit_transform(X_train).astype(np.float32),
        prep.transform(X_test).astype(np.float32),
        y_train,
        y_test,
        bags,
        groups.bag_sizes_,
    )


def fit_score(method, table, features, bags, y_test, X_test, epochs, seed):
    params = METHODS[method][1](table)
    clf = LLPClassifier(max_epochs=epochs, random_state=seed, verbose=0, **params)
    tic = time.perf_counter()
    clf.fit(features, bags, table)
    seconds = time.perf_counter() - tic
    proba = clf.predict_proba(X_test)[:, 1]
    return {
        "accuracy": float(accuracy_score(y_test, clf.predict(X_test))),
        "roc_auc": float(roc_auc_score(y_test, proba)),
        "seconds": seconds,
    }


def summarise(runs, epsilons, methods):
    rows = []
    for eps in epsilons:
        for method in methods:
            sel = [r for r in runs if r["epsilon"] == eps and r["method"] == method]
            row = {"epsilon": eps, "method": method, "n_seeds": len(sel)}
            for metric in ("accuracy", "roc_auc"):
                values = np.array([r[metric] for r in sel])
                row[metric] = float(values.mean())
                row[metric + "_std"] = (
                    float(values.std(ddof=1)) if len(sel) > 1 else 0.0
                )
            rows.append(row)
    return rows


def eps_label(eps):
    return "inf (exact)" if math.isinf(eps) else f"{eps:g}"


def markdown(summary, meta):
    by = {(r["epsilon"], r["method"]): r for r in summary}
    epsilons = sorted({r["epsilon"] for r in summary})
    methods = meta["methods"]
    sensitivity = meta["sensitivity"]
    lines = [
        "# Noisy (differentially private) group proportions",
        "",
        f"Adult (>50K), {meta['n_train']:,} training people in "
        f"{meta['n_groups']} groups (age band x sex x education; sizes "
        f"{meta['min_size']} to {meta['max_size']}, median {meta['median_size']:g}), "
        f"{meta['n_test']:,} test people. Laplace mechanism on every class count "
        f"(scale {sensitivity:g}/epsilon: epsilon-DP for neighbouring data sets "
        "that differ in one person's label, group sizes public), shares "
        f"projected onto the simplex. {meta['epochs']} epochs, default MLP, seeds "
        f"{meta['seeds']} (noise draw and model); mean ± std over seeds. Methods:",
        "",
    ]
    lines += [f"- `{m}`: {METHODS[m][0]}" for m in methods]
    if meta.get("relabelled_from_sensitivity"):
        old = meta["relabelled_from_sensitivity"]
        lines += [
            "",
            f"This run was made under an earlier accounting (sensitivity {old:g}, "
            f"Laplace scale {old:g}/epsilon); its JSON records those labels. Its "
            f"releases had scale {sensitivity:g}/epsilon at the epsilon shown here "
            f"(each recorded epsilon times {sensitivity / old:g}).",
        ]
    lines += [
        "",
        "The noise sd of a share is that of a 50-person group after projection "
        f"(`{sensitivity:g} / (50 epsilon)`; the median group has "
        f"{meta['median_size']:g} people, {meta['n_below_10']} have fewer than 10).",
        "",
        "| epsilon | share noise sd (n=50) | "
        + " | ".join(f"accuracy `{m}`" for m in methods)
        + " | "
        + " | ".join(f"ROC AUC `{m}`" for m in methods)
        + " |",
        "|---" * (2 + 2 * len(methods)) + "|",
    ]
    for eps in epsilons:
        share_sd = 0.0 if math.isinf(eps) else sensitivity / (50 * eps)
        cells = [eps_label(eps), f"{share_sd:.3f}"]
        for metric in ("accuracy", "roc_auc"):
            best = max(by[(eps, m)][metric] for m in methods)
            for m in methods:
                r = by[(eps, m)]
                text = f"{r[metric]:.3f} ± {r[metric + '_std']:.3f}"
                cells.append(f"**{text}**" if r[metric] == best else text)
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Majority class: accuracy {meta['majority_accuracy']:.3f}, ROC AUC 0.5. "
        f"Total {meta['seconds']:.0f} s ({meta['machine']}).",
        "",
        "Reproduce: `python benchmarks/studies/noisy_proportions.py` "
        "(figure: `noisy_proportions.png`).",
    ]
    return "\n".join(lines) + "\n"


def plot(summary, meta, path):
    epsilons = sorted({r["epsilon"] for r in summary})
    finite = [e for e in epsilons if not math.isinf(e)]
    x_inf = max(finite) * 4 if finite else 1.0
    xs = [x_inf if math.isinf(e) else e for e in epsilons]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    panels = zip(axes, ("accuracy", "roc_auc"), ("accuracy", "ROC AUC"))
    for ax, metric, name in panels:
        for method in meta["methods"]:
            rows = [
                next(r for r in summary if r["epsilon"] == e and r["method"] == method)
                for e in epsilons
            ]
            ax.errorbar(
                xs,
                [r[metric] for r in rows],
                yerr=[r[metric + "_std"] for r in rows],
                marker="o",
                capsize=3,
                color=COLOURS[method],
                label=METHODS[method][0],
            )
        if metric == "accuracy":
            ax.axhline(
                meta["majority_accuracy"],
                color="k",
                ls=":",
                lw=1,
                label="majority class",
            )
            ax.set_ylim(bottom=meta["majority_accuracy"] - 0.005)
        ax.set_xscale("log")
        ax.set_xticks(
            xs, [eps_label(e).replace(" (exact)", "\n(exact)") for e in epsilons]
        )
        ax.minorticks_off()
        ax.set_xlabel(
            f"epsilon (Laplace noise of scale {meta['sensitivity']:g}/epsilon on "
            "every count; neighbours differ in one label)"
        )
        ax.set_ylabel(f"test {name}")
        ax.grid(alpha=0.3)
        ax.set_title(f"Test {name}, mean ± std over {len(meta['seeds'])} seeds")
        ax.legend(fontsize="small", loc="lower right")
    fig.suptitle(
        f"Adult: income shares of {meta['n_groups']} census groups released with "
        f"differential privacy ({meta['n_train']:,} people, {meta['epochs']} epochs)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _encode(value):
    """JSON-safe: infinite floats (exact releases, eps = inf) as "inf"."""
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode(value):
    return math.inf if value == "inf" else value


def relabel(payload):
    """Epsilon under the current accounting, for a JSON written before it.

    A run whose ``meta`` has no ``sensitivity`` released Laplace noise of
    scale ``OLD_SENSITIVITY / epsilon``; ``dp_proportions`` now releases that
    scale at ``SENSITIVITY / OLD_SENSITIVITY`` times that epsilon. Returns
    the payload with its epsilons (summary and runs) relabelled so and
    ``meta["relabelled_from_sensitivity"]`` set; a current one unchanged.
    """
    meta = payload["meta"]
    if "sensitivity" in meta:
        return payload
    factor = SENSITIVITY / OLD_SENSITIVITY

    def rows(key):
        return [{**r, "epsilon": _decode(r["epsilon"]) * factor} for r in payload[key]]

    meta = {**meta, "sensitivity": SENSITIVITY}
    meta["relabelled_from_sensitivity"] = OLD_SENSITIVITY
    return {**payload, "meta": meta, "summary": rows("summary"), "runs": rows("runs")}


def resummarise(out):
    payload = relabel(json.loads((out / "noisy_proportions.json").read_text()))
    summary = [{k: _decode(v) for k, v in r.items()} for r in payload["summary"]]
    (out / "noisy_proportions.md").write_text(markdown(summary, payload["meta"]))
    plot(summary, payload["meta"], out / "noisy_proportions.png")
    print(f"rewrote {out}/noisy_proportions.{{md,png}} from the JSON")
    return payload


# ----------------------------------------------------------------------
# --study digits: release formats (integer noise, suppression), defaults
# ----------------------------------------------------------------------
#: epsilon of the first sweep (discrete Laplace t = 2 / epsilon: 6.7 to 0.2)
DIGITS_EPSILONS = (0.3, 1.0, 3.0, 10.0, math.inf)
#: min_bag_size of the second sweep (1: nothing withheld)
MIN_BAG_SIZES = (1, 5, 10, 20, 40)
#: epsilon of the second sweep
SUPPRESSION_EPSILONS = (1.0, math.inf)
DIGITS_MECHANISM = "discrete_laplace"


def digits_data():
    """Digits split 70/30, and census-like random bags of the training rows."""
    X, y = load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )
    rng = np.random.RandomState(0)
    n, sizes = len(y_train), []
    while sum(sizes) < n:  # heavy-tailed sizes, as census cells
        sizes.append(int(np.clip(np.round(rng.lognormal(2.7, 0.9)), 1, 200)))
    sizes[-1] -= sum(sizes) - n
    sizes = np.array([s for s in sizes if s > 0])
    bags = np.repeat(np.arange(len(sizes)), sizes)[np.argsort(rng.permutation(n))]
    return X_train, X_test, y_train, y_test, bags, sizes


def digits_fit(method, table, X, bags, X_test, y_test, seed, epochs):
    keep = released_rows(bags, table)
    params = METHODS[method][1](table)
    extra = {} if epochs is None else {"max_epochs": epochs}
    clf = LLPClassifier(random_state=seed, verbose=0, **params, **extra)
    tic = time.perf_counter()
    with warnings.catch_warnings():  # random bags: flagged as weakly informative
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        clf.fit(X[keep], bags[keep], table)  # rows of withheld bags dropped
    return {
        "accuracy": float(accuracy_score(y_test, clf.predict(X_test))),
        "rows_kept": float(keep.mean()),
        "seconds": time.perf_counter() - tic,
    }


def digits_summary(runs, keys):
    groups = {}
    for r in runs:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    rows = []
    for key, sel in groups.items():
        values = np.array([r["accuracy"] for r in sel])
        rows.append(
            {
                **dict(zip(keys, key)),
                "n_seeds": len(sel),
                "accuracy": float(values.mean()),
                "accuracy_std": float(values.std(ddof=1)) if len(sel) > 1 else 0.0,
                "rows_kept": sel[0]["rows_kept"],
            }
        )
    return rows


def digits_markdown(eps_rows, sup_rows, meta):
    def cell(rows, **where):
        r = next(r for r in rows if all(r[k] == v for k, v in where.items()))
        return f"{r['accuracy']:.3f} ± {r['accuracy_std']:.3f}"

    eps_methods, sup_methods = meta["methods"], meta["suppression_methods"]
    lines = [
        "# Noisy proportions: release formats (digits, default settings)",
        "",
        f"Digits (10 classes), {meta['n_train']:,} training images in "
        f"{meta['n_bags']} random bags of census-like sizes ({meta['min_size']} "
        f"to {meta['max_size']}, median {meta['median_size']:g}), "
        f"{meta['n_test']:,} test images. Every bag's class counts released with "
        f'`mechanism="{meta["mechanism"]}"` (integer noise, scale t = '
        f"{meta['sensitivity']:g}/epsilon: epsilon-DP for neighbours that differ "
        "in one label, bag sizes public), projected onto the simplex. "
        f"`LLPClassifier` defaults ({meta['epochs_label']}); seeds {meta['seeds']} "
        "(noise draw and model; the bags are fixed); test accuracy, mean ± std "
        "over seeds. Methods:",
        "",
    ]
    lines += [f"- `{m}`: {METHODS[m][0]}" for m in eps_methods]
    lines += [
        "",
        "## Accuracy against epsilon (no bag withheld)",
        "",
        "| epsilon | count noise sd | "
        + " | ".join(f"`{m}`" for m in eps_methods)
        + " |",
        "|---" * (2 + len(eps_methods)) + "|",
    ]
    for eps in meta["epsilons"]:
        sd = (
            0.0
            if math.isinf(eps)
            else math.sqrt(noise_variance(meta["mechanism"], meta["sensitivity"] / eps))
        )
        cells = [cell(eps_rows, epsilon=eps, method=m) for m in eps_methods]
        lines.append(f"| {eps_label(eps)} | {sd:.2f} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Accuracy against min_bag_size (smaller bags withheld, rows dropped)",
        "",
        "| min_bag_size | bags released | training rows kept | "
        + " | ".join(
            f"`{m}` epsilon={eps_label(e)}"
            for e in meta["suppression_epsilons"]
            for m in sup_methods
        )
        + " |",
        "|---" * (3 + len(sup_methods) * len(meta["suppression_epsilons"])) + "|",
    ]
    sizes = np.array(meta["sizes"])
    for threshold in meta["min_bag_sizes"]:
        kept = next(r for r in sup_rows if r["min_bag_size"] == threshold)
        cells = [
            cell(sup_rows, min_bag_size=threshold, epsilon=e, method=m)
            for e in meta["suppression_epsilons"]
            for m in sup_methods
        ]
        lines.append(
            f"| {threshold} | {int(np.sum(sizes >= threshold))} | "
            f"{kept['rows_kept']:.0%} | " + " | ".join(cells) + " |"
        )
    lines += [
        "",
        f"Total {meta['seconds']:.0f} s ({meta['machine']}). Reproduce: "
        "`python benchmarks/studies/noisy_proportions.py --study digits` (figure: "
        "`noisy_proportions.digits.png`).",
    ]
    return "\n".join(lines) + "\n"


def digits_plot(eps_rows, sup_rows, meta, path):
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.2))
    epsilons = meta["epsilons"]
    finite = [e for e in epsilons if not math.isinf(e)]
    xs = [max(finite) * 4 if math.isinf(e) else e for e in epsilons]
    for method in meta["methods"]:
        rows = [
            next(r for r in eps_rows if r["epsilon"] == e and r["method"] == method)
            for e in epsilons
        ]
        left.errorbar(
            xs,
            [r["accuracy"] for r in rows],
            yerr=[r["accuracy_std"] for r in rows],
            marker="o",
            capsize=3,
            color=COLOURS[method],
            label=METHODS[method][0],
        )
    left.set_xscale("log")
    left.set_xticks(
        xs, [eps_label(e).replace(" (exact)", "\n(exact)") for e in epsilons]
    )
    left.minorticks_off()
    left.set_xlabel(f"epsilon (discrete Laplace, t = {meta['sensitivity']:g}/epsilon)")
    left.set_title("No bag withheld")
    thresholds = meta["min_bag_sizes"]
    for method in meta["suppression_methods"]:
        for eps, style in zip(meta["suppression_epsilons"], ("-", "--")):
            rows = [
                next(
                    r
                    for r in sup_rows
                    if r["min_bag_size"] == t
                    and r["epsilon"] == eps
                    and r["method"] == method
                )
                for t in thresholds
            ]
            right.errorbar(
                thresholds,
                [r["accuracy"] for r in rows],
                yerr=[r["accuracy_std"] for r in rows],
                marker="o",
                capsize=3,
                ls=style,
                color=COLOURS[method],
                label=f"{method}, epsilon = {eps_label(eps)}",
            )
    right.set_xlabel("min_bag_size (smaller bags withheld, their rows dropped)")
    right.set_title("Suppression of small bags")
    for ax in (left, right):
        ax.set_ylabel("test accuracy")
        ax.grid(alpha=0.3)
    left.legend(fontsize="small", loc="lower right")
    right.legend(
        fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2
    )
    fig.suptitle(
        f"Digits in {meta['n_bags']} bags of {meta['min_size']} to "
        f"{meta['max_size']} images, released with integer noise "
        f"(LLPClassifier defaults, {len(meta['seeds'])} seeds)"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def digits_resummarise(out):
    """Redo the digits study's .md and .png from its JSON."""
    payload = json.loads((out / "noisy_proportions.digits.json").read_text())

    def decode(value):
        return [decode(v) for v in value] if isinstance(value, list) else _decode(value)

    meta = {k: decode(v) for k, v in payload["meta"].items()}
    eps_rows, sup_rows = (
        [{k: decode(v) for k, v in r.items()} for r in payload[key]]
        for key in ("epsilon_sweep", "suppression_sweep")
    )
    (out / "noisy_proportions.digits.md").write_text(
        digits_markdown(eps_rows, sup_rows, meta)
    )
    digits_plot(eps_rows, sup_rows, meta, out / "noisy_proportions.digits.png")
    print(f"rewrote {out}/noisy_proportions.digits.{{md,png}} from the JSON")
    return payload


def digits_study(args):
    start = time.perf_counter()
    n_seeds = args.seeds or (1 if args.quick else 3)
    epochs = args.epochs or (2 if args.quick else None)  # None: the default
    epsilons = (
        [float(e) for e in args.epsilons.split(",")]
        if args.epsilons
        else ([1.0, math.inf] if args.quick else list(DIGITS_EPSILONS))
    )
    thresholds = [1, 10] if args.quick else list(MIN_BAG_SIZES)
    methods = args.methods.split(",")
    sup_methods = [m for m in methods if m != "size"]
    X_train, X_test, y_train, y_test, bags, sizes = digits_data()
    sensitivity = dp_noise_scale(1.0, DIGITS_MECHANISM)

    def release(eps, threshold, seed):
        return dp_proportions(
            bags,
            y_train,
            eps,
            mechanism=DIGITS_MECHANISM,
            min_bag_size=None if threshold == 1 else threshold,
            random_state=seed,
        )

    def run(kind, eps, threshold, method, seed, table):
        scores = digits_fit(method, table, X_train, bags, X_test, y_test, seed, epochs)
        print(
            f"{kind:<11} epsilon {eps_label(eps):>11}  min_bag_size {threshold:>3}  "
            f"seed {seed}  {method:<6} accuracy {scores['accuracy']:.3f}  "
            f"rows {scores['rows_kept']:.0%}  ({scores['seconds']:.1f} s)",
            flush=True,
        )
        return {
            "sweep": kind,
            "epsilon": eps,
            "min_bag_size": threshold,
            "method": method,
            "seed": seed,
            **scores,
        }

    runs = []
    for eps in epsilons:
        for seed in range(n_seeds):
            table = release(eps, 1, seed)
            for method in methods:
                runs.append(run("epsilon", eps, 1, method, seed, table))
    for eps in SUPPRESSION_EPSILONS:
        for threshold in thresholds:
            for seed in range(n_seeds):
                table = release(eps, threshold, seed)
                for method in sup_methods:
                    if threshold == 1 and eps in epsilons:
                        # the same release and fit as in the first sweep
                        same = next(
                            r
                            for r in runs
                            if r["sweep"] == "epsilon"
                            and r["epsilon"] == eps
                            and r["method"] == method
                            and r["seed"] == seed
                        )
                        runs.append({**same, "sweep": "suppression"})
                        continue
                    runs.append(run("suppression", eps, threshold, method, seed, table))
    eps_rows = digits_summary(
        [r for r in runs if r["sweep"] == "epsilon"], ("epsilon", "method")
    )
    sup_rows = digits_summary(
        [r for r in runs if r["sweep"] == "suppression"],
        ("min_bag_size", "epsilon", "method"),
    )
    meta = {
        "study": "digits",
        "n_train": len(y_train),
        "n_test": len(y_test),
        "n_bags": len(sizes),
        "sizes": sizes.tolist(),
        "min_size": int(sizes.min()),
        "max_size": int(sizes.max()),
        "median_size": float(np.median(sizes)),
        "mechanism": DIGITS_MECHANISM,
        "sensitivity": sensitivity,
        "neighbours": "one person's label changed, bag sizes public",
        "epochs": epochs,
        "epochs_label": "max_epochs=100, early_stopping='auto'"
        if epochs is None
        else f"max_epochs={epochs}",
        "seeds": list(range(n_seeds)),
        "quick": args.quick,
        "methods": methods,
        "suppression_methods": sup_methods,
        "epsilons": epsilons,
        "min_bag_sizes": thresholds,
        "suppression_epsilons": list(SUPPRESSION_EPSILONS),
        "seconds": time.perf_counter() - start,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch thread",
        "sklearn_llp": sklearn_llp.__version__,
        "torch": torch.__version__,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    payload = {
        "meta": {k: _encode(v) for k, v in meta.items()},
        "epsilon_sweep": [{k: _encode(v) for k, v in r.items()} for r in eps_rows],
        "suppression_sweep": [{k: _encode(v) for k, v in r.items()} for r in sup_rows],
        "runs": [{k: _encode(v) for k, v in r.items()} for r in runs],
    }
    stem = "noisy_proportions.digits"  # beside the Adult study's files
    (out / f"{stem}.json").write_text(json.dumps(payload, indent=1) + "\n")
    text = digits_markdown(eps_rows, sup_rows, meta)
    (out / f"{stem}.md").write_text(text)
    digits_plot(eps_rows, sup_rows, meta, out / f"{stem}.png")
    print(text)
    print(f"wrote {out / stem}.{{json,md,png}} ({meta['seconds']:.0f} s)")
    return payload


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true")
    add("--out", default=str(RESULTS_DIR), help="output folder")
    add("--epochs", type=int, default=None)
    add("--seeds", type=int, default=None)
    add("--epsilons", default=None, help="comma-separated; inf ok")
    add(
        "--resummarise",
        action="store_true",
        help="redo the .md and .png from the .json in --out",
    )
    add(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help=f"comma-separated, of {list(METHODS)}",
    )
    add(
        "--study",
        choices=("adult", "digits"),
        default="adult",
        help="adult: census groups, epsilon sweep; digits: release formats (integer "
        "noise, suppression) with the default estimator settings",
    )
    args = parser.parse_args(argv)
    if args.study == "digits" and args.resummarise:
        return digits_resummarise(Path(args.out))
    if args.study == "digits":
        unknown = sorted(set(args.methods.split(",")) - set(METHODS))
        if unknown:
            parser.error(f"unknown methods {unknown}; use {list(METHODS)}")
        return digits_study(args)
    epochs = args.epochs or (3 if args.quick else 30)
    n_seeds = args.seeds or (1 if args.quick else 3)
    if args.epsilons:
        epsilons = [float(e) for e in args.epsilons.split(",")]
    else:
        epsilons = [0.2, 2.0, math.inf] if args.quick else list(EPSILONS)
    if args.resummarise:
        return resummarise(Path(args.out))
    methods = args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown methods {unknown}; use {list(METHODS)}")
    start = time.perf_counter()

    X_train, X_test, y_train, y_test, bags, sizes = data(args.quick)
    runs = []
    for eps in epsilons:
        for seed in range(n_seeds):
            table = dp_proportions(bags, y_train, eps, random_state=seed)
            for method in methods:
                scores = fit_score(
                    method, table, X_train, bags, y_test, X_test, epochs, seed
                )
                runs.append({"epsilon": eps, "seed": seed, "method": method, **scores})
                print(
                    f"epsilon {eps_label(eps):>11}  seed {seed}  {method:<11} "
                    f"accuracy {scores['accuracy']:.3f}  ROC AUC "
                    f"{scores['roc_auc']:.3f}  ({scores['seconds']:.1f} s)",
                    flush=True,
                )
    summary = summarise(runs, epsilons, methods)
    meta = {
        "n_train": len(y_train),
        "n_test": len(y_test),
        "n_groups": len(sizes),
        "min_size": int(sizes.min()),
        "max_size": int(sizes.max()),
        "median_size": float(np.median(sizes)),
        "n_below_10": int(np.sum(sizes < 10)),
        "epochs": epochs,
        "seeds": list(range(n_seeds)),
        "quick": args.quick,
        "methods": methods,
        "majority_accuracy": float(max(np.mean(y_test), 1 - np.mean(y_test))),
        "sensitivity": SENSITIVITY,
        "neighbours": "one person's label changed, group sizes public",
        "seconds": time.perf_counter() - start,
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch thread",
        "sklearn_llp": sklearn_llp.__version__,
        "torch": torch.__version__,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    payload = {
        "meta": meta,
        "summary": [{k: _encode(v) for k, v in r.items()} for r in summary],
        "runs": [{k: _encode(v) for k, v in r.items()} for r in runs],
    }
    (out / "noisy_proportions.json").write_text(json.dumps(payload, indent=1) + "\n")
    (out / "noisy_proportions.md").write_text(markdown(summary, meta))
    plot(summary, meta, out / "noisy_proportions.png")
    print(markdown(summary, meta))
    print(f"wrote {out}/noisy_proportions.{{json,md,png}} ({meta['seconds']:.0f} s)")
    return payload


if __name__ == "__main__":
    main()
