"""Label-free decision rules: argmax against prior matching, same fits.

Every fit is scored with both rules (``threshold`` only changes how
probabilities become labels). Settings and results: ``benchmarks/README.md``,
section ``studies/threshold.py``.
Usage: ``python benchmarks/studies/threshold.py [--quick] [--out DIR]``.
"""

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    f1_score,
    roc_auc_score,
)
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp._decision import class_prior, decide, fit_decision
from sklearn_llp.bags import FeatureBagGenerator, UniformBagGenerator
from sklearn_llp.datasets import load_adult
from sklearn_llp.utils import check_bags

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import adult_encoder  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


def adult(target, seed, quick):
    X, y = load_adult(return_X_y=True)
    y = (y == ">50K").to_numpy()
    if target == "rare":
        y = y & (X["age"] < 35).to_numpy()
    n_train = 5000 if quick else None
    X_train, X_test, y_train, y_test = train_test_split(
        X, y.astype(int), train_size=n_train or 0.7, test_size=0.3, random_state=seed
    )
    prep = adult_encoder(min_frequency=20)
    return (
        X_train,
        prep.fit_transform(X_train).astype(np.float32),
        prep.transform(X_test).astype(np.float32),
        y_train,
        y_test,
    )


def make_bags(kind, frame, features, y, seed):
    if kind == "groups":
        gen = FeatureBagGenerator(["age", "sex", "education"], n_bins={"age": 6})
        return gen.make_bags(frame, y)
    if kind == "rare-groups":
        return FeatureBagGenerator(["education", "sex", "race"]).make_bags(frame, y)
    size = int(kind.split("-")[1])
    return UniformBagGenerator(size, random_state=seed).make_bags(features, y)


def scores(y_true, proba, rule, binary):
    offsets, threshold = rule
    pred = decide(proba, offsets, threshold)
    out = {
        "accuracy": accuracy_score(y_true, pred),
        "balanced_accuracy": balanced_accuracy_score(y_true, pred),
    }
    if binary:
        out["f1"] = f1_score(y_true, pred, zero_division=0.0)
        out["positive_rate"] = float(pred.mean())
    return out


def run(setting, seed, quick, epochs):
    dataset, kind = setting
    torch.manual_seed(seed)
    if dataset == "digits":
        X, y = load_digits(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, random_state=seed, stratify=y
        )
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
        frame = None
    else:
        frame, X_train, X_test, y_train, y_test = adult(dataset, seed, quick)
    bags, props = make_bags(kind, frame, X_train, y_train, seed)
    keep = bags >= 0
    clf = LLPClassifier(max_epochs=epochs, verbose=0, random_state=seed)
    tic = time.perf_counter()
    clf.fit(X_train[keep], bags[keep], props[keep])
    fit_seconds = time.perf_counter() - tic
    checked = check_bags(bags[keep], props[keep])
    train_proba = clf.predict_proba(X_train[keep])
    prior = class_prior(checked)
    test_proba = clf.predict_proba(X_test)
    binary = test_proba.shape[1] == 2
    # the library's exact rules (a threshold for two classes)
    rules = {
        "argmax": fit_decision("argmax", train_proba),
        "prior": fit_decision("prior", train_proba, prior),
    }
    record = {
        "dataset": dataset,
        "bags": kind,
        "seed": seed,
        "n_bags": int(checked.n_bags),
        "n_train": int(keep.sum()),
        "positive_rate_train": float(prior[1]) if binary else None,
        "fit_seconds": fit_seconds,
        "default_rule": clf._decision_rule(),
        "rules": {
            name: scores(y_test, test_proba, rule, binary)
            for name, rule in rules.items()
        },
    }
    if binary:
        record["auc"] = roc_auc_score(y_test, test_proba[:, 1])
    return record


def summarise(records):
    lines = [
        "| data | bags | n bags | AUC | rule | accuracy | balanced acc. | F1 "
        "| predicted positive rate |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    groups = {}
    for r in records:
        groups.setdefault((r["dataset"], r["bags"]), []).append(r)

    def cell(values):
        values = np.array([v for v in values if v is not None], dtype=float)
        if not len(values):
            return "–"
        return f"{values.mean():.3f} ± {values.std():.3f}"

    for (dataset, kind), recs in groups.items():
        for rule in ("argmax", "prior"):
            rows = [r["rules"][rule] for r in recs]
            lines.append(
                f"| {dataset} | {kind} | {recs[0]['n_bags']} "
                f"| {cell(r.get('auc') for r in recs)} | {rule} "
                f"| {cell(x['accuracy'] for x in rows)} "
                f"| {cell(x['balanced_accuracy'] for x in rows)} "
                f"| {cell(x.get('f1') for x in rows)} "
                f"| {cell(x.get('positive_rate') for x in rows)} |"
            )
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(RESULTS_DIR))
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    settings = [
        ("adult", "groups"),
        ("adult", "random-64"),
        ("adult", "random-256"),
        ("rare", "rare-groups"),
        ("rare", "random-64"),
        ("digits", "random-16"),
        ("digits", "random-64"),
    ]
    seeds = [0] if args.quick else [0, 1, 2]
    records = []
    tic = time.perf_counter()
    for setting in settings:
        for seed in seeds:
            epochs = 3 if args.quick else (100 if setting[0] == "digits" else 30)
            records.append(run(setting, seed, args.quick, epochs))
            print(json.dumps(records[-1]), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = summarise(records)
    meta = {
        "quick": args.quick,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "threads": torch.get_num_threads(),
        "wall_seconds": time.perf_counter() - tic,
    }
    (out / "threshold.json").write_text(
        json.dumps({"meta": meta, "records": records}, indent=1)
    )
    (out / "threshold.md").write_text(
        "# Decision rules: argmax vs prior matching (same fits)\n\n"
        "Written by `benchmarks/studies/threshold.py`; mean ± std over seeds of test "
        "metrics. AUC does not depend on the rule.\n\n" + table + "\n"
    )
    print(table)
    return records


if __name__ == "__main__":
    main()
