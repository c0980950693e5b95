"""Covariate similarity for large tabular bags (issue 48, item 2): does a
k-nearest-neighbour graph of the rows, with the bags' proportions enforced,
give pseudo-labels that beat the defaults?

After LLP-BP (Havaldar et al., ICLR 2024), simplified to label propagation:
a k-NN graph of the (standardised) training rows, built once in chunks;
soft labels ``q`` (probability of the positive class) start from a warm-up
model's predictions on the training rows (``graph``) or from the bags'
proportions alone (``graph-prior``); every iteration replaces ``q`` by
``(1 - alpha) q0 + alpha * mean of q over the row's neighbours`` and then
shifts every bag's logits by one constant so the bag's mean matches its
proportion (Newton steps on segment sums: no loop per bag). A fresh default
network then trains on the bag loss (DLLP) plus ``beta`` times the
cross-entropy to the soft labels, looked up by row.

The diagnostic that says whether the graph carries label information: the
ROC AUC and accuracy of the soft labels against the true training labels,
before (the warm-up's predictions) and after propagation, and the oracle
(every row's neighbours' true labels, averaged).

Every fit leaves every parameter at its default but ``method``,
``random_state``, ``verbose`` and ``n_threads=1``; baselines are
``LLPClassifier()`` (``auto``), ``vat`` and ``dllp`` at today's code, on the
same bags. One JSON line per fit, resumable; CPU seconds per fit (torch 1
thread) beside the wall seconds, the machine being shared.

    python benchmarks/studies/covariate_graph.py --cells adult-256 --jobs 2
    python benchmarks/studies/covariate_graph.py --markdown-only
"""

import argparse
import json
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from sklearn_llp import LLPClassifier
from sklearn_llp.methods import DLLP
from sklearn_llp.modules import MLP

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import RESULTS_DIR, load_dataset, machine_info  # noqa: E402
from accuracy import make_bags  # noqa: E402

STEM = "covariate_graph"
CELLS = {
    "adult-256": "uniform-256",
    "adult-512": "uniform-512",
    "adult-1024": "uniform-1024",
    "adult-50-bags": "count-50",
    "adult-10-bags": "count-10",
}
#: method -> (warm-up method or None, alpha, iterations, beta); "-embed":
#: the graph of the warm-up network's last hidden layer, not of the rows;
#: "self": the control without the graph (the warm-up's own predictions,
#: each bag's mean held at its proportion); "-half": both fits of 50 epochs
#: (the cost of one default fit)
GRAPH = {
    "self": ("auto", 0.0, 1, 1.0),
    "graph": ("auto", 0.9, 20, 1.0),
    "graph-embed": ("auto", 0.9, 20, 1.0),
    "graph-prior": (None, 1.0, 20, 1.0),
    "graph-half": ("auto-half", 0.9, 20, 1.0),
}
#: the warm-ups' names -> (method, max_epochs)
WARM_UPS = {"auto-half": ("auto", 50)}
#: a one-fit prototype of a library ``method="graph"`` (DLLP for half the
#: epochs, then the same network on DLLP plus the pseudo-labels; commit
#: d65fe5e of branch graph48, reverted: it measured behind DLLP). Its
#: records stay; it runs only at that commit.
#: "graph-fresh": the same with the network's weights reset when the
#: pseudo-labels are made (a fresh network on them, as ``graph``; commit
#: f0c58b3, reverted)
LIBRARY = {"graph-lib": "graph", "graph-fresh": "graph"}
METHODS = ("auto", "vat", "dllp", *GRAPH, *LIBRARY)
K = 30
CACHE = Path("/tmp") / "covariate_graph_cache"


def cell_data(cell, seed):
    X, X_test, y, y_test = load_dataset("adult")
    bags, props, _ = make_bags("adult", None, "", CELLS[cell], seed)
    keep = bags >= 0
    return X[keep], y[keep], bags[keep], props[keep], X_test, y_test


@torch.no_grad()
def knn_graph(X, k, chunk=2048):
    """Indices ``(n, k)`` of every row's ``k`` nearest other rows."""
    X = torch.as_tensor(X, dtype=torch.float32)
    out = []
    for i in range(0, len(X), chunk):
        d = torch.cdist(X[i : i + chunk], X)
        d[torch.arange(len(d)), torch.arange(i, i + len(d))] = float("inf")
        out.append(d.topk(k, largest=False).indices)
    return torch.cat(out)


@torch.no_grad()
def propagate(neighbours, bags, bag_prop, q0, alpha, n_iter, newton=20):
    """Soft positive labels smoothed over the graph, each bag's mean held at
    its proportion by a per-bag logit shift (Newton on segment sums)."""
    bags = torch.as_tensor(bags)
    n_bags = len(bag_prop)
    size = torch.bincount(bags, minlength=n_bags).double()
    target = torch.as_tensor(bag_prop, dtype=torch.float64)

    def per_bag(v):
        return torch.zeros(n_bags, dtype=v.dtype).index_add_(0, bags, v) / size

    q0 = torch.as_tensor(q0, dtype=torch.float64)
    q = q0
    for _ in range(n_iter):
        q = (1 - alpha) * q0 + alpha * q[neighbours].mean(1)
        z = torch.logit(q.clamp(1e-6, 1 - 1e-6))
        shift = torch.zeros(n_bags, dtype=z.dtype)
        for _ in range(newton):
            r = torch.sigmoid(z + shift[bags])
            slope = per_bag(r * (1 - r)).clamp_min(1e-9)
            shift = shift - (per_bag(r) - target) / slope
        q = torch.sigmoid(z + shift[bags])
    return q.numpy()


class IndexedMLP(MLP):
    """The default MLP on ``X`` whose last column is the row's index (masked)."""

    def __init__(self, n_features, n_classes, **kwargs):
        super().__init__(n_features, n_classes, **kwargs)
        mask = torch.ones(n_features)
        mask[-1] = 0.0
        self.register_buffer("mask", mask)

    def forward(self, X):
        X = (X - self.input_mean) / self.input_scale
        return self.layers(X * self.mask)


class PseudoLabelled(DLLP):
    """DLLP plus ``beta`` times the cross-entropy to per-row soft labels."""

    def __init__(self, targets=None, beta=1.0):
        self.targets = targets
        self.beta = beta

    def row_loss(self, module, X, logits, weights, step, total_steps):
        rows = X[:, -1].round().long()
        q = torch.as_tensor(self.targets, dtype=logits.dtype)[rows]
        log_p = torch.log_softmax(logits, 1)
        ce = -(q * log_p[:, 1] + (1 - q) * log_p[:, 0])
        return self.beta * ce.mean()


def _scores(clf, X_test, y_test):
    pred = clf.predict(X_test)
    proba = clf.predict_proba(X_test)[:, 1]
    return {
        "accuracy": float(accuracy_score(y_test, pred)),
        "f1": float(f1_score(y_test, pred)),
        "auc": float(roc_auc_score(y_test, proba)),
    }


def _label_quality(y, q):
    return {
        "auc": round(float(roc_auc_score(y, q)), 4),
        "acc": round(float(((q > 0.5) == y).mean()), 4),
    }


@torch.no_grad()
def _embedding(clf, X):
    """The warm-up network's last hidden layer on the rows (LLP-BP's
    refined covariates)."""
    net = clf.module_
    Z = (torch.as_tensor(X) - net.input_mean) / net.input_scale
    return net.layers[:-1](Z).numpy()


def _cache(cell, method, seed):
    return CACHE / f"{cell}-{method}-{seed}.npz"


def _baseline(cell, method, seed, X, bags, props):
    """A default fit; its predictions, hidden layer and CPU s cached."""
    cpu = time.process_time()
    name, epochs = WARM_UPS.get(method, (LIBRARY.get(method, method), 100))
    clf = LLPClassifier(
        method=name, max_epochs=epochs, random_state=seed, verbose=0, n_threads=1
    )
    clf.fit(X, bags, props)
    CACHE.mkdir(exist_ok=True)
    np.savez(
        _cache(cell, method, seed),
        q=clf.predict_proba(X)[:, 1],
        cpu_s=time.process_time() - cpu,
        embedding=_embedding(clf, X),
    )
    return clf


def _warm_up(cell, method, seed, X, bags, props):
    """The cached warm-up fit (fitted now if missing)."""
    path = _cache(cell, method, seed)
    if not path.exists() or "embedding" not in np.load(path):
        _baseline(cell, method, seed, X, bags, props)
    return np.load(path)


def run(task):
    cell, method, seed = task
    torch.set_num_threads(1)
    X, y, bags, props, X_test, y_test = cell_data(cell, seed)
    cpu, wall = time.process_time(), time.perf_counter()
    record = {"cell": cell, "method": method, "seed": seed, "k": K}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method not in GRAPH:
            clf = _baseline(cell, method, seed, X, bags, props)
            record["trained"] = type(clf.method_).__name__
            record["train_labels"] = _label_quality(y, clf.predict_proba(X)[:, 1])
            extra = 0.0
        else:
            warm, alpha, n_iter, beta = GRAPH[method]
            record.update(warm_up=warm, alpha=alpha, n_iter=n_iter, beta=beta)
            bag_prop = np.zeros(bags.max() + 1)
            bag_prop[bags] = props[:, 1]
            extra = 0.0
            if warm is None:
                q0 = bag_prop[bags]
            else:
                cached = _warm_up(cell, warm, seed, X, bags, props)
                q0, extra = cached["q"], float(cached["cpu_s"])
                cpu = time.process_time()  # the warm-up's CPU s: ``extra``
                record["warm_up_labels"] = _label_quality(y, q0)
            covariates = X
            if method.endswith("-embed"):
                covariates = cached["embedding"]
            neighbours = knn_graph(covariates, K)
            record["oracle_labels"] = _label_quality(y, y[neighbours.numpy()].mean(1))
            steps = {}
            for it in sorted({1, 5, n_iter}):
                q = propagate(neighbours, bags, bag_prop, q0, alpha, it)
                steps[str(it)] = _label_quality(y, q)
            record["propagated_labels"] = steps
            record["graph_cpu_s"] = round(time.process_time() - cpu, 1)
            index = np.arange(len(X), dtype=np.float32)[:, None]
            clf = LLPClassifier(
                max_epochs=WARM_UPS.get(warm, (None, 100))[1],
                module=IndexedMLP,
                method=PseudoLabelled(targets=q, beta=beta),
                random_state=seed,
                verbose=0,
                n_threads=1,
            )
            clf.fit(np.hstack([X, index]), bags, props)
            X_test = np.hstack([X_test, np.zeros((len(X_test), 1), np.float32)])
            record["train_labels"] = _label_quality(
                y, clf.predict_proba(np.hstack([X, index]))[:, 1]
            )
    record["fit_s"] = round(time.perf_counter() - wall, 1)
    record["cpu_s"] = round(time.process_time() - cpu + extra, 1)
    record |= _scores(clf, X_test, y_test)
    return record


def _read(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line]


def _cell(runs):
    mean = {m: 100 * np.mean([r[m] for r in runs]) for m in ("accuracy", "f1", "auc")}
    text = f"{mean['accuracy']:.1f} / {mean['f1']:.1f} / {mean['auc']:.1f}"
    cpu = np.mean([r["cpu_s"] for r in runs])
    return text + f" ({len(runs)} s., {cpu:.0f} CPU s)"


def markdown(records):
    lines = [
        "# Covariate-similarity pseudo-labels on Adult "
        "(`benchmarks/studies/covariate_graph.py`)",
        "",
        "Test accuracy / F1 of >50K / ROC AUC in %, mean over seeds (s.), and "
        "CPU seconds per fit (1 torch thread; `graph` includes its warm-up "
        "fit). `auto` is `LLPClassifier()`; it trains VAT on bags of 256, "
        "DLLP on 1,024, EasyLLP on 10 bags.",
        "",
        "`graph`: a fresh default network on DLLP + the cross-entropy to "
        "the warm-up's (`auto`'s) predictions smoothed over the k-NN graph of "
        "the rows (alpha 0.9, 20 rounds, each bag held at its proportions); "
        "`graph-embed`: the graph of the warm-up's last hidden layer; "
        "`graph-prior`: started from the bags' proportions; `self`: the "
        "control without the graph (the warm-up's own predictions, bags held "
        "at their proportions); `graph-half`: `graph` with both fits at 50 "
        "epochs (one default fit's cost); `graph-lib` / `graph-fresh`: one-fit "
        "prototypes of a library method, the pseudo-labels made halfway on "
        "the same / a reset network (see the script).",
        "",
        "| cell | " + " | ".join(METHODS) + " |",
        "|---|" + "---|" * len(METHODS),
    ]
    cells = [c for c in CELLS if any(r["cell"] == c for r in records)]
    for cell in cells:
        row = []
        for method in METHODS:
            runs = [r for r in records if r["cell"] == cell and r["method"] == method]
            row.append(_cell(runs) if runs else "–")
        lines.append(f"| {cell} | " + " | ".join(row) + " |")
    lines += [
        "",
        "## Pseudo-labels against the true training labels (ROC AUC / accuracy)",
        "",
        f"k = {K} neighbours. *oracle*: the mean true label of a row's "
        "neighbours (what the graph could carry at best); *start*: the "
        "warm-up's predictions (or the bag's proportion); *after t*: after t "
        "propagation steps; *trained*: the final network's predictions on "
        "the training rows. Accuracy here is of the soft labels at 0.5, "
        "which sit near the prior: the AUC is the measure.",
        "",
        "| cell | method | seed | oracle | start | after 1 | after 5 | after 20 "
        "| trained |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def q(d):
        return f"{100 * d['auc']:.1f} / {100 * d['acc']:.1f}" if d else "–"

    for r in records:
        if r["method"] not in GRAPH:
            continue
        steps = r["propagated_labels"]
        start = r.get("warm_up_labels", {"auc": 0.5, "acc": float("nan")})
        lines.append(
            f"| {r['cell']} | {r['method']} | {r['seed']} | {q(r['oracle_labels'])} "
            f"| {q(start)} | {q(steps.get('1'))} | {q(steps.get('5'))} "
            f"| {q(steps.get('20'))} | {q(r['train_labels'])} |"
        )
    lines.append("")
    lines.append("Baselines' own predictions on the training rows (same measure):")
    lines.append("")
    for r in records:
        if r["method"] not in GRAPH:
            lines.append(
                f"- {r['cell']} {r['method']} ({r['trained']}) seed {r['seed']}: "
                f"{q(r['train_labels'])}"
            )
    lines += ["", FINDINGS]
    return "\n".join(lines) + "\n"


FINDINGS = """## Findings

- From the bags alone (LLP-BP's start, `graph-prior`), the propagated
  labels rank at AUC 66.4 / 63.6 / 52.6 in bags of 256 / 1,024 / ten bags,
  and the network trained on them at 68.3 / 67.7 / 55.8: a random bag's
  rate differs from the prior by sampling noise, so the graph has little to
  spread. It needs a model's predictions to start from.
- Where the warm-up ranks well, the graph takes ranking away: on bags of 256
  (VAT, train AUC 89.2) smoothing lowers the pseudo-labels' AUC at every
  step (88.0 after 1, 86.9 after 20), and holding each bag at its
  proportion alone lowers it (88.8, `self`): a random bag's rate is the
  prior plus sampling noise, which the shift writes into every row. The
  graph of the rows carries about what VAT already knows: its oracle
  (neighbours' true labels) ranks at 89.6, the warm-up's embedding at 90.1.
  Test AUC: graph -1.8, graph-embed -0.8, self -0.3 against VAT.
- Where the warm-up is weak, it helps: DLLP on bags of 1,024 (train AUC
  75.8 / 77.3) gains 2.0 / 1.4 points of pseudo-label AUC and the
  retrained network 3.2 / 2.9 points of test AUC on seeds 0 / 1 (accuracy
  +1.8 / +0.7, F1 +3.9 / +1.4), bags of 512 0.4 / 1.6; the control without
  the graph (`self`) moves by 0.1 at most, so it is the graph, not the
  second fit. Still 8 points short of the goal (AUC 88).
- Ten bags: EasyLLP's scores are not calibrated, and the bag shift moves
  them: +0.9 AUC on seed 0, -1.8 on seed 1.
- The gain needs a whole first fit (the default's 100 epochs): DLLP in bags
  of 1,024 is still learning at 50 (train AUC 57.5 on seed 0). At the cost
  of one default fit it falls behind DLLP: the two fits at 50 epochs each
  (`graph-half`) reach AUC 67.4 / 69.5 on seeds 0 / 1, one fit with DLLP
  for half the epochs and then the pseudo-labels on the same network
  (`graph-lib`) 67.7 / 69.1, or on a reset network (`graph-fresh`) 67.3
  (seed 0), against DLLP's 75.7 / 76.8; in bags of 512 they land 2.3
  behind to 1.3 ahead of DLLP. So the library does not offer it: the
  measured gain costs two default fits."""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", nargs="*", default=list(CELLS))
    runnable = [m for m in METHODS if m not in LIBRARY]
    parser.add_argument("--methods", nargs="*", default=runnable)
    parser.add_argument("--seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", default=str(RESULTS_DIR))
    parser.add_argument("--markdown-only", action="store_true")
    args = parser.parse_args(argv)
    out = Path(args.out)
    path = out / f"{STEM}.jsonl"
    done = {(r["cell"], r["method"], r["seed"]) for r in _read(path)}
    tasks = [
        (c, m, s)
        for s in args.seeds
        for c in args.cells
        for m in args.methods
        if (c, m, s) not in done
    ]
    if not args.markdown_only and tasks:
        with ProcessPoolExecutor(args.jobs) as pool:
            for record in pool.map(run, tasks):
                with path.open("a") as f:
                    f.write(json.dumps(record) + "\n")
                print(json.dumps(record), flush=True)
    text = markdown(_read(path))
    text += f"\nMachine: {machine_info()['cpu']}.\n"
    (out / f"{STEM}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
