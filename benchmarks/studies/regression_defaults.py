"""LLPRegressor() at its defaults against a plain bag-mean loop (issue 34).

Across groupings (random bags of 16 and 64, K-means bags of ~64, 30 random
bags of 32) and two offline targets (Adult's weekly hours; Friedman #1, a
nonlinear synthetic target): the defaults, the same without early stopping,
the interpolating loss at ``lam = c / k`` (c = 1/4, 1, 4), the plain loop
(same MLP, same epochs, same rows a step), ridge on bag means and the MLP on
instance targets. ``python benchmarks/studies/regression_defaults.py
[--seeds 0 1 2] [--jobs 2]`` writes ``results/regression_defaults.{json,md}``.
``--curves`` records instead, per epoch, the held-out ``valid_mse`` and the
test R^2 of fits without stopping (10 % held out, 100 epochs) and replays
early stopping's rules on them (``results/regression_defaults_curves.*``).
"""

import argparse
import json
import platform
import sys
import time
from multiprocessing import Pool
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import make_friedman1
from sklearn.metrics import r2_score
from skorch.callbacks import Callback
from skorch.history import History

from sklearn_llp import LLPRegressor
from sklearn_llp.neural._callbacks import BagEarlyStopping, lowest_window_epoch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import RESULTS_DIR, write_results  # noqa: E402
from regression import bag_means, ecological, load, make_bags, plain_loop  # noqa: E402

LABELS = {
    "default": "LLPRegressor() (defaults)",
    "no-early-stopping": "LLPRegressor(early_stopping=False)",
    "interp-0.25/k": 'method="interpolating" (lam="auto" = 1/(4k))',
    "interp-1/k": 'method="interpolating", lam=1/k',
    "interp-4/k": 'method="interpolating", lam=4/k',
    "plain-loop": "plain bag-mean PyTorch loop (same MLP, epochs)",
    "ecological": "ridge on bag means (ecological)",
    "instance": "same MLP on instance targets (bound)",
}
GROUPINGS = {
    "16": "random 16",
    "64": "random 64",
    "kmeans": "K-means ~64",
    "few": "30 bags of 32",
}
DATASETS = ("adult", "friedman")


def data(dataset, seed, n_train=8000):
    if dataset == "adult":
        return load(n_train, seed)
    X, y = make_friedman1(n_train + 3000, n_features=10, noise=1.0, random_state=seed)
    X = ((X - 0.5) / np.sqrt(1 / 12)).astype(np.float32)
    return X[:n_train], X[n_train:], y[:n_train], y[n_train:]


def grouping(name, X, y, seed):
    if name == "few":  # small data: 30 random bags of 32
        X, y = X[:960], y[:960]
        name = "32"
    return X, y, make_bags(name, X, seed)


def fit_predict(estimator, X, bags, targets, y, seed):
    kw = {"random_state": seed, "verbose": 0, "n_threads": 1}
    if estimator == "ecological":
        return ecological(X, bags, targets), None
    if estimator == "plain-loop":
        ref = LLPRegressor(**kw).set_params(max_epochs=0).fit(X, bags, targets)
        return plain_loop(
            X,
            bags,
            targets,
            LLPRegressor().max_epochs,
            rows_per_step=ref.batch_size_,
            seed=seed,
        ), None
    if estimator == "instance":
        model = LLPRegressor(**kw).fit(X, y)
        return model.predict, model
    if estimator.startswith("interp"):
        k = len(bags) / len(np.unique(bags))
        c = float(estimator.split("-")[1].split("/")[0])
        kw |= {"method": "interpolating", "method__lam": c / k}
    if estimator == "no-early-stopping":
        kw["early_stopping"] = False
    model = LLPRegressor(**kw).fit(X, bags, targets)
    return model.predict, model


def one_task(task):
    dataset, seed, groupings, estimators = task
    torch.set_num_threads(1)
    records = []
    X_all, X_test, y_all, y_test = data(dataset, seed)
    for name in groupings:
        X, y, bags = grouping(name, X_all, y_all, seed)
        codes, _, means = bag_means(bags, y)
        for estimator in estimators:
            tic = time.time()
            predict, model = fit_predict(estimator, X, bags, means[codes], y, seed)
            records.append(
                dict(
                    dataset=dataset,
                    grouping=name,
                    seed=seed,
                    estimator=estimator,
                    r2=float(r2_score(y_test, predict(X_test))),
                    fit_s=round(time.time() - tic, 2),
                    n_bags=int(len(np.unique(bags))),
                    epochs_run=None if model is None else len(model.history),
                )
            )
            print(records[-1], flush=True)
    return records


class _TestR2(Callback):
    def __init__(self, X, y):
        self.X, self.y = X, y

    def on_epoch_end(self, net, **kwargs):
        net.history.record("test_r2", float(r2_score(self.y, net.predict(self.X))))


def curve_task(task):
    """Held-out and test curves of a fit without stopping."""
    dataset, seed, groupings = task
    torch.set_num_threads(1)
    X_all, X_test, y_all, y_test = data(dataset, seed)
    records = []
    for name in groupings:
        X, y, bags = grouping(name, X_all, y_all, seed)
        codes, _, means = bag_means(bags, y)
        model = LLPRegressor(
            random_state=seed,
            verbose=0,
            n_threads=1,
            early_stopping=False,
            validation_fraction=0.1,
            callbacks=[("test_r2", _TestR2(X_test, y_test))],
        ).fit(X, bags, means[codes])
        records.append(
            dict(
                dataset=dataset,
                grouping=name,
                seed=seed,
                valid_mse=model.history[:, "valid_mse"],
                test_r2=model.history[:, "test_r2"],
            )
        )
        print(dataset, name, seed, flush=True)
    return records


class _Replay:
    """What BagEarlyStopping reads of a net, to replay a recorded curve."""

    _stopping_metric = "mse"
    verbose = 0
    do_early_stopping_ = True

    def __init__(self, noise, patience=10):
        self._stopping_noise, self.n_iter_no_change = noise, patience
        self.history = History()
        self.module_ = torch.nn.Linear(1, 1)


def replay(curve, noise):
    """(epochs run, epoch kept) of BagEarlyStopping on a held-out curve."""
    net, callback = _Replay(noise), BagEarlyStopping()
    callback.on_train_begin(net)
    for epoch, value in enumerate(curve, 1):
        net.history.new_epoch()
        net.history.record("epoch", epoch)
        net.history.record("valid_mse", value)
        net.history.record(
            "valid_mse_best", value < min(curve[: epoch - 1] or [np.inf])
        )
        try:
            callback.on_epoch_end(net)
        except KeyboardInterrupt:
            break
    callback.on_train_end(net)
    return len(net.history), net.best_epoch_


def _refit_pick(curve):
    """The epochs LLPRegressor's "auto" ends with: the kept epoch of a stop,
    else the refit's count (lowest_window_epoch)."""
    ran, kept = replay(curve, 3.0)
    return kept if ran < len(curve) else lowest_window_epoch(curve)


RULES = {"patience 10 (classifier's)": None} | {f"noise z = {z}": z for z in (1, 2, 3)}


def curves_markdown(report):
    lines = [
        "# Early stopping's rules replayed on held-out curves "
        "(`benchmarks/studies/regression_defaults.py --curves`)",
        "",
        "Fits without stopping (10 % of the bags held out, 100 epochs, defaults "
        "otherwise); each rule replayed on the recorded `valid_mse` "
        "(BagEarlyStopping, patience 10). Cell: mean test R² of the epoch it "
        "keeps (on 90 % of the bags, before any refit), and the epochs kept; "
        "the window column is what LLPRegressor() ends with: a stop's epoch, "
        "else the refit's count. Seeds "
        f"{report['seeds']}; {report['machine']}.",
        "",
        "| cell | "
        + " | ".join(RULES)
        + " | z = 3, a full run: 5-epoch window | epoch 100 | best epoch (oracle) |",
        "|---|" + "---|" * (len(RULES) + 3),
    ]
    recs = report["records"]
    for cell in dict.fromkeys((r["dataset"], r["grouping"]) for r in recs):
        mine = [r for r in recs if (r["dataset"], r["grouping"]) == cell]
        row = [f"{cell[0]}, {GROUPINGS[cell[1]]}"]
        for noise in RULES.values():
            kept = [replay(r["valid_mse"], noise)[1] for r in mine]
            r2 = np.mean([r["test_r2"][k - 1] for r, k in zip(mine, kept)])
            row.append(f"{r2:.3f} ({'/'.join(map(str, kept))})")
        picked = [_refit_pick(r["valid_mse"]) for r in mine]
        r2 = np.mean([r["test_r2"][k - 1] for r, k in zip(mine, picked)])
        row.append(f"{r2:.3f} ({'/'.join(map(str, picked))})")
        row.append(f"{np.mean([r['test_r2'][-1] for r in mine]):.3f}")
        row.append(f"{np.mean([max(r['test_r2']) for r in mine]):.3f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def _processes(jobs):
    return f"{jobs} process" + ("es" if jobs > 1 else "")


def markdown(report):
    recs = report["records"]
    lines = [
        "# LLPRegressor() defaults against a plain loop "
        "(`benchmarks/studies/regression_defaults.py`)",
        "",
        "Test R² on held-out rows' own targets, mean ± std over seeds "
        f"{report['seeds']}; "
        f"Adult's weekly hours (8,000 training people) and Friedman #1 (8,000 rows, "
        f"noise 1); {report['machine']}; {report['wall_s'] / 60:.1f} min in all "
        f"({_processes(report.get('jobs', 2))}). Δ: defaults minus plain loop.",
    ]
    for update in report.get("updates", []):
        rows = ", ".join(LABELS[e] for e in update["estimators"])
        cells = ", ".join(GROUPINGS[g] for g in update["groupings"])
        why = f", {update['why']}" if update.get("why") else ""
        if "datasets" in update:
            cells = f"{', '.join(update['datasets'])}: {cells}"
        lines += ["", f"Rerun with a later library ({cells}{why}): {rows}."]
    shown = [g for g in GROUPINGS if any(r["grouping"] == g for r in recs)]
    for dataset in DATASETS:
        lines += [
            "",
            f"## {dataset}",
            "",
            "| estimator | " + " | ".join(GROUPINGS[g] for g in shown) + " |",
            "|---|" + "---|" * len(shown),
        ]
        cell = {}
        for est in [e for e in LABELS if any(r["estimator"] == e for r in recs)]:
            row = [LABELS[est]]
            for g in shown:
                v = [
                    r["r2"]
                    for r in recs
                    if (r["dataset"], r["grouping"], r["estimator"])
                    == (dataset, g, est)
                ]
                cell[est, g] = np.mean(v)
                row.append(
                    f"{np.mean(v):.3f} ± {np.std(v, ddof=1) if len(v) > 1 else 0:.3f}"
                )
            lines.append("| " + " | ".join(row) + " |")
        lines.append(
            "| **Δ defaults − plain loop** | "
            + " | ".join(
                f"{cell['default', g] - cell['plain-loop', g]:+.3f}" for g in shown
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--groupings", nargs="+", default=list(GROUPINGS))
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--estimators", nargs="+", default=list(LABELS))
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    add = parser.add_argument
    add("--update", action="store_true", help="replace these records in the JSON")
    add("--why", default=None, help="with --update: what changed, for the .md")
    add("--markdown-only", action="store_true", help="the .md from the JSON")
    add("--curves", action="store_true", help="replay the stopping rules")
    args = parser.parse_args(argv)
    if args.curves:
        return curves(args)
    path = args.out / "regression_defaults.json"
    if args.markdown_only:
        report = json.loads(path.read_text())
        return (args.out / "regression_defaults.md").write_text(markdown(report))
    started = time.time()
    tasks = [
        (d, s, args.groupings, args.estimators)
        for s in args.seeds
        for d in args.datasets
    ]
    with Pool(args.jobs) as pool:
        records = [r for part in pool.map(one_task, tasks) for r in part]
    report = {
        "machine": f"{platform.machine()}, torch {torch.__version__}, "
        "1 thread a process",
        "seeds": args.seeds,
        "jobs": args.jobs,
        "wall_s": round(time.time() - started, 1),
        "records": records,
    }
    if args.update:  # e.g. rerun after a change of defaults
        old = json.loads(path.read_text())
        key = lambda r: (r["dataset"], r["grouping"], r["seed"], r["estimator"])  # noqa: E731
        new = {key(r): r for r in records}
        old["records"] = [new.pop(key(r), r) for r in old["records"]] + list(
            new.values()
        )
        old["wall_s"] = round(old["wall_s"] + report["wall_s"], 1)
        old.setdefault("updates", []).append(
            {"groupings": args.groupings, "estimators": args.estimators}
            | ({"datasets": args.datasets} if args.datasets != list(DATASETS) else {})
            | ({"why": args.why} if args.why else {})
        )
        report = old
    write_results("regression_defaults", report, markdown(report), args.out)
    print(markdown(report))


def curves(args):
    path = args.out / "regression_defaults_curves.json"
    if args.markdown_only:
        report = json.loads(path.read_text())
    else:
        started = time.time()
        tasks = [
            (d, s, [g for g in args.groupings if g != "few"])
            for s in args.seeds
            for d in DATASETS
        ]
        with Pool(args.jobs) as pool:
            records = [r for part in pool.map(curve_task, tasks) for r in part]
        report = {
            "machine": f"{platform.machine()}, torch {torch.__version__}",
            "seeds": args.seeds,
            "wall_s": round(time.time() - started, 1),
            "records": records,
        }
    write_results(
        "regression_defaults_curves", report, curves_markdown(report), args.out
    )
    print(curves_markdown(report))


if __name__ == "__main__":
    main()
