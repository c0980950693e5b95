"""Test accuracy of the LLP methods on four data sets, in random and K-means bags.

Every method trains on bags and their label proportions only and is scored,
with ``predict``, on the untouched test split; the same network trained on
the instance labels is the supervised bound. One JSON record per run. Data,
settings and findings: ``benchmarks/README.md``, section ``accuracy.py``.

    python benchmarks/accuracy.py --quick --out /tmp/acc  # smoke test, seconds
    python benchmarks/accuracy.py --jobs 2 --resume       # the committed grid
    python benchmarks/accuracy.py --markdown-only         # accuracy.md from the JSON
"""

import argparse
import datetime
import json
import multiprocessing
import sys
import time
import warnings
from collections import Counter
from contextlib import nullcontext
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
from sklearn.model_selection import GridSearchCV
from skorch.callbacks import LRScheduler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import KMeansBagGenerator, UniformBagGenerator
from sklearn_llp.exceptions import FitDivergedError
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.methods import make_method, method_params
from sklearn_llp.metrics import make_bag_scorer
from sklearn_llp.model_selection import BagKFold

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for _common
from _common import (  # noqa: E402
    FASHION_DIR,
    RESULTS_DIR,
    ensure_fashion,
    git_head,
    load_dataset,
    machine_info,
    versions,
    write_results,
)

STEM = "accuracy"
DATASET_LABELS = {
    "digits": "digits",
    "mnist5k": "MNIST-5k",
    "fashion": "Fashion-MNIST",
    "adult": "Adult",
}
METHOD_LABELS = {
    "dllp": "DLLP",
    "vat": "LLP-VAT",
    "pi": "Π-model",
    "rot": "ROT",
    "llpfc": "LLPFC",
    "easyllp": "EasyLLP",
    "meanmap": "Mean Map",
}
LLP_METHODS = tuple(METHOD_LABELS)
NETWORK_METHODS = LLP_METHODS[:-1]  # of LLPClassifier; Mean Map is linear
SUPERVISED = "supervised"


def _variant(method, label, params, baggings, datasets=None):
    return dict(
        method=method, label=label, params=params, baggings=baggings, datasets=datasets
    )


#: A method with some parameters changed, on some cells (and data sets: None
#: for all) only; its own name keeps it from superseding the main run.
VARIANTS = {
    f"{m}-batch{n}": _variant(
        m, f"{METHOD_LABELS[m]}, batch {n}", {"batch_size": n}, *c
    )
    for m, n, *c in [
        ("dllp", 128, ("uniform-256",)),
        ("vat", 128, ("uniform-256",)),
        ("vat", 256, ("uniform-16", "uniform-64", "kmeans"), ("adult",)),
    ]
}
# not on Fashion-MNIST: 13 fits a run for the selection, ~15 min here
VARIANTS["meanmap-laplacian"] = _variant(
    "meanmap",
    "Laplacian Mean Map",
    {"laplacian": "held-out"},
    ("uniform-16", "uniform-64", "uniform-256", "kmeans", "count-25", "count-10"),
    ("digits", "mnist5k", "adult"),
)
#: The Laplacian Mean Map's choices, by the hard L1 of 3-fold held-out bags.
LAPLACIAN_GRID = (0.0, 0.003, 0.01, 0.1)
METHODS = (*LLP_METHODS, *VARIANTS, SUPERVISED)

#: ``--bag-sizes``: random bags of that many rows, K-means bags, or
#: ``count-N``: N random bags of ``n_train // N`` rows.
BAG_SIZES = ("16", "64", "256", "kmeans", "count-25", "count-10")
DEFAULT_BAG_SIZES = {d: BAG_SIZES[:4] for d in DATASET_LABELS} | {"adult": BAG_SIZES}
KMEANS_MEAN_SIZE = 64  # n_train // 64 clusters
KMEANS_COMPONENTS = 32
#: Base epochs per data set; everything else is shared (pilots: tune.py).
EPOCHS = {"digits": 50, "mnist5k": 30, "fashion": 20, "adult": 10}
SHARED = {"lr": 1e-3, "hidden_sizes": (256, 256), "vat_eps": 1.0, "schedule": "cosine"}
TRAINING = {d: {"max_epochs": e, **SHARED} for d, e in EPOCHS.items()}
BASE_BATCH = 128  # batch_size="auto" on the CPU, in rows
BAGS_PER_BATCH = 8  # ... and in bags, for bags of BASE_BATCH rows or more
#: The method parameters a record lists, at the package's defaults.
RECORDED_METHOD_PARAMS = {
    "vat": ("alpha", "xi", "rampup"),
    "pi": ("alpha", "noise_std", "rampup"),
    "rot": ("rot_alpha",),
}
_DEFAULTS = LLPClassifier().get_params()
#: Selected per cell by the held-out hard L1 of the pilots (results/tuning.md).
SELECTED = {
    ("fashion", "uniform-16", "vat"): {
        "method__alpha": 0.1,
        "method__eps": 2.0,
        "max_epochs": 40,
    },
    ("fashion", "uniform-16", "pi"): {"max_epochs": 40},
}
#: ... and for every network method of a cell.
SELECTED_TRAINING = {
    ("adult", "uniform-256"): {"max_epochs": 160},
    ("fashion", "uniform-256"): {"max_epochs": 80, "lr": 5e-4},
}
QUICK = {"max_train": 600, "max_epochs": 10, "hidden_sizes": (32,)}


# --- bags and runs ---
def bagging_name(bag_size):
    """``"16"`` -> ``"uniform-16"``; ``"kmeans"`` and ``"count-N"`` as they are."""
    if bag_size == "kmeans" or bag_size.startswith("count-"):
        return bag_size
    return f"uniform-{bag_size}"


def bag_size_of(bagging, n_train):
    """Rows per bag of a random bagging; None for K-means bags and labels."""
    if bagging.startswith("uniform-"):
        return int(bagging.split("-")[1])
    if bagging.startswith("count-"):
        return n_train // int(bagging.split("-")[1])
    return None


def bag_generator(bagging, n_train, n_features, seed):
    """The generator of a bagging name and its settings (for the records)."""
    if bagging == "kmeans":
        k = max(2, n_train // KMEANS_MEAN_SIZE)
        dims = min(KMEANS_COMPONENTS, n_features)
        gen = KMeansBagGenerator(k, n_components=dims, random_state=seed)
        info = dict(generator="KMeansBagGenerator", n_clusters=k, n_components=dims)
        return gen, info | {"minibatch": "auto"}
    size = bag_size_of(bagging, n_train)
    settings = {"generator": "UniformBagGenerator", "bag_size": size}
    if bagging.startswith("count-"):
        settings["n_bags_wanted"] = int(bagging.split("-")[1])
    return UniformBagGenerator(size, drop_last=True, random_state=seed), settings


@lru_cache(maxsize=8)
def make_bags(dataset, max_train, fashion_dir, bagging, seed):
    """Bags of the training rows, cached per data set, bagging and seed."""
    X_train, _, y_train, _ = load_dataset(dataset, max_train, fashion_dir)
    gen, settings = bag_generator(bagging, *X_train.shape, seed)
    start = time.perf_counter()
    bags, props = gen.make_bags(X_train, y_train)
    sizes = gen.bag_sizes_
    info = {
        **settings,
        "n_bags": int(gen.n_bags_),
        "n_bagged": int(gen.sample_mask_.sum()),
        "bag_size_min": int(sizes.min()),
        "bag_size_median": float(np.median(sizes)),
        "bag_size_max": int(sizes.max()),
        "bag_seconds": round(time.perf_counter() - start, 2),
    }
    return bags, props, info


def training_for(training, bagging, n_train=None):
    """The training of one bagging: random bags of ``BASE_BATCH`` rows or
    more go ``BAGS_PER_BATCH`` to a step, so they get ``round(bag_size /
    BASE_BATCH)`` times the epochs (``n_train``: for ``count-N`` only)."""
    size = bag_size_of(bagging, n_train)
    if size is None or size < BASE_BATCH:
        return training
    return {**training, "max_epochs": training["max_epochs"] * round(size / BASE_BATCH)}


def base_method(method):
    """The method a (variant) method name runs: ``"vat-batch128"`` -> ``"vat"``."""
    return VARIANTS[method]["method"] if method in VARIANTS else method


def runs_on(method, dataset, bagging):
    """Whether a method (or variant) belongs to a data set x bagging cell."""
    variant = VARIANTS.get(method)
    return variant is None or (
        bagging in variant["baggings"]
        and (variant["datasets"] is None or dataset in variant["datasets"])
    )


def hyperparameters(task):
    """Estimator keyword arguments of a run (JSON-friendly)."""
    method = base_method(task["method"])
    variant = VARIANTS.get(task["method"], {}).get("params", {})
    if method == "meanmap":
        return {"method": "meanmap", **MeanMapClassifier().get_params(), **variant}
    train = task["training"]
    params = {
        "method": "dllp" if method == SUPERVISED else method,
        "max_epochs": train["max_epochs"],
        "lr": train["lr"],
        "batch_size": "auto",
        "threshold": _DEFAULTS["threshold"],
        "module__hidden_sizes": list(train["hidden_sizes"]),
        "max_bag_size": _DEFAULTS["max_bag_size"],
        "optimizer": "Adam",
        "lr_schedule": train.get("schedule"),
    }
    defaults = method_params(params["method"])
    recorded = RECORDED_METHOD_PARAMS.get(method, ())
    if method in ("llpfc", "easyllp"):
        recorded = tuple(defaults)
    params.update({f"method__{k}": defaults[k] for k in recorded})
    if method == "vat":
        params["method__eps"] = train["vat_eps"]
    if method != SUPERVISED and make_method(method).early_stopping_default:
        params["early_stopping"] = "auto"
    params.update(SELECTED.get((task["dataset"], task["bagging"], method), {}))
    return {**params, **variant}


def select_laplacian(clf, X, bags, props):
    """``clf`` refitted with the ``LAPLACIAN_GRID`` value whose 3-fold
    held-out bags have the least hard L1 error; at least 6 bags."""
    n_bags = len(np.unique(bags))
    if n_bags < 6:
        raise ValueError(
            f"the held-out selection needs at least 6 bags; there are {n_bags}."
        )
    scoring = make_bag_scorer("hard_l1", bags=bags, props=props)
    grid = {"laplacian": list(LAPLACIAN_GRID)}
    search = GridSearchCV(clf, grid, scoring=scoring, cv=BagKFold(3))
    return search.fit(X, bags, props=props).best_estimator_


def decision_rule(params, n_classes, on_labels):
    """The rule ``predict`` applies (an estimator without ``threshold``: argmax)."""
    threshold = params.get("threshold", "argmax")
    if threshold == "auto":
        return "prior" if n_classes == 2 and not on_labels else "argmax"
    return threshold


def lr_schedule_callback(schedule, max_epochs):
    """The skorch callback of a schedule: ``"cosine"`` anneals to 0 over
    ``max_epochs``, ``"step"`` (the paper's) x0.2 at 80 %; None keeps the rate."""
    if schedule in (None, "none"):
        return None
    if schedule == "cosine":
        return LRScheduler(policy="CosineAnnealingLR", T_max=max_epochs)
    if schedule == "step":
        milestones = [int(0.8 * max_epochs)]
        return LRScheduler(policy="MultiStepLR", milestones=milestones, gamma=0.2)
    raise ValueError(f"unknown learning-rate schedule {schedule!r}")


def make_estimator(params, task):
    kwargs = {k: v for k, v in params.items() if k != "method"}
    if params["method"] == "meanmap":
        if kwargs["laplacian"] == "held-out":
            kwargs["laplacian"] = 0.0  # chosen by select_laplacian
        return MeanMapClassifier(**kwargs)
    del kwargs["optimizer"]
    schedule = lr_schedule_callback(kwargs.pop("lr_schedule"), params["max_epochs"])
    kwargs["module__hidden_sizes"] = tuple(kwargs["module__hidden_sizes"])
    if schedule is not None:
        kwargs["callbacks"] = [("lr_schedule", schedule)]
    return LLPClassifier(
        method=params["method"],
        random_state=task["seed"],
        verbose=0,
        n_threads=task["threads"],
        **kwargs,
    )


def binary_scores(clf, proba, pred, y_test):
    """F1, ROC AUC and the argmax labels' accuracy/F1 of two classes."""
    positive = clf.classes_[1]
    argmax = clf.classes_[proba.argmax(1)]
    return {
        "f1": float(f1_score(y_test, pred, pos_label=positive)),
        "roc_auc": float(roc_auc_score(y_test == positive, proba[:, 1])),
        "accuracy_argmax": float(accuracy_score(y_test, argmax)),
        "f1_argmax": float(f1_score(y_test, argmax, pos_label=positive)),
        "predicted_positive_rate": float(np.mean(pred == positive)),
    }


def run_task(task):
    """Train one model and score it on the test split; one record."""
    torch.set_num_threads(task["threads"])
    dataset, seed, max_train = task["dataset"], task["seed"], task["max_train"]
    method = base_method(task["method"])
    X_train, X_test, y_train, y_test = load_dataset(
        dataset, max_train, task["fashion_dir"]
    )
    params = hyperparameters(task)
    clf = make_estimator(params, task)
    record = {k: task[k] for k in ("dataset", "bagging", "method", "seed")}
    error = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if method == SUPERVISED:
            bag_info = {"generator": None, "n_bagged": int(len(X_train))}
            start = time.perf_counter()
            clf.fit(X_train, y_train)
        else:
            bags, props, bag_info = make_bags(
                dataset, max_train, task["fashion_dir"], task["bagging"], seed
            )
            keep = bags >= 0
            data = X_train[keep], bags[keep], props[keep]
            start = time.perf_counter()
            try:
                if params.get("laplacian") == "held-out":
                    clf = select_laplacian(clf, *data)
                else:
                    clf.fit(*data)
            except FitDivergedError as exc:  # recorded, not fatal
                error, status = f"{type(exc).__name__}: {exc}", "diverged"
            except ValueError as exc:
                # too few bags: LLPFC groups bags by class, the Laplacian
                # selection holds 3 folds out
                refusable = method == "llpfc" or task["method"] == "meanmap-laplacian"
                if not refusable or "needs at least" not in str(exc):
                    raise
                error, status = f"{type(exc).__name__}: {exc}", "refused"
        fit_seconds = time.perf_counter() - start
    fitted = error is None
    if fitted:
        proba, pred = clf.predict_proba(X_test), clf.predict(X_test)
        record["accuracy"] = float(accuracy_score(y_test, pred))
        if len(clf.classes_) == 2:
            record.update(binary_scores(clf, proba, pred, y_test))
    else:
        record.update(error=error, status=status)
    threshold = getattr(clf, "threshold_", None) if fitted else None
    meanmap, network = fitted and method == "meanmap", fitted and method != "meanmap"
    return record | dict(
        fit_seconds=round(fit_seconds, 2),
        epochs=params.get("max_epochs"),
        batch_size_=getattr(clf, "batch_size_", None),
        best_epoch_=getattr(clf, "best_epoch_", None),
        decision=decision_rule(params, len(np.unique(y_train)), method == SUPERVISED),
        threshold_=None if threshold is None else float(threshold),
        final_train_loss=float(clf.history[-1, "train_loss"]) if network else None,
        n_iter=int(np.ravel(clf.n_iter_)[0]) if meanmap else None,
        laplacian_=getattr(clf, "laplacian", None) if meanmap else None,
        fit_warnings=dict(Counter(w.category.__name__ for w in caught)),
        n_train=len(X_train),
        n_test=len(X_test),
        n_features=X_train.shape[1],
        max_train=max_train,
        bags=bag_info,
        hyperparameters=params,
        torch_threads=task["threads"],
        device="cuda" if torch.cuda.is_available() else "cpu",
    )


# --- bookkeeping ---
def identity(record):
    """What a run is: a record with the same identity supersedes another."""
    keys = ("dataset", "max_train", "bagging", "method", "seed")
    return tuple(record[k] for k in keys)


def settings_match(record, task):
    """Whether ``record`` (None: none) ran ``task``'s settings."""
    return record is not None and record["hyperparameters"] == hyperparameters(task)


BAGGING_ORDER = [bagging_name(b) for b in BAG_SIZES] + [SUPERVISED]


def _bagging_key(bagging):
    order = BAGGING_ORDER.index(bagging) if bagging in BAGGING_ORDER else 99
    return order, bagging


def sort_key(record):
    return (
        list(DATASET_LABELS).index(record["dataset"]),
        record["max_train"] or 0,
        *_bagging_key(record["bagging"]),
        METHODS.index(record["method"]),
        record["seed"],
    )


# --- the tables ---
METRIC_NAMES = {"accuracy": "accuracy", "f1": "F1", "roc_auc": "AUC"}


def _cell(values, failed=None):
    """``mean ± std`` in % ; ``failed``: Counter of failed runs by status."""
    failed = failed or {}
    note = "".join(f" ({n} {status})" for status, n in sorted(failed.items()))
    if not values:
        return " / ".join(sorted(failed)) if failed else "–"
    values = 100.0 * np.asarray(values, dtype=float)
    if len(values) == 1:
        return f"{values[0]:.1f} (1 seed){note}"
    return f"{values.mean():.1f} ± {values.std(ddof=1):.1f}{note}"


def _row(*cells):
    return "| " + " | ".join(map(str, cells)) + " |"


def _header(*cells):
    """A table's header row and its separator (a cell may hold several)."""
    row = _row(*cells)
    return [row, "|" + "---|" * (row.count("|") - 1)]


def _group(records):
    groups = {}
    for r in records:
        groups.setdefault((r["dataset"], r["n_train"]), []).append(r)
    return groups


def _select(recs, bagging, method, metric=None):
    """Records of one cell, or the metric values of those that have it."""
    cell = [r for r in recs if r["bagging"] == bagging and r["method"] == method]
    if metric is None:
        return cell
    return [r[metric] for r in cell if r.get(metric) is not None]


def _mean(values, fmt, empty="–"):
    return format(np.mean(values), fmt) if values else empty


def cell_means(recs, bagging, metric):
    """Mean ``metric`` of each LLP method with values in one cell; the
    table's bold mark is its largest."""
    return {
        m: np.mean(v) for m in LLP_METHODS if (v := _select(recs, bagging, m, metric))
    }


def _failed_cell(recs, bagging, method, metric):
    runs = _select(recs, bagging, method)
    failed = Counter(r.get("status", "failed") for r in runs if "error" in r)
    return _cell(_select(recs, bagging, method, metric), failed)


def _metrics(records):
    return list(METRIC_NAMES) if any("f1" in r for r in records) else ["accuracy"]


def _joined(values):
    return ", ".join(map(str, sorted(values)))


def _epochs_note(recs, bagging, methods):
    """Label suffix giving a row's epochs where they differ from the bound's."""
    base = {r["epochs"] for r in recs if r["method"] == SUPERVISED}
    epochs = {m: {r["epochs"] for r in _select(recs, bagging, m)} for m in methods}
    epochs = {m: e for m, e in epochs.items() if e and m in NETWORK_METHODS}
    if not base or all(e == base for e in epochs.values()):
        return ""
    usual = Counter(map(frozenset, epochs.values())).most_common(1)[0][0]
    others = [
        f"{METHOD_LABELS[m]} {_joined(e)}" for m, e in epochs.items() if e != usual
    ]
    return f" ({'; '.join([f'{_joined(usual)} epochs', *others])})"


def _baggings(recs):
    present = {r["bagging"] for r in recs if r["bagging"] != SUPERVISED}
    return sorted(present, key=_bagging_key)


def bagging_label(bagging, recs):
    if bagging is None:
        return "–"
    infos = [r["bags"] for r in recs if r["bagging"] == bagging]
    if bagging == "kmeans" and infos:
        n_bags = int(np.median([i["n_bags"] for i in infos]))
        low = min(i["bag_size_min"] for i in infos)
        high = max(i["bag_size_max"] for i in infos)
        return f"K-means ({n_bags} bags, {low}–{high} rows)"
    if bagging == "kmeans":
        return "K-means"
    if bagging.startswith("count-") and infos:
        return f"random, {infos[0]['n_bags']} bags of {infos[0]['bag_size']:,}"
    if bagging.startswith("count-"):
        return f"random, {bagging.split('-')[1]} bags"
    return f"random {bagging.split('-')[1]}"


def _metric_table(records, metric, title):
    header = ("data set", "bags", *METHOD_LABELS.values(), "supervised (same MLP)")
    lines = [title, "", *_header(*header)]
    for (dataset, n_train), recs in _group(records).items():
        sup = _select(recs, SUPERVISED, SUPERVISED, metric)
        for bagging in _baggings(recs) or ([None] if sup else []):
            means = cell_means(recs, bagging, metric)
            best = max(means, key=means.get) if len(means) > 1 else None
            cells = [_failed_cell(recs, bagging, m, metric) for m in LLP_METHODS]
            cells = [f"**{c}**" if m == best else c for m, c in zip(LLP_METHODS, cells)]
            label = bagging_label(bagging, recs)
            if bagging is not None:
                label += _epochs_note(recs, bagging, LLP_METHODS)
            name = f"{DATASET_LABELS[dataset]} ({n_train:,} train)"
            lines.append(_row(name, label, *cells, _cell(sup)))
    return lines


def _few_bags_table(records):
    """``count-N`` baggings: every metric per method, a column group each."""
    lines = []
    for (dataset, n_train), recs in _group(records).items():
        counts = [b for b in _baggings(recs) if b.startswith("count-")]
        if not counts:
            continue
        metrics = _metrics(recs)
        columns = [(b, m) for b in counts for m in metrics]
        header = [f"{bagging_label(b, recs)}: {METRIC_NAMES[m]}" for b, m in columns]
        lines += [
            f"## {DATASET_LABELS[dataset]} ({n_train:,} train) in few large bags (%)",
            "",
            *_header("method", *header, "fit s"),
        ]
        for method in LLP_METHODS:
            runs = [r for b in counts for r in _select(recs, b, method)]
            epochs = sorted({f"{r['epochs']}" for r in runs if r["epochs"] is not None})
            label = METHOD_LABELS[method]
            label += f" ({' / '.join(epochs)} epochs)" if epochs else ""
            cells = [_failed_cell(recs, b, method, m) for b, m in columns]
            seconds = _mean([r["fit_seconds"] for r in runs], ".1f")
            lines.append(_row(label, *cells, seconds))
        sup = [_cell(_select(recs, SUPERVISED, SUPERVISED, m)) for m in metrics]
        lines += [
            _row("supervised (same MLP, instance labels)", *sup * len(counts), "–"),
            "",
            "Each column group is one bagging: random bags of `n_train // N` rows "
            "(`UniformBagGenerator`, the left-over rows dropped). Runs before 57c80f7 "
            "(the committed cells, 2026-11-23/24) trained on at most 1,024 rows of a "
            "bag an epoch (`max_bag_size`), later ones on the whole bag, in chunks; 8 "
            "bags a step; epochs follow `training_for` (not piloted: so few bags "
            "leave none to hold out). Mean fit seconds over both baggings.",
            "",
        ]
    return lines


def _decision_table(records):
    """Binary data: accuracy and F1 of ``predict`` against argmax, same fits."""
    binary = [r for r in records if r.get("f1_argmax") is not None]
    if not binary:
        return []
    methods = [m for m in NETWORK_METHODS if any(r["method"] == m for r in binary)]
    labels = [METHOD_LABELS[m] for m in methods]
    lines = [
        "## Decision rule, two classes: `predict` (prior-matched) / argmax, same fits",
        "",
        "Accuracy and F1 (%) of the labels of `predict` (the prior-matched "
        'threshold of `threshold="auto"`) / of argmax of `predict_proba` '
        "(the rule before), means over seeds.",
        "",
        *_header(
            "data set", "bags", *[f"{m} {k}" for k in ("acc.", "F1") for m in labels]
        ),
    ]

    def pair(recs, bagging, method, metric):
        new = _select(recs, bagging, method, metric)
        old = _select(recs, bagging, method, f"{metric}_argmax")
        return f"{100 * np.mean(new):.1f} / {100 * np.mean(old):.1f}" if new else "–"

    for (dataset, _), recs in _group(binary).items():
        for b in _baggings(recs):
            cells = [pair(recs, b, m, k) for k in ("accuracy", "f1") for m in methods]
            lines.append(_row(DATASET_LABELS[dataset], bagging_label(b, recs), *cells))
    return lines + [""]


def _batches(records):
    return _joined({r["batch_size_"] for r in records if r.get("batch_size_")}) or "–"


def _laplacians(var, main):
    ordered = sorted(var, key=lambda r: r["seed"])
    return ", ".join(
        f"{r['laplacian_']:g}" if r.get("laplacian_") is not None else "refused"
        for r in ordered
    )


#: The variant tables: title, lead, the setting column and how to show it.
VARIANT_TABLES = {
    "batch": (
        "## Variants: the batch size",
        "A variant is its method with the parameters named changed, next to "
        'the main run of the same cell (`batch_size="auto"`).',
        "batch (variant / main)",
        lambda var, main: f"{_batches(var)} / {_batches(main)}",
    ),
    "laplacian": (
        "## Variant: the Laplacian Mean Map",
        "`MeanMapClassifier(laplacian=...)` with the smoothing chosen per run "
        f"from {', '.join(f'{v:g}' for v in LAPLACIAN_GRID)} by the hard L1 "
        "error of 3-fold held-out training bags (0 is Mean Map), next to Mean "
        "Map (main); fit seconds include the selection.",
        "laplacian chosen (per seed)",
        _laplacians,
    ),
}


def _variant_kind(method):
    return "laplacian" if base_method(method) == "meanmap" else "batch"


def _variants_table(records, kind):
    """Every variant of a kind next to its method's main run of the same cell."""
    kinds = [v for v in VARIANTS if _variant_kind(v) == kind]
    if not any(r["method"] in kinds for r in records):
        return []
    title, lead, column, setting = VARIANT_TABLES[kind]
    metrics = _metrics([r for r in records if r["method"] in kinds])
    names = [f"{n} variant | {n} main | Δ" for n in map(METRIC_NAMES.get, metrics)]
    lines = [
        title,
        "",
        lead + " % (mean ± std over seeds); Δ = main − variant, "
        "mean over seeds; fit seconds are means.",
        "",
        *_header(
            "data set", "bags", "variant", column, *names, "fit s (variant / main)"
        ),
    ]
    for (dataset, _), recs in _group(records).items():
        for bagging in _baggings(recs):
            for variant in kinds:
                if not (var := _select(recs, bagging, variant)):
                    continue
                method = base_method(variant)
                main = _select(recs, bagging, method)
                cells = []
                for m in metrics:
                    a = _select(recs, bagging, variant, m)
                    b = _select(recs, bagging, method, m)
                    delta = (
                        f"{100 * (np.mean(b) - np.mean(a)):+.1f}" if a and b else "–"
                    )
                    cells += [_cell(a), _cell(b), delta]
                label = bagging_label(bagging, recs) + _epochs_note(
                    recs, bagging, [method]
                )
                seconds = [
                    _mean([r["fit_seconds"] for r in x], ".0f") for x in (var, main)
                ]
                row = [DATASET_LABELS[dataset], label, VARIANTS[variant]["label"]]
                lines.append(
                    _row(*row, setting(var, main), *cells, " / ".join(seconds))
                )
    return lines + [""]


def _fit_time_table(records):
    present = {r["method"] for r in records}
    methods = [m for m in (*LLP_METHODS, SUPERVISED) if m in present]
    lines = [
        "## Fit time (s, mean over seeds)",
        "",
        *_header("data set", "bags", *[METHOD_LABELS.get(m, m) for m in methods]),
    ]
    for (dataset, _), recs in _group(records).items():
        for bagging in [*_baggings(recs), SUPERVISED]:
            times = [_select(recs, bagging, m, "fit_seconds") for m in methods]
            cells = [_mean(t, ".1f", "") for t in times]
            label = "labels" if bagging == SUPERVISED else bagging_label(bagging, recs)
            if any(cells):
                lines.append(_row(DATASET_LABELS[dataset], label, *cells))
    return lines + [""]


def _settings_table(records):
    lines = [
        "## Settings",
        "",
        *_header(
            "data set | train / test rows | features | seeds | epochs | lr | schedule",
            "batch used | hidden | VAT α / ε / ξ | Π α / noise | ROT α",
            "LLPFC regroup | EasyLLP loss | Mean Map C | mean fit time (s)",
        ),
    ]
    for (dataset, n_train), recs in _group(records).items():
        hps = [r["hyperparameters"] for r in recs]

        def values(*keys, method=None, hps=hps):
            """The values of ``keys`` in the runs of ``method`` (None: the networks)."""
            mine = [
                h
                for h in hps
                if h["method"] == method or not method and h["method"] != "meanmap"
            ]
            found = [{json.dumps(h[k]) for h in mine if k in h} for k in keys]
            return " / ".join(", ".join(sorted(f)) or "–" for f in found)

        lines.append(
            _row(
                DATASET_LABELS[dataset],
                f"{n_train:,} / {recs[0]['n_test']:,}",
                recs[0]["n_features"],
                _joined({r["seed"] for r in recs}),
                values("max_epochs"),
                values("lr"),
                values("lr_schedule"),
                f"{values('batch_size')}: {_batches(recs)}",
                values("module__hidden_sizes"),
                values(*(f"method__{k}" for k in ("alpha", "eps", "xi")), method="vat"),
                values("method__alpha", "method__noise_std", method="pi"),
                values("method__rot_alpha", method="rot"),
                values("method__regroup_every", method="llpfc"),
                values("method__loss", method="easyllp"),
                values("C", method="meanmap"),
                f"{np.mean([r['fit_seconds'] for r in recs]):.1f}",
            )
        )
    selected = [
        f"{DATASET_LABELS[d]} {b} {METHOD_LABELS[m]}: " + _settings(s)
        for (d, b, m), s in SELECTED.items()
    ] + [
        f"{DATASET_LABELS[d]} {b}, every network: " + _settings(s)
        for (d, b), s in SELECTED_TRAINING.items()
    ]
    return lines + [
        "",
        "Seeds are the `random_state` of the bags and of the model; the data "
        "split is fixed. K-means bags: `KMeansBagGenerator(n_train // "
        f"{KMEANS_MEAN_SIZE}, n_components={KMEANS_COMPONENTS})`. Fit times "
        'were measured on a machine shared with other jobs. `batch_size="auto"` '
        f"is {BASE_BATCH} rows, or {BAGS_PER_BATCH} median bags (capped at "
        "`max_bag_size`) for bags of 128 rows or more; random bags of at "
        f"least {BASE_BATCH} rows train `round(bag_size / {BASE_BATCH})` times the "
        "epochs. LLPFC, EasyLLP and Mean Map use the package defaults (no "
        "per-cell selection). Selected per cell by the held-out hard L1 of pilots "
        "(`benchmarks/studies/tune.py`, `results/tuning.md`): "
        + "; ".join(selected)
        + ".",
    ]


def _settings(settings):
    return ", ".join(f"{k} {v}" for k, v in settings.items())


def _machine():
    """The fields of ``machine_info`` the table shows (the records' format)."""
    info = machine_info()
    keys = ("cpu", "logical_cpus", "usable_cpus", "platform")
    return {**{k: info[k] for k in keys}, "cuda": info.get("gpu")}


def markdown(output):
    records, runs = output["records"], output["invocations"]
    machine = runs[-1]["machine"] if runs else _machine()
    threads = _joined({r["torch_threads"] for r in records}) or "?"
    epochs = [
        f"{DATASET_LABELS[d]} {_joined({r['epochs'] for r in recs} - {None})}"
        for (d, _), recs in _group(records).items()
    ]
    gpu = f", GPU {machine['cuda']}" if machine.get("cuda") else ", no GPU"
    lines = [
        "# LLP test accuracy (`benchmarks/accuracy.py`)",
        "",
        f"Machine: {machine['cpu']}, {machine['usable_cpus']} usable CPUs{gpu} "
        f"(torch {output['versions']['torch']}); torch threads per run: "
        f"{threads}; epochs: {'; '.join(epochs)}. {len(records)} runs, "
        f"{sum(r['wall_seconds'] for r in runs) / 60:.1f} min of wall time in "
        f"{len(runs)} invocation(s):",
        "",
    ]
    for run in runs:
        head = f", commit {run['git_head'][:7]}" if run.get("git_head") else ""
        status = "" if run.get("complete") else ", interrupted or running"
        lines.append(
            f"* `python benchmarks/accuracy.py {' '.join(run['argv'])}` "
            f"({run['n_runs']} runs, {run['jobs']} in parallel, "
            f"{run['wall_seconds'] / 60:.1f} min{head}{status})"
        )
    lines += [
        "",
        "Test accuracy in %, mean ± std over seeds (ddof=1; a single seed is "
        "marked). Bags are random (sizes 16, 64, 256; the left-over rows are "
        "dropped), K-means clusters of the training rows, or (Adult) few "
        "random bags; every LLP model sees only bags and their label "
        "proportions. Labels are those of `predict` (for `LLPClassifier` on "
        "two classes the prior-matched threshold). The supervised column is "
        "the same network trained on the instance labels. The best LLP "
        "method of each row is in bold. Mean Map is linear (logistic "
        "regression on estimated class means), the rest the same MLP.",
        "",
    ]
    main = [r for r in records if r["method"] not in VARIANTS]
    lines += _metric_table(main, "accuracy", "## Accuracy (%)")
    binary_sets = {r["dataset"] for r in main if "f1" in r}
    if binary_sets:
        binary = [r for r in main if r["dataset"] in binary_sets]
        lines += ["", *_metric_table(binary, "f1", "## F1 of the positive class (%)")]
        lines += ["", *_metric_table(binary, "roc_auc", "## ROC AUC (%)")]
    lines += ["", *_few_bags_table(main)]
    lines += _variants_table(records, "batch") + _variants_table(records, "laplacian")
    lines += _decision_table(main) + _fit_time_table(main) + _settings_table(records)
    return "\n".join(lines) + "\n"


# --- command line ---
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="digits, 600 rows, 10 epochs, seed 0")
    add("--datasets", nargs="+", choices=list(DATASET_LABELS), help="default: all")
    add("--bag-sizes", nargs="+", choices=BAG_SIZES, help="default: DEFAULT_BAG_SIZES")
    add("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    add("--seeds", nargs="+", type=int, help="default: 0 1 2 (0 with --quick)")
    add("--max-train", type=int, help="fixed stratified subsample of the training rows")
    add("--out", type=Path, default=RESULTS_DIR, help="default: %(default)s")
    add("--threads", type=int, default=1, help="torch threads per run")
    add("--jobs", type=int, default=1, help="runs in parallel processes")
    add("--resume", action="store_true", help="skip the runs --out's JSON has")
    add("--fashion-dir", type=Path, default=FASHION_DIR, help="its idx .gz files")
    add("--markdown-only", action="store_true", help="rewrite the .md from the JSON")
    add("--quiet", action="store_true", help="print only the table")
    args = parser.parse_args(argv)
    if args.datasets is None:
        args.datasets = ["digits"] if args.quick else list(DATASET_LABELS)
    if args.seeds is None:
        args.seeds = [0] if args.quick else [0, 1, 2]
    if args.quick and args.max_train is None:
        args.max_train = QUICK["max_train"]
    return args


def make_tasks(args):
    tasks, fashion_dir = [], str(args.fashion_dir)
    quick = {k: QUICK[k] for k in ("max_epochs", "hidden_sizes")} if args.quick else {}
    for dataset in args.datasets:
        training = TRAINING[dataset] | quick
        baggings = [
            bagging_name(b) for b in args.bag_sizes or DEFAULT_BAG_SIZES[dataset]
        ]
        n_train = None
        if any(b.startswith("count-") for b in baggings):
            n_train = len(load_dataset(dataset, args.max_train, fashion_dir)[0])
        runs = [
            (bagging, m)
            for bagging in baggings
            for m in args.methods
            if m != SUPERVISED and runs_on(m, dataset, bagging)
        ]
        if SUPERVISED in args.methods:
            runs.append((SUPERVISED, SUPERVISED))
        tasks += [
            dict(
                dataset=dataset,
                bagging=bagging,
                method=method,
                seed=seed,
                max_train=args.max_train,
                training=training_for(training, bagging, n_train)
                | SELECTED_TRAINING.get((dataset, bagging), {}),
                threads=args.threads,
                fashion_dir=fashion_dir,
            )
            for seed in args.seeds
            for bagging, method in runs
        ]
    return tasks


def _pool_init():
    torch.set_num_threads(1)  # workers of a spawned pool


def main(argv=None):
    """Run the benchmark; return the output that was written as JSON."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    log = (lambda message: None) if args.quiet else print
    args.out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = args.out / f"{STEM}.json", args.out / f"{STEM}.md"
    if args.markdown_only:
        output = json.loads(json_path.read_text())
        md_path.write_text(markdown(output))
        log(md_path.read_text())
        return output
    output = {
        "description": "Test accuracy of LLPClassifier methods and MeanMapClassifier "
        "trained on bags and label proportions only, and of the same network "
        "trained on instance labels (method 'supervised', bagging 'supervised'); "
        "one record per run. Written by benchmarks/accuracy.py.",
        "invocations": [],
        "versions": versions(),
        "records": [],
    }
    if args.resume and json_path.exists():
        previous = json.loads(json_path.read_text())
        output["invocations"] = previous.get("invocations", [])
        output["records"] = list(previous.get("records", []))
    if "fashion" in args.datasets:
        ensure_fashion(args.fashion_dir)
    tasks = make_tasks(args)
    done = {identity(r): r for r in output["records"]}
    todo = [t for t in tasks if not settings_match(done.get(identity(t)), t)]
    invocation = {
        "argv": list(sys.argv[1:] if argv is None else argv),
        "started": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": _machine(),
        "git_head": git_head(),
        "torch_threads": args.threads,
        "jobs": args.jobs,
        "n_runs": len(todo),
        "wall_seconds": 0.0,
        "complete": False,
    }
    output["invocations"].append(invocation)
    log(f"{len(tasks)} runs planned, {len(tasks) - len(todo)} already done")
    start = time.perf_counter()

    def save(record=None):
        if record is not None:
            kept = [r for r in output["records"] if identity(r) != identity(record)]
            output["records"] = [*kept, record]
        output["records"].sort(key=sort_key)
        invocation["wall_seconds"] = round(time.perf_counter() - start, 1)
        write_results(STEM, output, markdown(output), args.out)

    def report(i, r):
        result = r.get("error") or f"acc {r['accuracy']:.4f}"
        log(
            f"[{i}/{len(todo)} {time.perf_counter() - start:6.0f}s] {r['dataset']:<8} "
            f"{r['bagging']:<11} {r['method']:<13} seed {r['seed']} {result} "
            f"({r['fit_seconds']:.1f}s)"
        )

    save()
    parallel = args.jobs > 1 and len(todo) > 1
    spawn = multiprocessing.get_context("spawn")
    with spawn.Pool(args.jobs, _pool_init) if parallel else nullcontext() as pool:
        records = (
            pool.imap_unordered(run_task, todo) if parallel else map(run_task, todo)
        )
        for i, record in enumerate(records, 1):
            save(record)
            report(i, record)
    invocation["complete"] = True
    save()
    log(md_path.read_text())
    print(
        f"{len(todo)} runs in {invocation['wall_seconds']:.0f} s; results in {args.out}"
    )
    return output


if __name__ == "__main__":
    main()
