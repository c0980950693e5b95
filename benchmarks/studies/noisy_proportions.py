"""Noisy (differentially private) group proportions: DLLP with and without
the noise-aware loss, accuracy and ROC AUC against epsilon.

Adult census groups (``--study adult``) or digits in random bags with integer
noise and suppressed small bags (``--study digits``). Setup and results:
``benchmarks/README.md``. Usage: ``python benchmarks/studies/noisy_proportions.py
[--study digits] [--quick] [--resummarise] [--out DIR]`` (see ``--help``).
"""

import argparse
import json
import math
import platform
import sys
import time
import warnings
from itertools import product
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
from sklearn_llp.exceptions import IdentifiabilityWarning
from sklearn_llp.privacy import (
    dp_noise_scale,
    dp_proportions,
    noise_variance,
    released_rows,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import RESULTS_DIR, adult_in_groups, write_results  # noqa: E402

matplotlib.use("Agg")
torch.set_num_threads(1)

#: Laplace scale 2 / epsilon: 20, 10, 3.3, 1, 0.33, 0.1, 0 (the scales of the
#: committed run, labelled 0.05 .. 10 under the earlier accounting)
EPSILONS = (0.1, 0.2, 0.6, 2.0, 6.0, 20.0, math.inf)
#: L1 sensitivity of the released counts (one label changed, sizes public) ...
SENSITIVITY = dp_noise_scale(1.0)
#: ... and of the JSONs written before it (``meta`` without "sensitivity")
OLD_SENSITIVITY = 1.0
#: digits: epsilon of the first sweep (discrete Laplace t = 2 / epsilon)
DIGITS_EPSILONS = (0.3, 1.0, 3.0, 10.0, math.inf)
#: digits: min_bag_size of the second sweep (1: nothing withheld) and its epsilons
MIN_BAG_SIZES = (1, 5, 10, 20, 40)
SUPPRESSION_EPSILONS = (1.0, math.inf)
DIGITS_MECHANISM = "discrete_laplace"


def noise_aware(**extra):
    return lambda table: {
        "method": "noisy",
        "method__noise": table.attrs["noise"],
        "method__scale": table.attrs["noise_scale"],
        "method__loss": "shares",  # the loss of these records (noisy_cells.py: counts)
        **extra,
    }


#: method name -> (label, LLPClassifier parameters given the release, colour)
METHODS = {
    "dllp": ("DLLP (noise ignored)", lambda table: {"method": "dllp"}, "tab:gray"),
    "size": (
        "DLLP weighted by group size (noise ignored)",
        lambda table: {
            "method": "noisy",
            "method__scale": 0.0,
            "method__loss": "shares",
        },
        "tab:orange",
    ),
    "noisy": ("noise-aware (method='noisy')", noise_aware(), "tab:blue"),
    "reliability": (
        "noise-aware, weighting='reliability'",
        noise_aware(method__weighting="reliability"),
        "tab:green",
    ),
}
DEFAULT_METHODS = ("dllp", "size", "noisy")


def adult_data(quick):
    """Adult split 70/30, in census groups (age band x sex x education)."""
    columns, quick_rows = ["age", "sex", "education"], 5000 if quick else None
    return adult_in_groups(columns, quick_rows=quick_rows, n_bins={"age": 6})


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


def fit_score(method, table, data, seed, epochs):
    """Test scores of one fit; the rows of withheld bags are dropped."""
    X, X_test, _, y_test, bags, _ = data
    keep = released_rows(bags, table)
    extra = {} if epochs is None else {"max_epochs": epochs}
    params = METHODS[method][1](table)
    if params.get("method__scale") == 0.0:  # the noise ignored on purpose
        table = table.copy()
        table.attrs = {}  # else method="noisy" refuses a scale not the table's
    clf = LLPClassifier(random_state=seed, verbose=0, **params, **extra)
    tic = time.perf_counter()
    with warnings.catch_warnings():  # random bags: flagged as weakly informative
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        clf.fit(X[keep], bags[keep], table)
    seconds = time.perf_counter() - tic
    scores = {"accuracy": float(accuracy_score(y_test, clf.predict(X_test)))}
    if len(np.unique(y_test)) == 2:
        scores["roc_auc"] = float(
            roc_auc_score(y_test, clf.predict_proba(X_test)[:, 1])
        )
    else:
        scores["rows_kept"] = float(keep.mean())
    return {**scores, "seconds": seconds}


def summarise(runs, keys, metrics, first=(), **where):
    """Mean and std over seeds of the runs that share ``keys``, in run order."""
    groups = {}
    for r in runs:
        if all(r[k] == v for k, v in where.items()):
            groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    rows = []
    for key, sel in groups.items():
        row = {**dict(zip(keys, key)), "n_seeds": len(sel)}
        for metric in metrics:
            values = np.array([r[metric] for r in sel])
            row[metric] = float(values.mean())
            row[metric + "_std"] = float(values.std(ddof=1)) if len(sel) > 1 else 0.0
        rows.append({**row, **{k: sel[0][k] for k in first}})
    return rows


def pick(rows, **where):
    return next(r for r in rows if all(r[k] == v for k, v in where.items()))


def eps_label(eps):
    return "inf (exact)" if math.isinf(eps) else f"{eps:g}"


def table(header, body):
    """Markdown table: header, rule, one line per row of cells."""

    def line(cells):
        return "| " + " | ".join(cells) + " |"

    return [line(header), "|---" * len(header) + "|", *(line(c) for c in body)]


def mean_std(row, metric="accuracy"):
    return f"{row[metric]:.3f} ± {row[metric + '_std']:.3f}"


def size_meta(y_train, y_test, bag_sizes, unit, **extra):
    return {
        "n_train": len(y_train),
        "n_test": len(y_test),
        f"n_{unit}": len(bag_sizes),
        **extra,
        "min_size": int(bag_sizes.min()),
        "max_size": int(bag_sizes.max()),
        "median_size": float(np.median(bag_sizes)),
    }


def decode(value):
    """Inverse of the JSON's "inf" for infinite epsilons (exact releases)."""
    if isinstance(value, dict):
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return math.inf if value == "inf" else value


def errorbars(ax, xs, rows, metric, **style):
    ys, yerr = [r[metric] for r in rows], [r[metric + "_std"] for r in rows]
    ax.errorbar(xs, ys, yerr=yerr, marker="o", capsize=3, **style)


def eps_panel(ax, rows, epsilons, methods, metric, xlabel):
    """``metric`` against epsilon (inf drawn right of the largest finite one)."""
    finite = [e for e in epsilons if not math.isinf(e)]
    x_inf = max(finite) * 4 if finite else 1.0
    xs = [x_inf if math.isinf(e) else e for e in epsilons]
    for method in methods:
        sel = [pick(rows, epsilon=e, method=method) for e in epsilons]
        label, _, colour = METHODS[method]
        errorbars(ax, xs, sel, metric, color=colour, label=label)
    ax.set_xscale("log")
    ax.set_xticks(xs, [eps_label(e).replace(" (exact)", "\n(exact)") for e in epsilons])
    ax.minorticks_off()
    ax.set_xlabel(xlabel)


def save_figure(fig, title, path):
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def fits(data, releases, seeds, methods, epochs, done, mechanism="laplace"):
    """``(epsilon, min_bag_size, seed, method, scores)`` of every fit.

    ``done`` maps such keys to the scores of fits already made: the same
    release (same epsilon, size threshold and seed) and model are not refitted.
    """
    y_train, bags = data[2], data[4]
    for eps, threshold in releases:
        min_size = None if threshold == 1 else threshold  # 1: nothing withheld
        for seed in seeds:
            release = dp_proportions(
                bags,
                y_train,
                eps,
                classes=range(10 if mechanism == DIGITS_MECHANISM else 2),  # public
                one_count=False,  # both counts, as the committed records
                mechanism=mechanism,
                min_bag_size=min_size,
                random_state=seed,
            )
            for method in methods:
                key = (eps, threshold, seed, method)
                if key not in done:
                    done[key] = fit_score(method, release, data, seed, epochs)
                    scores = "  ".join(f"{k} {v:.3f}" for k, v in done[key].items())
                    print(
                        f"epsilon {eps_label(eps):>11}  min_bag_size {threshold:>3}  "
                        f"seed {seed}  {method:<11} {scores}",
                        flush=True,
                    )
                yield *key, done[key]


# ----------------------------------------------------------------------
# --study adult: census groups, Laplace releases, epsilon sweep
# ----------------------------------------------------------------------
def markdown(payload):
    summary, meta = payload["summary"], payload["meta"]
    epsilons = sorted({r["epsilon"] for r in summary})
    methods, sensitivity = meta["methods"], meta["sensitivity"]
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
        *(f"- `{m}`: {METHODS[m][0]}" for m in methods),
    ]
    if meta.get("relabelled_from_sensitivity"):
        old = meta["relabelled_from_sensitivity"]
        lines += [
            "",
            f"This run was made under an earlier accounting (sensitivity {old:g}, "
            f"Laplace scale {old:g}/epsilon); its JSON records those labels. Its "
            f"releases had scale {sensitivity:g}/epsilon at the epsilon shown here "
            f"(each recorded epsilon times {sensitivity / old:g}).",
        ]
    metrics = {"accuracy": "accuracy", "roc_auc": "ROC AUC"}
    body = []
    for eps in epsilons:
        share_sd = 0.0 if math.isinf(eps) else sensitivity / (50 * eps)
        cells = [eps_label(eps), f"{share_sd:.3f}"]
        for metric in metrics:  # the best method in bold
            rows = [pick(summary, epsilon=eps, method=m) for m in methods]
            best = max(r[metric] for r in rows)
            cells += [
                f"**{mean_std(r, metric)}**"
                if r[metric] == best
                else mean_std(r, metric)
                for r in rows
            ]
        body.append(cells)
    lines += [
        "",
        "The noise sd of a share is that of a 50-person group after projection "
        f"(`{sensitivity:g} / (50 epsilon)`; the median group has "
        f"{meta['median_size']:g} people, {meta['n_below_10']} have fewer than 10).",
        "",
        *table(
            ["epsilon", "share noise sd (n=50)"]
            + [f"{name} `{m}`" for name in metrics.values() for m in methods],
            body,
        ),
        "",
        f"Majority class: accuracy {meta['majority_accuracy']:.3f}, ROC AUC 0.5. "
        f"Total {meta['seconds']:.0f} s ({meta['machine']}).",
        "",
        "Reproduce: `python benchmarks/studies/noisy_proportions.py` "
        "(figure: `noisy_proportions.png`).",
    ]
    return "\n".join(lines) + "\n"


def plot(payload, path):
    summary, meta = payload["summary"], payload["meta"]
    epsilons = sorted({r["epsilon"] for r in summary})
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
    xlabel = (
        f"epsilon (Laplace noise of scale {meta['sensitivity']:g}/epsilon on "
        "every count; neighbours differ in one label)"
    )
    for ax, metric, name in zip(axes, ("accuracy", "roc_auc"), ("accuracy", "ROC AUC")):
        eps_panel(ax, summary, epsilons, meta["methods"], metric, xlabel)
        if metric == "accuracy":
            majority = meta["majority_accuracy"]
            ax.axhline(majority, color="k", ls=":", lw=1, label="majority class")
            ax.set_ylim(bottom=majority - 0.005)
        ax.set_ylabel(f"test {name}")
        ax.grid(alpha=0.3)
        ax.set_title(f"Test {name}, mean ± std over {len(meta['seeds'])} seeds")
        ax.legend(fontsize="small", loc="lower right")
    save_figure(
        fig,
        f"Adult: income shares of {meta['n_groups']} census groups released with "
        f"differential privacy ({meta['n_train']:,} people, {meta['epochs']} epochs)",
        path,
    )


def relabel(payload):
    """A JSON written before the current accounting, its epsilons relabelled.

    Such a run (``meta`` without "sensitivity") released Laplace noise of
    scale ``OLD_SENSITIVITY / epsilon``, which ``dp_proportions`` now releases
    at ``SENSITIVITY / OLD_SENSITIVITY`` times that epsilon.
    """
    meta = payload["meta"]
    if "sensitivity" in meta:
        return payload
    factor = SENSITIVITY / OLD_SENSITIVITY
    meta = {**meta, "sensitivity": SENSITIVITY}
    meta["relabelled_from_sensitivity"] = OLD_SENSITIVITY
    rows = {
        key: [{**r, "epsilon": r["epsilon"] * factor} for r in payload[key]]
        for key in ("summary", "runs")
    }
    return {**payload, "meta": meta, **rows}


def adult_study(args, epsilons, methods, seeds):
    epochs = args.epochs or (3 if args.quick else 30)
    epsilons = epsilons or ([0.2, 2.0, math.inf] if args.quick else list(EPSILONS))
    data = adult_data(args.quick)
    y_train, y_test, bags, sizes = data[2:]
    releases = [(eps, 1) for eps in epsilons]  # min_bag_size 1: all released
    runs = [
        {"epsilon": eps, "seed": seed, "method": method, **scores}
        for eps, _, seed, method, scores in fits(
            data, releases, seeds, methods, epochs, done={}
        )
    ]
    meta = {
        **size_meta(y_train, y_test, sizes, "groups"),
        "n_below_10": int(np.sum(sizes < 10)),
        "epochs": epochs,
        "seeds": seeds,
        "quick": args.quick,
        "methods": methods,
        "majority_accuracy": float(max(np.mean(y_test), 1 - np.mean(y_test))),
        "sensitivity": SENSITIVITY,
        "neighbours": "one person's label changed, group sizes public",
    }
    summary = summarise(runs, ("epsilon", "method"), ("accuracy", "roc_auc"))
    return {"meta": meta, "summary": summary, "runs": runs}


# ----------------------------------------------------------------------
# --study digits: release formats (integer noise, suppression), defaults
# ----------------------------------------------------------------------
def count_sd(meta, eps):
    """Noise sd of a released count (0 for exact counts)."""
    if math.isinf(eps):
        return 0.0
    return math.sqrt(noise_variance(meta["mechanism"], meta["sensitivity"] / eps))


def digits_markdown(payload):
    eps_rows, sup_rows, meta = (
        payload[k] for k in ("epsilon_sweep", "suppression_sweep", "meta")
    )
    eps_methods, sup_methods = meta["methods"], meta["suppression_methods"]
    columns = [(e, m) for e in meta["suppression_epsilons"] for m in sup_methods]
    sizes = np.array(meta["sizes"])
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
        *(f"- `{m}`: {METHODS[m][0]}" for m in eps_methods),
        "",
        "## Accuracy against epsilon (no bag withheld)",
        "",
        *table(
            ["epsilon", "count noise sd", *(f"`{m}`" for m in eps_methods)],
            (
                [eps_label(eps), f"{count_sd(meta, eps):.2f}"]
                + [mean_std(pick(eps_rows, epsilon=eps, method=m)) for m in eps_methods]
                for eps in meta["epsilons"]
            ),
        ),
        "",
        "## Accuracy against min_bag_size (smaller bags withheld, rows dropped)",
        "",
        *table(
            ["min_bag_size", "bags released", "training rows kept"]
            + [f"`{m}` epsilon={eps_label(e)}" for e, m in columns],
            (
                [
                    str(t),
                    str(int(np.sum(sizes >= t))),
                    f"{pick(sup_rows, min_bag_size=t)['rows_kept']:.0%}",
                ]
                + [
                    mean_std(pick(sup_rows, min_bag_size=t, epsilon=e, method=m))
                    for e, m in columns
                ]
                for t in meta["min_bag_sizes"]
            ),
        ),
    ]
    lines += [
        "",
        f"Total {meta['seconds']:.0f} s ({meta['machine']}). Reproduce: "
        "`python benchmarks/studies/noisy_proportions.py --study digits` (figure: "
        "`noisy_proportions.digits.png`).",
    ]
    return "\n".join(lines) + "\n"


def digits_plot(payload, path):
    meta, sup_rows = payload["meta"], payload["suppression_sweep"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5.2))
    eps_panel(
        left,
        payload["epsilon_sweep"],
        meta["epsilons"],
        meta["methods"],
        "accuracy",
        f"epsilon (discrete Laplace, t = {meta['sensitivity']:g}/epsilon)",
    )
    left.set_title("No bag withheld")
    thresholds = meta["min_bag_sizes"]
    for method in meta["suppression_methods"]:
        for eps, style in zip(meta["suppression_epsilons"], ("-", "--")):
            rows = [
                pick(sup_rows, min_bag_size=t, epsilon=eps, method=method)
                for t in thresholds
            ]
            label = f"{method}, epsilon = {eps_label(eps)}"
            colour = METHODS[method][2]
            errorbars(
                right, thresholds, rows, "accuracy", ls=style, color=colour, label=label
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
    save_figure(
        fig,
        f"Digits in {meta['n_bags']} bags of {meta['min_size']} to "
        f"{meta['max_size']} images, released with integer noise "
        f"(LLPClassifier defaults, {len(meta['seeds'])} seeds)",
        path,
    )


def digits_study(args, epsilons, methods, seeds):
    epochs = args.epochs or (2 if args.quick else None)  # None: the default
    epsilons = epsilons or ([1.0, math.inf] if args.quick else list(DIGITS_EPSILONS))
    thresholds = [1, 10] if args.quick else list(MIN_BAG_SIZES)
    sup_methods = [m for m in methods if m != "size"]
    data = digits_data()
    y_train, y_test, bags, sizes = data[2:]
    done = {}  # min_bag_size 1: the fits of the epsilon sweep, reused
    runs = []
    for sweep, releases, sweep_methods in (
        ("epsilon", [(eps, 1) for eps in epsilons], methods),
        ("suppression", product(SUPPRESSION_EPSILONS, thresholds), sup_methods),
    ):
        for eps, threshold, seed, method, scores in fits(
            data, releases, seeds, sweep_methods, epochs, done, DIGITS_MECHANISM
        ):
            key = {"epsilon": eps, "min_bag_size": threshold, "method": method}
            runs.append({"sweep": sweep, **key, "seed": seed, **scores})
    meta = {
        "study": "digits",
        **size_meta(y_train, y_test, sizes, "bags", sizes=sizes.tolist()),
        "mechanism": DIGITS_MECHANISM,
        "sensitivity": dp_noise_scale(1.0, DIGITS_MECHANISM),
        "neighbours": "one person's label changed, bag sizes public",
        "epochs": epochs,
        "epochs_label": f"max_epochs={epochs}"
        if epochs
        else "max_epochs=100, early_stopping='auto'",
        "seeds": seeds,
        "quick": args.quick,
        "methods": methods,
        "suppression_methods": sup_methods,
        "epsilons": epsilons,
        "min_bag_sizes": thresholds,
        "suppression_epsilons": list(SUPPRESSION_EPSILONS),
    }

    def sweep_summary(sweep, *keys):
        return summarise(runs, keys, ("accuracy",), ("rows_kept",), sweep=sweep)

    return {
        "meta": meta,
        "epsilon_sweep": sweep_summary("epsilon", "epsilon", "method"),
        "suppression_sweep": sweep_summary(
            "suppression", "min_bag_size", "epsilon", "method"
        ),
        "runs": runs,
    }


STUDIES = {  # --study: (run, markdown, figure)
    "adult": (adult_study, markdown, plot),
    "digits": (digits_study, digits_markdown, digits_plot),
}


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true")
    add("--out", default=str(RESULTS_DIR), help="output folder")
    add("--epochs", type=int, default=None)
    add("--seeds", type=int, default=None)
    add("--epsilons", default=None, help="comma-separated; inf ok")
    add("--resummarise", action="store_true", help="redo .md, .png from the .json")
    add("--methods", default=",".join(DEFAULT_METHODS), help=f"of {list(METHODS)}")
    add(
        "--study",
        choices=("adult", "digits"),
        default="adult",
        help="adult: census groups, epsilon sweep; digits: release formats (integer "
        "noise, suppression) with the default estimator settings",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    stem = "noisy_proportions" + (".digits" if args.study == "digits" else "")
    study, render, draw = STUDIES[args.study]
    if args.resummarise:  # an Adult JSON of the earlier accounting is relabelled
        payload = relabel(decode(json.loads((out / f"{stem}.json").read_text())))
    else:
        methods = args.methods.split(",")
        unknown = sorted(set(methods) - set(METHODS))
        if unknown:
            parser.error(f"unknown methods {unknown}; use {list(METHODS)}")
        epsilons = args.epsilons and [float(e) for e in args.epsilons.split(",")]
        seeds = list(range(args.seeds or (1 if args.quick else 3)))
        start = time.perf_counter()
        payload = study(args, epsilons, methods, seeds)
        payload["meta"].update(
            seconds=time.perf_counter() - start,
            machine=f"{platform.machine()}, {torch.get_num_threads()} torch thread",
            sklearn_llp=sklearn_llp.__version__,
            torch=torch.__version__,
        )
        write_results(stem, payload, None, out)
    text = render(payload)
    (out / f"{stem}.md").write_text(text)
    draw(payload, out / f"{stem}.png")
    print(
        f"{text}\nwrote {out / stem}.md, .png" + ("" if args.resummarise else ", .json")
    )
    return payload


if __name__ == "__main__":
    main()
