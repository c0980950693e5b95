"""A study of named configurations (``LLPClassifier`` parameters away from the
defaults) on cells of ``default_method.py``: one JSON line per fit, resumable,
and a markdown table of the mean test accuracy (/ F1 for two classes).
``mixbag.py`` and ``levers.py`` are such studies."""

import argparse
import functools
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.core._decision import decide
from sklearn_llp.core._errors import decision_of

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import RESULTS_DIR, machine_info  # noqa: E402
from default_method import _read, by_cell, cell_data, column_cells  # noqa: E402


def run(cell, config, seed, params, estimator=LLPClassifier, data=cell_data):
    """Fit ``estimator(**params)`` on the bags ``data(cell, seed)`` gives."""
    torch.set_num_threads(1)
    X, bags, props, X_test, y_test = data(cell, seed)
    clf = estimator(random_state=seed, verbose=0, n_threads=1, **params)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, bags, props)
    pred = clf.predict(X_test)
    record = {
        "cell": cell,
        "config": config,
        "seed": seed,
        "trained": type(clf.method_).__name__,
        "steps": int(clf.n_train_steps_),
        "batch_size": int(clf.batch_size_),
        "epochs": len(clf.history),
        "fit_s": round(time.perf_counter() - start, 1),
        "n_bags": check_bags(bags, props, n_samples=len(X)).n_bags,
        "accuracy": float(accuracy_score(y_test, pred)),
    }
    proba = clf.predict_proba(X_test)
    if len(clf.classes_) == 2:
        positive = y_test == clf.classes_[1]
        record["f1"] = float(f1_score(y_test, pred, pos_label=clf.classes_[1]))
        record["auc"] = float(roc_auc_score(positive, proba[:, 1]))
        record.update(best_threshold_scores(positive, proba[:, 1]))
    else:  # the other rule on the same network: argmax <-> prior matching
        record.update(both_rules(clf, X, bags, props, proba, y_test))
    return record


def both_rules(clf, X, bags, props, proba, y_test):
    """Test accuracy of many classes (test probabilities ``proba``) at argmax
    and at prior matching fitted on the training bags."""
    offsets, threshold = decision_of(
        check_bags(bags, props), clf.predict_proba(X), "prior"
    )
    rules = {"argmax": proba.argmax(1), "prior": decide(proba, offsets, threshold)}
    return {
        f"accuracy_{rule}": float(np.mean(clf.classes_[pred] == y_test))
        for rule, pred in rules.items()
    }


def best_threshold_scores(positive, score):
    """Accuracy and F1 at the best threshold of ``score`` chosen with the
    test labels: the ceiling of any decision rule on this ranking."""
    order = np.argsort(-score, kind="stable")
    hits = np.cumsum(positive[order])  # true positives of the top k
    k = np.arange(1, len(score) + 1)
    n_pos = hits[-1]
    correct = hits + (len(score) - n_pos) - (k - hits)
    return {
        "best_threshold_accuracy": float(
            max(correct.max(), len(score) - n_pos) / len(score)
        ),
        "best_threshold_f1": float((2 * hits / (k + n_pos)).max()),
    }


def summary(runs):
    """Fits of one row: their mean scores in % (accuracy / F1 / ROC AUC, as
    recorded), their steps a fit and their seeds."""
    runs = sorted(runs, key=lambda r: r["seed"])
    keys = [k for k in ("accuracy", "f1", "auc") if k in runs[0]]
    means = [100 * np.mean([r[k] for r in runs]) for k in keys]
    return (
        " / ".join(f"{mean:.1f}" for mean in means),
        "/".join(map(str, sorted({r["steps"] for r in runs}))),
        ",".join(str(r["seed"]) for r in runs),
    )


def _config_cell(config, runs, seeds):
    """Mean accuracy (/ F1 and its range), and the seeds if fewer than the row's."""
    acc = np.mean([100 * r["accuracy"] for r in runs])
    text = f"{acc:.1f}"
    if "f1" in runs[0]:
        f1 = [100 * r["f1"] for r in runs]
        text += f" / {np.mean(f1):.1f} [{min(f1):.0f}–{max(f1):.0f}]"
    own = sorted(r["seed"] for r in runs)
    if own != seeds:
        text += f" (seeds {','.join(map(str, own))})"
    return text


def markdown(records, cells, configs, heading):
    """One row per cell, one column per configuration; then the steps."""
    configs = [c for c in configs if any(r["config"] == c for r in records)]
    lines = [
        *heading,
        "",
        "| cell | seeds | " + " | ".join(configs) + " |",
        "|---|---|" + "---|" * len(configs),
    ]
    for cell, rows in by_cell(records, cells):
        seeds = sorted({r["seed"] for r in rows})
        text = functools.partial(_config_cell, seeds=seeds)
        cells_ = column_cells(rows, "config", configs, text)
        lines.append(
            f"| {cell} | {','.join(map(str, seeds))} | " + " | ".join(cells_) + " |"
        )
    lines += ["", "Optimizer steps of a fit:", ""]
    lines += ["| cell | " + " | ".join(configs) + " |", "|---|" + "---|" * len(configs)]
    for cell, rows in by_cell(records, cells):
        steps = [
            sorted({r["steps"] for r in rows if r["config"] == c}) for c in configs
        ]
        if any(steps):
            text = ["/".join(map(str, s)) or "–" for s in steps]
            lines.append(f"| {cell} | " + " | ".join(text) + " |")
    return "\n".join(lines) + "\n"


def fit_missing(path, seeds, cells, configs, fit, key="config"):
    """Append ``fit(cell, config, seed)``'s record to the JSON lines ``path``
    for every combination not there yet (``key`` names the config field)."""
    done = {(r["cell"], r[key], r["seed"]) for r in _read(path)}
    for seed in seeds:
        for cell in cells:
            for config in configs:
                if (cell, config, seed) in done:
                    continue
                record = fit(cell, config, seed)
                with path.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                print(json.dumps(record), flush=True)


def main(argv, study):
    """Run the missing (cell, config, seed) fits of ``study`` (a module with
    ``STEM``, ``CELLS``, ``CONFIGS`` and ``HEADING``, optionally its own
    ``markdown``, ``params(cell, config)``, ``data(cell, seed, config)`` and
    ``plot(records, path)``), then write its tables (and figure)."""
    stem, cells, configs = study.STEM, study.CELLS, study.CONFIGS
    parser = argparse.ArgumentParser(description=study.__doc__.split("\n")[0])
    parser.add_argument("--cells", nargs="*", default=list(cells))
    parser.add_argument("--configs", nargs="*", default=list(configs))
    parser.add_argument("--seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--out", default=str(RESULTS_DIR))
    parser.add_argument("--markdown-only", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{stem}.jsonl"
    params = getattr(study, "params", lambda cell, config: configs[config])
    if not args.markdown_only:

        def fit(cell, config, seed):
            data = cell_data
            if hasattr(study, "data"):
                data = functools.partial(study.data, config=config)
            return run(cell, config, seed, params(cell, config), data=data)

        fit_missing(path, args.seeds, args.cells, args.configs, fit)
    records, machine_path = _read(path), out / f"{stem}.json"
    if args.markdown_only and machine_path.exists():  # the fits' machine and head
        machine = json.loads(machine_path.read_text())["machine"]
    else:
        machine = machine_info()
        machine_path.write_text(
            json.dumps({"machine": machine, "fits": records}, indent=1) + "\n"
        )
    table = getattr(study, "markdown", markdown)
    text = table(records, cells, configs, study.HEADING)
    text += f"\nMachine: {machine['cpu']}.\n"
    (out / f"{stem}.md").write_text(text)
    if hasattr(study, "plot"):
        study.plot(records, out / f"{stem}.png")
    print(text)
