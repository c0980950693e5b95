"""Label-free decision rules: argmax against prior matching, same fits
(``threshold`` only changes how probabilities become labels). Settings and
results: ``benchmarks/README.md``. Usage: ``python benchmarks/studies/threshold.py
[--quick] [--out DIR] [--markdown-only]``."""

import argparse
import json
import platform
import sys
import time
from itertools import groupby
from pathlib import Path

import numpy as np
import torch
from sklearn import metrics
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import FeatureBagGenerator, UniformBagGenerator
from sklearn_llp.core import check_bags, class_prior, decide, fit_decision
from sklearn_llp.datasets import load_adult

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import RESULTS_DIR, adult_encoder, write_results  # noqa: E402

#: data -> its bags; "rare" is >50K and age < 35
SETTINGS = {
    "adult": ("groups", "random-64", "random-256"),
    "rare": ("rare-groups", "random-64"),
    "digits": ("random-16", "random-64"),
}
#: test metrics of a rule (the last two for two classes only)
COLUMNS = ("accuracy", "balanced_accuracy", "f1", "positive_rate")


def load(dataset, seed, quick):
    """Raw training frame (Adult), features, labels; split 70/30 per seed."""
    if dataset == "digits":
        X, y = load_digits(return_X_y=True)
        X_train, X_test, y_train, y_test = train_test_split(
            X, y, test_size=0.3, random_state=seed, stratify=y
        )
        scaler = StandardScaler().fit(X_train)
        X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
        return None, X_train, X_test, y_train, y_test
    X, y = load_adult(return_X_y=True)
    y = (y == ">50K").to_numpy()
    if dataset == "rare":
        y = y & (X["age"] < 35).to_numpy()
    n_train = 5000 if quick else 0.7
    X_train, X_test, y_train, y_test = train_test_split(
        X, y.astype(int), train_size=n_train, test_size=0.3, random_state=seed
    )
    prep = adult_encoder(min_frequency=20)
    features = prep.fit_transform(X_train).astype(np.float32)
    return X_train, features, prep.transform(X_test).astype(np.float32), y_train, y_test


def make_bags(kind, frame, features, y, seed):
    if kind == "groups":
        gen = FeatureBagGenerator(["age", "sex", "education"], n_bins={"age": 6})
        return gen.make_bags(frame, y)
    if kind == "rare-groups":
        return FeatureBagGenerator(["education", "sex", "race"]).make_bags(frame, y)
    size = int(kind.split("-")[1])
    return UniformBagGenerator(size, random_state=seed).make_bags(features, y)


def scores(y_true, proba, rule):
    pred = decide(proba, *rule)  # rule: class offsets, threshold
    out = {
        "accuracy": metrics.accuracy_score(y_true, pred),
        "balanced_accuracy": metrics.balanced_accuracy_score(y_true, pred),
    }
    if proba.shape[1] == 2:
        out["f1"] = metrics.f1_score(y_true, pred, zero_division=0.0)
        out["positive_rate"] = float(pred.mean())
    return out


def run(dataset, kind, seed, quick, epochs):
    torch.manual_seed(seed)
    frame, X_train, X_test, y_train, y_test = load(dataset, seed, quick)
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
        "rules": {name: scores(y_test, test_proba, r) for name, r in rules.items()},
    }
    if binary:
        record["auc"] = metrics.roc_auc_score(y_test, test_proba[:, 1])
    return record


def markdown(records):
    """Mean ± std over seeds (population std), one line per setting and rule."""

    def cell(values):
        values = np.array([v for v in values if v is not None], dtype=float)
        return f"{values.mean():.3f} ± {values.std():.3f}" if len(values) else "–"

    lines = [
        "# Decision rules: argmax vs prior matching (same fits)",
        "",
        "Written by `benchmarks/studies/threshold.py`; mean ± std over seeds of test "
        "metrics. AUC does not depend on the rule.",
        "",
        "| data | bags | n bags | AUC | rule | accuracy | balanced acc. | F1 "
        "| predicted positive rate |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (dataset, kind), recs in groupby(records, lambda r: (r["dataset"], r["bags"])):
        recs = list(recs)
        for rule in ("argmax", "prior"):
            rows = [r["rules"][rule] for r in recs]
            cells = [cell(x.get(m) for x in rows) for m in COLUMNS]
            lines.append(
                f"| {dataset} | {kind} | {recs[0]['n_bags']} "
                f"| {cell(r.get('auc') for r in recs)} | {rule} | "
                + " | ".join(cells)
                + " |"
            )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default=str(RESULTS_DIR))
    parser.add_argument(
        "--markdown-only", action="store_true", help="threshold.md from the JSON"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.markdown_only:
        records = json.loads((out / "threshold.json").read_text())["records"]
        (out / "threshold.md").write_text(markdown(records))
        return records
    torch.set_num_threads(1)
    records, tic = [], time.perf_counter()
    for dataset, kind in [(d, k) for d, kinds in SETTINGS.items() for k in kinds]:
        for seed in [0] if args.quick else [0, 1, 2]:
            epochs = 3 if args.quick else (100 if dataset == "digits" else 30)
            records.append(run(dataset, kind, seed, args.quick, epochs))
            print(json.dumps(records[-1]), flush=True)
    meta = {
        "quick": args.quick,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "threads": torch.get_num_threads(),
        "wall_seconds": time.perf_counter() - tic,
    }
    text = markdown(records)
    write_results("threshold", {"meta": meta, "records": records}, text, out)
    print(text)
    return records


if __name__ == "__main__":
    main()
