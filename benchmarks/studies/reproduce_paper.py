"""Reproduce the image experiments of the LLP-VAT paper with sklearn-llp.

Tsai & Lin (2020), sections 5.1-5.5: SVHN, CIFAR-10 and CIFAR-100 in uniform
and K-means bags (Tables 1-3), DLLP, ROT and LLP-VAT on a WRN-28-2, from the
data sets' released files (never downloaded). Setup, file layouts and
deviations: ``benchmarks/README.md``, section ``studies/reproduce_paper.py``.

    # one cell of Table 1 (a GPU day or so)
    python benchmarks/studies/reproduce_paper.py --data-dir ~/data --dataset cifar10 \
        --bagging uniform:64 --method vat
    # everything (weeks of GPU time)
    python benchmarks/studies/reproduce_paper.py --data-dir ~/data --full
"""

import argparse
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback, LRScheduler
from torch.nn import functional as F

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import KMeansBagGenerator, UniformBagGenerator
from sklearn_llp.metrics import hard_l1_error
from sklearn_llp.model_selection import BagShuffleSplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wrn import WideResNet  # noqa: E402

HERE = Path(__file__).resolve().parent
DATASETS = ("svhn", "cifar10", "cifar100")
METHODS = ("vanilla", "rot", "vat")
METHOD_LABELS = {"vanilla": "vanilla", "rot": "ROT", "vat": "LLP-VAT"}
DATASET_LABELS = {"svhn": "SVHN", "cifar10": "CIFAR10", "cifar100": "CIFAR100"}
BAG_SIZES = (16, 32, 64, 128, 256)
#: K of the paper's K-means bags, matching the number of bags of the uniform
#: bag sizes above (section 5.4).
KMEANS_K = {
    "svhn": (4576, 2288, 1144, 572, 286),
    "cifar10": (3120, 1560, 780, 390, 195),
    "cifar100": (3120, 1560, 780, 390, 195),
}
VAT_EPS = {"svhn": 1.0, "cifar10": 6.0, "cifar100": 6.0}
VAT_ALPHAS = (0.5, 0.1, 0.05, 0.01)
ROT_ALPHAS = (0.1, 0.4, 0.7, 0.9)
MAX_BAG_SIZE = 256
PCA_COMPONENTS = 600
LR = 3e-4
EPOCHS = 400
LR_DROP_EPOCH_FRACTION = 0.8  # 320 of 400
LR_GAMMA = 0.2
N_LAST_EPOCHS = 10

#: Test accuracies (%) of the paper: Table 1 (uniform), Tables 2-3 (K-means).
PAPER = {
    "uniform": {
        "svhn": {
            "vanilla": (95.28, 95.20, 94.41, 88.93, 12.64),
            "rot": (95.35, 94.84, 93.74, 92.29, 13.14),
            "vat": (95.66, 95.73, 94.60, 91.24, 11.18),
        },
        "cifar10": {
            "vanilla": (88.77, 85.02, 70.68, 47.48, 38.69),
            "rot": (86.97, 77.01, 62.93, 48.95, 40.16),
            "vat": (89.30, 85.41, 72.49, 50.78, 41.62),
        },
        "cifar100": {
            "vanilla": (58.58, 48.09, 20.66, 5.82, 2.82),
            "rot": (54.16, 47.75, 29.38, 7.95, 2.63),
            "vat": (59.47, 48.98, 22.84, 9.40, 3.29),
        },
    },
    "kmeans": {
        "svhn": {
            "vanilla": (92.07, 91.16, 92.00, 78.70, 47.16),
            "vat": (93.11, 91.69, 93.21, 82.05, 46.38),
        },
        "cifar10": {
            "vanilla": (73.93, 66.54, 44.12, 49.85, 39.86),
            "vat": (77.43, 68.01, 51.04, 50.22, 38.27),
        },
        "cifar100": {
            "vanilla": (38.65, 22.16, 16.07, 15.47, 7.82),
            "vat": (37.98, 21.90, 15.61, 15.31, 8.13),
        },
    },
}


# ----------------------------------------------------------------------
# data
# ----------------------------------------------------------------------
def _expected_files(name, data_dir):
    if name == "cifar10":
        folder = data_dir / "cifar-10-batches-py"
        train = [folder / f"data_batch_{i}" for i in range(1, 6)]
        return train, [folder / "test_batch"]
    if name == "cifar100":
        folder = data_dir / "cifar-100-python"
        return [folder / "train"], [folder / "test"]
    if name == "svhn":
        for folder in (data_dir, data_dir / "svhn"):
            if (folder / "train_32x32.mat").exists():
                break
        else:
            folder = data_dir
        return [folder / "train_32x32.mat"], [folder / "test_32x32.mat"]
    raise ValueError(f"unknown dataset {name!r}; use one of {DATASETS}")


def _read_pickles(paths, label_key):
    images, labels = [], []
    for path in paths:
        with open(path, "rb") as f:
            batch = pickle.load(f, encoding="bytes")
        images.append(np.asarray(batch[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32))
        labels.append(np.asarray(batch[label_key], dtype=np.int64))
    return np.concatenate(images), np.concatenate(labels)


def _read_svhn(path):
    from scipy.io import loadmat

    mat = loadmat(path)
    images = np.ascontiguousarray(np.transpose(mat["X"], (3, 2, 0, 1)))
    labels = mat["y"].ravel().astype(np.int64) % 10  # the digit 0 is stored as 10
    return images.astype(np.uint8), labels


def load_dataset(name, data_dir):
    """Training and test images ``(n, 3, 32, 32)`` uint8 and labels.

    Raises ``FileNotFoundError`` naming every expected file that is missing.
    """
    data_dir = Path(data_dir).expanduser()
    train, test = _expected_files(name, data_dir)
    missing = [str(p) for p in train + test if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"{name}: missing {', '.join(missing)}. Expected the released "
            "files (CIFAR-10: cifar-10-batches-py/data_batch_1..5 and test_batch; "
            "CIFAR-100: cifar-100-python/train and test; SVHN: train_32x32.mat "
            "and test_32x32.mat) under --data-dir; nothing is downloaded."
        )
    if name == "svhn":
        X_train, y_train = _read_svhn(train[0])
        X_test, y_test = _read_svhn(test[0])
        n_classes = 10
    else:
        key = b"labels" if name == "cifar10" else b"fine_labels"
        X_train, y_train = _read_pickles(train, key)
        X_test, y_test = _read_pickles(test, key)
        n_classes = 10 if name == "cifar10" else 100
    return X_train, y_train, X_test, y_test, n_classes


def standardise(X_train, X_test):
    """Per-channel standardisation with the training statistics, float32.

    Returns the two arrays and the value of a black pixel per channel (the
    fill of the crop padding).
    """
    mean = X_train.mean(axis=(0, 2, 3), dtype=np.float64) / 255.0
    std = X_train.std(axis=(0, 2, 3), dtype=np.float64) / 255.0
    std = np.where(std > 0, std, 1.0)
    scale = (1.0 / (255.0 * std)).astype(np.float32).reshape(1, 3, 1, 1)
    shift = (mean / std).astype(np.float32).reshape(1, 3, 1, 1)

    def apply(X):
        out = np.empty(X.shape, dtype=np.float32)
        for start in range(0, len(X), 4096):  # no float64 copy of the data
            chunk = X[start : start + 4096].astype(np.float32)
            out[start : start + 4096] = chunk * scale - shift
        return out

    return apply(X_train), apply(X_test), tuple(float(v) for v in -mean / std)


# ----------------------------------------------------------------------
# augmentation
# ----------------------------------------------------------------------
def random_crop_flip(X, padding=4, flip=True, fill=None, generator=None):
    """Random ``padding`` crops and horizontal flips of a batch of images.

    Every image of ``X`` (``(n, C, H, W)``, on any device) is padded by
    ``padding`` pixels on each side with ``fill`` (a value per channel; None
    is 0), a random ``H x W`` window of the padded image is taken, and with
    probability 0.5 the window is mirrored left-right. One gather for the
    whole batch, no loop over images.
    """
    n, c, h, w = X.shape
    device = X.device
    if padding:
        p = padding
        if fill is None:
            padded = F.pad(X, (p, p, p, p))
        else:
            padded = X.new_empty((n, c, h + 2 * p, w + 2 * p))
            padded[:] = torch.as_tensor(fill, dtype=X.dtype, device=device).view(
                1, c, 1, 1
            )
            padded[:, :, p : p + h, p : p + w] = X
        dy = torch.randint(0, 2 * p + 1, (n, 1), device=device, generator=generator)
        dx = torch.randint(0, 2 * p + 1, (n, 1), device=device, generator=generator)
        rows = (dy + torch.arange(h, device=device)).view(n, 1, h, 1)
        cols = (dx + torch.arange(w, device=device)).view(n, 1, 1, w)
        X = padded[
            torch.arange(n, device=device).view(n, 1, 1, 1),
            torch.arange(c, device=device).view(1, c, 1, 1),
            rows,
            cols,
        ]
    if flip:
        mirror = torch.rand(n, device=device, generator=generator) < 0.5
        X = torch.where(mirror.view(n, 1, 1, 1), X.flip(3), X)
    return X


class AugmentedLLPClassifier(LLPClassifier):
    """``LLPClassifier`` with random crops and flips of training images.

    Parameters
    ----------
    crop_padding : int, default=4
        Pixels of padding on each side before the random crop; 0 disables.
    flip : bool, default=True
        Mirror every training image left-right with probability 0.5.
    pad_fill : tuple of float or None, default=None
        Value of the padding per channel (e.g. a black pixel after
        standardisation); None pads with 0.
    **kwargs
        Every parameter of :class:`~sklearn_llp.LLPClassifier`.
    """

    def __init__(
        self, module=None, *, crop_padding=4, flip=True, pad_fill=None, **kwargs
    ):
        super().__init__(module, **kwargs)
        self.crop_padding = crop_padding
        self.flip = flip
        self.pad_fill = pad_fill

    def augment_batch(self, X):
        return random_crop_flip(X, self.crop_padding, self.flip, self.pad_fill)


class LastEpochsTestAccuracy(Callback):
    """Record ``test_acc`` in the history at the end of the last epochs."""

    def __init__(self, X, y, n_last=N_LAST_EPOCHS):
        self.X = X
        self.y = y
        self.n_last = n_last

    def on_epoch_end(self, net, **kwargs):
        if len(net.history) > net.max_epochs - self.n_last:
            accuracy = float(np.mean(net.predict(self.X) == self.y))
            net.history.record("test_acc", accuracy)


# ----------------------------------------------------------------------
# one cell of a table
# ----------------------------------------------------------------------
def parse_bagging(spec, dataset):
    """``"uniform:64"`` -> [("uniform", 64)]; ``"kmeans"`` -> the paper's K."""
    kind, _, value = spec.partition(":")
    if kind not in ("uniform", "kmeans"):
        raise ValueError(f"--bagging must be uniform[:N] or kmeans[:K]; got {spec!r}")
    if value:
        return [(kind, int(value))]
    values = BAG_SIZES if kind == "uniform" else KMEANS_K[dataset]
    return [(kind, v) for v in values]


def make_bags(kind, value, X, y, n_classes, seed):
    """Bag ids (``-1`` for dropped rows) and sample-aligned proportions.

    The proportions have one column per class ``0 .. n_classes - 1``, present
    in the bags or not.
    """
    if kind == "uniform":
        generator = UniformBagGenerator(value, drop_last=True, random_state=seed)
        bags = generator.fit_transform(X)
    else:
        flat = X.reshape(len(X), -1)
        n_components = min(PCA_COMPONENTS, flat.shape[0] - 1, flat.shape[1])
        generator = KMeansBagGenerator(
            value, n_components=n_components, random_state=seed
        )
        bags = generator.fit_transform(flat)
    kept = bags >= 0
    n_bags = int(bags.max()) + 1
    counts = np.bincount(
        bags[kept] * n_classes + y[kept], minlength=n_bags * n_classes
    ).reshape(n_bags, n_classes)
    table = counts / np.maximum(counts.sum(1, keepdims=True), 1)
    props = np.full((len(bags), n_classes), np.nan)
    props[kept] = table[bags[kept]]
    return bags, props


def hyperparameter_grid(method, dataset, alphas=None):
    if method == "vanilla":
        return [{}]
    if method == "vat":
        return [
            {"method__alpha": a, "method__eps": VAT_EPS[dataset]}
            for a in (alphas or VAT_ALPHAS)
        ]
    if method == "rot":
        return [{"method__rot_alpha": a} for a in (alphas or ROT_ALPHAS)]
    raise ValueError(f"unknown method {method!r}; use one of {METHODS}")


def run_cell(data, dataset, kind, value, method, args):
    """Train the grid of one cell, select by hard L1, return the record."""
    X_train, y_train, X_test, y_test, n_classes, fill = data
    t0 = time.perf_counter()
    bags, props = make_bags(kind, value, X_train, y_train, n_classes, args.seed)
    keep = bags >= 0
    X, bags, props = X_train[keep], bags[keep], props[keep]
    classes = np.arange(n_classes)
    split = BagShuffleSplit(n_splits=1, test_size=0.1, random_state=args.seed)
    train, valid = next(split.split(X, bags))
    sizes = np.minimum(np.unique(bags[train], return_counts=True)[1], MAX_BAG_SIZE)
    batch_size = args.batch_size or max(2, int(round(2 * sizes.mean())))
    epochs = args.epochs
    milestone = max(1, int(round(LR_DROP_EPOCH_FRACTION * epochs)))
    runs = []
    for params in hyperparameter_grid(method, dataset, args.alpha):
        clf = AugmentedLLPClassifier(
            module=WideResNet,
            module__depth=args.wrn_depth,
            module__widen_factor=args.wrn_width,
            module__dropout=args.wrn_dropout,
            method="dllp" if method == "vanilla" else method,
            classes=classes,
            max_bag_size=MAX_BAG_SIZE,
            batch_size=batch_size,
            predict_batch_size=args.predict_batch_size,
            optimizer=torch.optim.Adam,
            lr=LR,
            max_epochs=epochs,
            random_state=args.seed,
            device=args.device,
            verbose=args.verbose,
            crop_padding=4,
            flip=dataset != "svhn",
            pad_fill=fill,
            callbacks=[
                (
                    "lr_schedule",
                    LRScheduler(
                        policy=torch.optim.lr_scheduler.MultiStepLR,
                        milestones=[milestone],
                        gamma=LR_GAMMA,
                    ),
                ),
                ("test_acc", LastEpochsTestAccuracy(X_test, y_test)),
            ],
            **params,
        )
        t_fit = time.perf_counter()
        clf.fit(X[train], bags[train], props[train])
        fit_s = time.perf_counter() - t_fit
        valid_l1 = hard_l1_error(
            bags[valid], props[valid], clf.predict_proba(X[valid]), classes=classes
        )
        test_accs = [row["test_acc"] for row in clf.history if "test_acc" in row]
        runs.append(
            {
                "params": params,
                "valid_hard_l1": float(valid_l1),
                "test_acc_last_epochs": test_accs,
                "test_acc": float(np.mean(test_accs)),
                "fit_s": fit_s,
                "final_lr": clf.optimizer_.param_groups[0]["lr"],
            }
        )
        print(
            f"  {dataset} {kind}:{value} {method} {params}: valid hard L1 "
            f"{valid_l1:.4f}, test acc (last {len(test_accs)} epochs) "
            f"{100 * np.mean(test_accs):.2f} % ({fit_s:.0f} s)",
            flush=True,
        )
    best = min(runs, key=lambda r: r["valid_hard_l1"])
    return {
        "dataset": dataset,
        "bagging": kind,
        "value": value,
        "method": method,
        "test_acc": best["test_acc"],
        "selected": best["params"],
        "runs": runs,
        "n_train_rows": int(len(train)),
        "n_train_bags": int(len(np.unique(bags[train]))),
        "n_valid_bags": int(len(np.unique(bags[valid]))),
        "batch_size": batch_size,
        "epochs": epochs,
        "lr_milestone": milestone,
        "wrn": {
            "depth": args.wrn_depth,
            "widen_factor": args.wrn_width,
            "dropout": args.wrn_dropout,
        },
        "seed": args.seed,
        "device": _device_name(args.device),
        "wall_s": time.perf_counter() - t0,
        "paper": _paper_value(dataset, kind, value, method),
    }


def _device_name(device):
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return str(device)


def _paper_value(dataset, kind, value, method):
    table = PAPER[kind].get(dataset, {}).get(method)
    columns = BAG_SIZES if kind == "uniform" else KMEANS_K[dataset]
    if table is None or value not in columns:
        return None
    return table[columns.index(value)]


# ----------------------------------------------------------------------
# results in the paper's layout
# ----------------------------------------------------------------------
def _cell_key(r):
    return f"{r['dataset']}|{r['bagging']}:{r['value']}|{r['method']}"


def _fmt(record, paper):
    ours = "—" if record is None else f"{100 * record['test_acc']:.2f}"
    return ours if paper is None else f"{ours} ({paper:.2f})"


def write_tables(cells, path):
    """The paper's Tables 1-3 in markdown: ours (paper) per cell."""
    by_key = {_cell_key(r): r for r in cells}
    datasets = [d for d in DATASETS if any(r["dataset"] == d for r in cells)]
    lines = [
        "# LLP-VAT paper reproduction (Tsai & Lin 2020, Tables 1-3)",
        "",
        "Test accuracy (%) averaged over the last 10 epochs, hyperparameters "
        "selected by the hard L1 error of 10 % held-out bags; the paper's value "
        "in parentheses; — not run. Settings that differ from the paper (epochs, "
        "network size) are listed under the tables.",
        "",
    ]
    extra = sorted(
        {
            (r["bagging"], r["value"])
            for r in cells
            if r["value"]
            not in (BAG_SIZES if r["bagging"] == "uniform" else KMEANS_K[r["dataset"]])
        }
    )
    for kind, title in (
        ("uniform", "Table 1: uniform bags"),
        ("kmeans", "Tables 2-3: K-means bags"),
    ):
        rows = [
            d
            for d in datasets
            if any(r["dataset"] == d and r["bagging"] == kind for r in cells)
        ]
        if not rows:
            continue
        lines += [f"## {title}", ""]
        for d in rows:
            columns = list(BAG_SIZES if kind == "uniform" else KMEANS_K[d])
            columns += [v for k, v in extra if k == kind and v not in columns]
            head = "Bag size" if kind == "uniform" else "K"
            lines += [
                "| Dataset | Method | "
                + " | ".join(f"{head} {c}" for c in columns)
                + " |",
                "|---|---|" + "---|" * len(columns),
            ]
            methods = METHODS if kind == "uniform" else ("vanilla", "vat")
            for m in methods:
                cells_row = []
                for c in columns:
                    record = by_key.get(f"{d}|{kind}:{c}|{m}")
                    cells_row.append(_fmt(record, _paper_value(d, kind, c, m)))
                lines.append(
                    f"| {DATASET_LABELS[d]} | {METHOD_LABELS[m]} | "
                    + " | ".join(cells_row)
                    + " |"
                )
            lines.append("")
    settings = sorted(
        {
            (r["epochs"], r["wrn"]["depth"], r["wrn"]["widen_factor"], r["device"])
            for r in cells
        }
    )
    lines += ["## Settings of the cells", ""]
    for epochs, depth, width, device in settings:
        n = sum(
            1
            for r in cells
            if (r["epochs"], r["wrn"]["depth"], r["wrn"]["widen_factor"], r["device"])
            == (epochs, depth, width, device)
        )
        note = "" if (epochs, depth, width) == (EPOCHS, 28, 2) else " (NOT the paper's)"
        lines.append(
            f"* {n} cell(s): {epochs} epochs, WRN-{depth}-{width}, {device}{note}"
        )
    lines += ["", "Selected hyperparameters:", ""]
    for r in cells:
        lines.append(
            f"* {r['dataset']} {r['bagging']}:{r['value']} {r['method']}: "
            f"{r['selected'] or '-'} ({len(r['runs'])} trained, "
            f"{r['wall_s']:.0f} s)"
        )
    Path(path).write_text("\n".join(lines) + "\n")


def save(cells, out_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "reproduce_paper.json"
    previous = []
    if json_path.exists():
        previous = json.loads(json_path.read_text()).get("cells", [])
    merged = {_cell_key(r): r for r in previous}
    merged.update({_cell_key(r): r for r in cells})
    cells = list(merged.values())
    report = {
        "benchmark": "reproduce_paper",
        "paper": "Tsai & Lin, Learning from Label Proportions with Consistency "
        "Regularization, ACML 2020 (Tables 1-3)",
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "torch": torch.__version__,
        "cells": cells,
    }
    json_path.write_text(json.dumps(report, indent=2))
    write_tables(cells, out_dir / "reproduce_paper.md")
    return json_path


# ----------------------------------------------------------------------
# command line
# ----------------------------------------------------------------------
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--data-dir", type=Path, required=True)
    add(
        "--dataset",
        default=None,
        help=f"comma-separated, from {DATASETS}; default cifar10 (all with --full)",
    )
    add(
        "--bagging",
        default=None,
        help="uniform:N or kmeans:K for one cell; uniform or kmeans for the paper's "
        "five columns; default uniform:64",
    )
    add(
        "--method",
        default=None,
        help=f"comma-separated, from {METHODS} (dllp = vanilla); default vat, "
        "or every method of the table with --full or a whole row",
    )
    add(
        "--full",
        action="store_true",
        help="every cell of Tables 1-3 for the datasets (weeks of GPU time)",
    )
    add("--epochs", type=int, default=EPOCHS)
    add("--out", type=Path, default=HERE.parent / "results")
    add("--wrn-depth", type=int, default=28)
    add("--wrn-width", type=int, default=2)
    add("--wrn-dropout", type=float, default=0.0)
    add(
        "--batch-size",
        type=int,
        default=None,
        help="instances per step (whole bags); default twice the mean bag size",
    )
    add("--predict-batch-size", type=int, default=1024)
    add(
        "--alpha",
        type=lambda s: [float(v) for v in s.split(",")],
        default=None,
        help="override the alpha grid of VAT/ROT (comma-separated)",
    )
    add("--seed", type=int, default=0)
    add("--device", default="auto")
    add("--threads", type=int, default=None, help="torch CPU threads")
    add("--verbose", type=int, default=0)
    return parser.parse_args(argv)


def plan(args):
    """The cells to run: (dataset, kind, value, method)."""
    if args.dataset:
        datasets = args.dataset.split(",")
    else:
        datasets = list(DATASETS) if args.full else ["cifar10"]
    for d in datasets:
        if d not in DATASETS:
            raise SystemExit(f"unknown dataset {d!r}; use one of {DATASETS}")
    cells = []
    for d in datasets:
        if args.full:
            specs = ["uniform", "kmeans"]
        else:
            specs = [args.bagging or "uniform:64"]
        for spec in specs:
            for kind, value in parse_bagging(spec, d):
                if args.method:
                    methods = [
                        "vanilla" if m == "dllp" else m for m in args.method.split(",")
                    ]
                elif args.full or ":" not in spec:
                    methods = list(METHODS if kind == "uniform" else ("vanilla", "vat"))
                else:
                    methods = ["vat"]
                for m in methods:
                    if m not in METHODS:
                        raise SystemExit(f"unknown method {m!r}; use one of {METHODS}")
                    cells.append((d, kind, value, m))
    return cells


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    cells = plan(args)
    print(f"{len(cells)} cell(s) to run", flush=True)
    loaded = {}
    done = []
    for dataset, kind, value, method in cells:
        if dataset not in loaded:
            X_train, y_train, X_test, y_test, n_classes = load_dataset(
                dataset, args.data_dir
            )
            X_train, X_test, fill = standardise(X_train, X_test)
            loaded = {dataset: (X_train, y_train, X_test, y_test, n_classes, fill)}
        print(f"{dataset} {kind}:{value} {method}", flush=True)
        record = run_cell(loaded[dataset], dataset, kind, value, method, args)
        done.append(record)
        path = save(done, args.out)
        print(
            f"-> {100 * record['test_acc']:.2f} % with {record['selected'] or '-'} "
            f"(paper {record['paper']}); saved {path}",
            flush=True,
        )
    return done


if __name__ == "__main__":
    main()
