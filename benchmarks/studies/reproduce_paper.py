"""Reproduce the image experiments of the LLP-VAT paper (Tsai & Lin 2020, Tables 1-3).

DLLP, ROT and LLP-VAT on a WRN-28-2 in uniform and K-means bags of SVHN, CIFAR-10
and CIFAR-100 (released files, never downloaded). Commands and setup:
``benchmarks/README.md``, section ``studies/reproduce_paper.py``.
"""

import argparse
import json
import pickle
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback, LRScheduler
from torch.optim.lr_scheduler import MultiStepLR

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import KMeansBagGenerator, UniformBagGenerator
from sklearn_llp.metrics import hard_l1_error
from sklearn_llp.model_selection import BagShuffleSplit

sys.path[:0] = [str(Path(__file__).resolve().parents[i]) for i in (0, 1)]
from _common import RESULTS_DIR, write_results  # noqa: E402
from wrn import WideResNet  # noqa: E402

DATASETS = {"svhn": "SVHN", "cifar10": "CIFAR10", "cifar100": "CIFAR100"}
METHODS = {"vanilla": "vanilla", "rot": "ROT", "vat": "LLP-VAT"}
TABLE_METHODS = {"uniform": ("vanilla", "rot", "vat"), "kmeans": ("vanilla", "vat")}
BAG_SIZES = (16, 32, 64, 128, 256)
#: K of the paper's K-means bags: as many bags as the uniform bag sizes give.
KMEANS_K = {
    "svhn": (4576, 2288, 1144, 572, 286),
    "cifar10": (3120, 1560, 780, 390, 195),
    "cifar100": (3120, 1560, 780, 390, 195),
}
#: The paper's grids: VAT alpha (eps 1 for SVHN, 6 for CIFAR) and ROT alpha.
GRIDS = {"vat": (0.5, 0.1, 0.05, 0.01), "rot": (0.1, 0.4, 0.7, 0.9)}
EPOCHS, LR_GAMMA, PCA_COMPONENTS = 400, 0.2, 600
#: Fixed for every cell: Adam 3e-4, bags subsampled to 256 rows.
SETUP = {
    "module": WideResNet,
    "optimizer": torch.optim.Adam,
    "lr": 3e-4,
    "max_bag_size": 256,
    "predict_batch_size": 1024,
    "verbose": 0,
}
#: Test accuracies (%) of the paper per column: Table 1 (uniform), 2-3 (K-means).
PAPER = {
    ("uniform", "svhn", "vanilla"): (95.28, 95.20, 94.41, 88.93, 12.64),
    ("uniform", "svhn", "rot"): (95.35, 94.84, 93.74, 92.29, 13.14),
    ("uniform", "svhn", "vat"): (95.66, 95.73, 94.60, 91.24, 11.18),
    ("uniform", "cifar10", "vanilla"): (88.77, 85.02, 70.68, 47.48, 38.69),
    ("uniform", "cifar10", "rot"): (86.97, 77.01, 62.93, 48.95, 40.16),
    ("uniform", "cifar10", "vat"): (89.30, 85.41, 72.49, 50.78, 41.62),
    ("uniform", "cifar100", "vanilla"): (58.58, 48.09, 20.66, 5.82, 2.82),
    ("uniform", "cifar100", "rot"): (54.16, 47.75, 29.38, 7.95, 2.63),
    ("uniform", "cifar100", "vat"): (59.47, 48.98, 22.84, 9.40, 3.29),
    ("kmeans", "svhn", "vanilla"): (92.07, 91.16, 92.00, 78.70, 47.16),
    ("kmeans", "svhn", "vat"): (93.11, 91.69, 93.21, 82.05, 46.38),
    ("kmeans", "cifar10", "vanilla"): (73.93, 66.54, 44.12, 49.85, 39.86),
    ("kmeans", "cifar10", "vat"): (77.43, 68.01, 51.04, 50.22, 38.27),
    ("kmeans", "cifar100", "vanilla"): (38.65, 22.16, 16.07, 15.47, 7.82),
    ("kmeans", "cifar100", "vat"): (37.98, 21.90, 15.61, 15.31, 8.13),
}


def columns(kind, dataset):
    return BAG_SIZES if kind == "uniform" else KMEANS_K[dataset]


def paper_value(dataset, kind, value, method):
    table, cols = PAPER.get((kind, dataset, method)), columns(kind, dataset)
    return table[cols.index(value)] if table and value in cols else None


def load_dataset(name, data_dir):
    """``X_train, y_train, X_test, y_test, n_classes`` (images ``(n, 3, 32, 32)``
    uint8); raises ``FileNotFoundError`` naming every missing file."""
    root = Path(data_dir).expanduser()
    if name == "svhn":  # directly under --data-dir or in its svhn/ folder
        found = [f for f in (root, root / "svhn") if (f / "train_32x32.mat").exists()]
        train = [(found or [root])[0] / "train_32x32.mat"]
    elif name == "cifar10":
        train = [root / f"cifar-10-batches-py/data_batch_{i}" for i in range(1, 6)]
    elif name == "cifar100":
        train = [root / "cifar-100-python/train"]
    else:
        raise ValueError(f"unknown dataset {name!r}; use one of {tuple(DATASETS)}")
    test = {"svhn": "test_32x32.mat", "cifar10": "test_batch", "cifar100": "test"}
    test = [train[0].with_name(test[name])]
    missing = [str(p) for p in train + test if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{name}: missing {', '.join(missing)}; the released files are read "
            "from --data-dir (see benchmarks/README.md), never downloaded."
        )
    key = b"labels" if name == "cifar10" else b"fine_labels"
    read = _read_svhn if name == "svhn" else lambda paths: _read_pickles(paths, key)
    return (*read(train), *read(test), 100 if name == "cifar100" else 10)


def _read_pickles(paths, label_key):
    batches = [pickle.loads(path.read_bytes(), encoding="bytes") for path in paths]
    X = [np.asarray(b[b"data"], np.uint8).reshape(-1, 3, 32, 32) for b in batches]
    y = [np.asarray(b[label_key], dtype=np.int64) for b in batches]
    return np.concatenate(X), np.concatenate(y)


def _read_svhn(paths):
    from scipy.io import loadmat

    mat = loadmat(paths[0])
    X = np.ascontiguousarray(np.transpose(mat["X"], (3, 2, 0, 1)), dtype=np.uint8)
    return X, mat["y"].ravel().astype(np.int64) % 10  # the digit 0 is stored as 10


def standardise(X_train, X_test):
    """Per-channel standardisation (training statistics) to float32, and the
    value of a black pixel per channel (the fill of the crop padding)."""
    mean = X_train.mean(axis=(0, 2, 3), dtype=np.float64) / 255.0
    std = X_train.std(axis=(0, 2, 3), dtype=np.float64) / 255.0
    std = np.where(std > 0, std, 1.0)
    scale = (1.0 / (255.0 * std)).astype(np.float32).reshape(1, 3, 1, 1)
    shift = (mean / std).astype(np.float32).reshape(1, 3, 1, 1)

    def apply(X):  # in place: no float64 or temporary copy of the data
        out = X.astype(np.float32)
        out *= scale
        out -= shift
        return out

    return apply(X_train), apply(X_test), tuple(float(v) for v in -mean / std)


def random_crop_flip(X, padding=4, flip=True, fill=None, generator=None):
    """Random crops of the ``(n, C, H, W)`` images padded by ``padding`` pixels of
    ``fill`` (per channel; None is 0), then left-right mirrors with probability 0.5;
    one gather for the whole batch on its device."""
    n, c, h, w = X.shape
    arange = partial(torch.arange, device=X.device)
    if padding:
        p = padding
        padded = X.new_zeros((n, c, h + 2 * p, w + 2 * p))
        if fill is not None:
            fill = torch.as_tensor(fill, dtype=X.dtype, device=X.device)
            padded[:] = fill.view(1, c, 1, 1)
        padded[:, :, p : p + h, p : p + w] = X
        dy = torch.randint(0, 2 * p + 1, (n, 1), device=X.device, generator=generator)
        dx = torch.randint(0, 2 * p + 1, (n, 1), device=X.device, generator=generator)
        rows = (dy + arange(h)).view(n, 1, h, 1)
        cols = (dx + arange(w)).view(n, 1, 1, w)
        X = padded[arange(n).view(n, 1, 1, 1), arange(c).view(1, c, 1, 1), rows, cols]
    if flip:
        mirror = torch.rand(n, device=X.device, generator=generator) < 0.5
        X = torch.where(mirror.view(n, 1, 1, 1), X.flip(3), X)
    return X


class AugmentedLLPClassifier(LLPClassifier):
    """``LLPClassifier`` whose training batches go through ``random_crop_flip``."""

    def __init__(self, module=None, *, crop_padding=4, flip=True, pad_fill=None, **kw):
        super().__init__(module, **kw)
        self.crop_padding, self.flip, self.pad_fill = crop_padding, flip, pad_fill

    def augment_batch(self, X):
        return random_crop_flip(X, self.crop_padding, self.flip, self.pad_fill)


class LastEpochsTestAccuracy(Callback):
    """Record ``test_acc`` in the history at the end of the last 10 epochs."""

    def __init__(self, X, y):
        self.X, self.y = X, y

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) > net.max_epochs - 10:
            accuracy = float(np.mean(net.predict(self.X) == self.y))
            net.history.record("test_acc", accuracy)


def make_bags(kind, value, X, y, seed):
    """Bag ids (-1: left out) and sample-aligned proportions of the training rows."""
    if kind == "uniform":
        bagger = UniformBagGenerator(value, drop_last=True, random_state=seed)
    else:  # K-means on the principal components of the pixels
        X = X.reshape(len(X), -1)
        n_components = min(PCA_COMPONENTS, X.shape[0] - 1, X.shape[1])
        bagger = KMeansBagGenerator(value, n_components=n_components, random_state=seed)
    return bagger.make_bags(X, y)


def hyperparameter_grid(method, dataset, alphas=None):
    if method == "vanilla":
        return [{}]
    if method == "rot":
        return [{"method__rot_alpha": a} for a in alphas or GRIDS["rot"]]
    eps = 1.0 if dataset == "svhn" else 6.0
    return [{"method__alpha": a, "method__eps": eps} for a in alphas or GRIDS["vat"]]


def run_cell(data, dataset, kind, value, method, args):
    """Train the grid of one cell, select by hard L1, return the record."""
    X_train, y_train, X_test, y_test, n_classes, fill = data
    t0 = time.perf_counter()
    bags, props = make_bags(kind, value, X_train, y_train, args.seed)
    keep = bags >= 0
    X, bags, props = X_train[keep], bags[keep], props[keep]
    split = BagShuffleSplit(n_splits=1, test_size=0.1, random_state=args.seed)
    train, valid = next(split.split(X, bags))
    sizes = np.unique(bags[train], return_counts=True)[1]
    # about two bags a step, as in the authors' code (the paper does not say)
    mean_size = np.minimum(sizes, SETUP["max_bag_size"]).mean()
    batch_size = args.batch_size or max(2, int(round(2 * mean_size)))
    milestone = max(1, int(round(0.8 * args.epochs)))  # epoch 320 of 400
    wrn = {
        "depth": args.wrn_depth,
        "widen_factor": args.wrn_width,
        "dropout": args.wrn_dropout,
    }
    runs = []
    for params in hyperparameter_grid(method, dataset, args.alpha):
        schedule = LRScheduler(MultiStepLR, milestones=[milestone], gamma=LR_GAMMA)
        test_acc = LastEpochsTestAccuracy(X_test, y_test)
        clf = AugmentedLLPClassifier(
            **SETUP,
            **{f"module__{k}": v for k, v in wrn.items()},
            **params,
            method="dllp" if method == "vanilla" else method,
            classes=np.arange(n_classes),
            batch_size=batch_size,
            max_epochs=args.epochs,
            random_state=args.seed,
            device=args.device,
            flip=dataset != "svhn",  # digits are not mirror-symmetric
            pad_fill=fill,
            callbacks=[("lr_schedule", schedule), ("test_acc", test_acc)],
        )
        t_fit = time.perf_counter()
        clf.fit(X[train], bags[train], props[train])
        fit_s = time.perf_counter() - t_fit
        proba = clf.predict_proba(X[valid])
        valid_l1 = hard_l1_error(bags[valid], props[valid], proba, classes=clf.classes)
        valid_l1 = float(valid_l1)
        accs = [row["test_acc"] for row in clf.history if "test_acc" in row]
        runs.append(
            {
                "params": params,
                "valid_hard_l1": valid_l1,
                "test_acc_last_epochs": accs,
                "test_acc": float(np.mean(accs)),
                "fit_s": fit_s,
                "final_lr": clf.optimizer_.param_groups[0]["lr"],
            }
        )
        print(f"  {params}: valid hard L1 {valid_l1:.4f}, test acc {np.mean(accs):.2%}")
    best = min(runs, key=lambda r: r["valid_hard_l1"])
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return {
        "dataset": dataset,
        "bagging": kind,
        "value": value,
        "method": method,
        "test_acc": best["test_acc"],
        "selected": best["params"],
        "runs": runs,
        "n_train_rows": len(train),
        "n_train_bags": len(np.unique(bags[train])),
        "n_valid_bags": len(np.unique(bags[valid])),
        "batch_size": batch_size,
        "epochs": args.epochs,
        "lr_milestone": milestone,
        "wrn": wrn,
        "seed": args.seed,
        "device": str(device),
        "wall_s": time.perf_counter() - t0,
        "paper": paper_value(dataset, kind, value, method),
    }


def _key(r):
    return r["dataset"], r["bagging"], r["value"], r["method"]


def _row(cells):
    return "| " + " | ".join(cells) + " |"


def render(cells):
    """The paper's Tables 1-3 in markdown: our accuracy (the paper's) per cell."""
    by_key = {_key(r): r for r in cells}
    lines = [
        "# LLP-VAT paper reproduction (Tsai & Lin 2020, Tables 1-3)",
        "",
        "Test accuracy (%) averaged over the last 10 epochs, hyperparameters "
        "selected by the hard L1 error of 10 % held-out bags; the paper's value "
        "in parentheses; — not run. Settings that differ from the paper (epochs, "
        "network size) are listed under the tables.",
        "",
    ]
    # bag sizes and K that are not columns of the paper get columns of their own
    extra = sorted({k[1:3] for k in by_key if k[2] not in columns(k[1], k[0])})
    for kind, title, head in (
        ("uniform", "Table 1: uniform bags", "Bag size"),
        ("kmeans", "Tables 2-3: K-means bags", "K"),
    ):
        rows = [d for d in DATASETS if any(k[:2] == (d, kind) for k in by_key)]
        lines += [f"## {title}", ""] if rows else []
        for d in rows:
            cols = list(columns(kind, d))
            cols += [v for k, v in extra if k == kind and v not in cols]
            lines += [
                _row(["Dataset", "Method", *(f"{head} {c}" for c in cols)]),
                "|---|---|" + "---|" * len(cols),
            ]
            for m in TABLE_METHODS[kind]:
                accs = []
                for c in cols:
                    ours, paper = (
                        by_key.get((d, kind, c, m)),
                        paper_value(d, kind, c, m),
                    )
                    ours = "—" if ours is None else f"{100 * ours['test_acc']:.2f}"
                    accs.append(ours if paper is None else f"{ours} ({paper:.2f})")
                lines.append(_row([DATASETS[d], METHODS[m], *accs]))
            lines.append("")
    settings = Counter(
        (r["epochs"], r["wrn"]["depth"], r["wrn"]["widen_factor"], r["device"])
        for r in cells
    )
    lines += ["## Settings of the cells", ""]
    for (epochs, depth, width, device), n in sorted(settings.items()):
        note = "" if (epochs, depth, width) == (EPOCHS, 28, 2) else " (NOT the paper's)"
        lines.append(
            f"* {n} cell(s): {epochs} epochs, WRN-{depth}-{width}, {device}{note}"
        )
    lines += ["", "Selected hyperparameters:", ""]
    for r in cells:
        lines.append(
            f"* {r['dataset']} {r['bagging']}:{r['value']} {r['method']}: "
            f"{r['selected'] or '-'} ({len(r['runs'])} trained, {r['wall_s']:.0f} s)"
        )
    return "\n".join(lines)


def save(cells, out_dir):
    """Merge the cells into ``reproduce_paper.json`` and rewrite the tables."""
    path = Path(out_dir) / "reproduce_paper.json"
    old = json.loads(path.read_text())["cells"] if path.exists() else []
    cells = list({_key(r): r for r in old + cells}.values())
    report = {
        "benchmark": "reproduce_paper",
        "paper": "Tsai & Lin, Learning from Label Proportions with Consistency "
        "Regularization, ACML 2020 (Tables 1-3)",
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "torch": torch.__version__,
        "cells": cells,
    }
    return write_results("reproduce_paper", report, render(cells), out_dir, indent=2)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--data-dir", type=Path, required=True)
    add("--dataset", help=f"comma-separated, of {tuple(DATASETS)}; default cifar10")
    add("--bagging", help="uniform:N, kmeans:K, or uniform/kmeans for a whole row")
    add("--method", help="comma-separated, of vanilla (= dllp), rot, vat; default vat")
    add("--full", action="store_true", help="every cell of Tables 1-3 (GPU weeks)")
    add("--epochs", type=int, default=EPOCHS)
    add("--out", type=Path, default=RESULTS_DIR)
    add("--wrn-depth", type=int, default=28)
    add("--wrn-width", type=int, default=2)
    add("--wrn-dropout", type=float, default=0.0)
    add("--batch-size", type=int, help="default: about two bags per step")
    add("--alpha", type=lambda s: [float(v) for v in s.split(",")], help="grid")
    add("--seed", type=int, default=0)
    add("--device", default="auto")
    return parser.parse_args(argv)


def plan(args):
    """The cells to run: (dataset, kind, value, method)."""
    default = list(DATASETS) if args.full else ["cifar10"]
    cells = []
    for d in args.dataset.split(",") if args.dataset else default:
        for spec in (
            ["uniform", "kmeans"] if args.full else [args.bagging or "uniform:64"]
        ):
            kind, _, value = spec.partition(":")
            if kind not in TABLE_METHODS or d not in DATASETS:
                raise SystemExit(f"unknown dataset {d!r} or --bagging {spec!r}")
            if args.method:
                methods = [
                    {"dllp": "vanilla"}.get(m, m) for m in args.method.split(",")
                ]
            else:  # a whole row of the table, else one VAT cell
                methods = TABLE_METHODS[kind] if args.full or not value else ["vat"]
            if set(methods) - set(METHODS):
                raise SystemExit(f"unknown method in {methods}; use {tuple(METHODS)}")
            values = [int(value)] if value else columns(kind, d)
            cells += [(d, kind, v, m) for v in values for m in methods]
    return cells


def main(argv=None):
    args = parse_args(argv)
    cells, loaded, done = plan(args), {}, []
    print(f"{len(cells)} cell(s) to run", flush=True)
    for dataset, kind, value, method in cells:
        if dataset not in loaded:  # one data set in memory at a time
            X_train, y_train, X_test, y_test, n = load_dataset(dataset, args.data_dir)
            X_train, X_test, fill = standardise(X_train, X_test)
            loaded = {dataset: (X_train, y_train, X_test, y_test, n, fill)}
        print(f"{dataset} {kind}:{value} {method}", flush=True)
        record = run_cell(loaded[dataset], dataset, kind, value, method, args)
        done.append(record)
        path = save(done, args.out)
        print(f"-> {100 * record['test_acc']:.2f} % (paper {record['paper']}); {path}")
    return done


if __name__ == "__main__":
    main()
