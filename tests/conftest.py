import contextlib
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

# The networks in these tests are tiny: one thread avoids oversubscribing
# the cores when other processes run (intra-op threads gain nothing here).
torch.set_num_threads(1)


def bag_props(bags, y, n_classes):
    """Sample-aligned proportions: every row gets its bag's label mix."""
    codes = np.unique(bags, return_inverse=True)[1].ravel()
    sums = np.zeros((codes.max() + 1, n_classes))
    np.add.at(sums, codes, np.eye(n_classes)[y])
    return (sums / sums.sum(1, keepdims=True))[codes]


@pytest.fixture(scope="session")
def digits_bags():
    """Digits split 70/30, standardised, training rows in random bags of 16."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    bags = np.random.RandomState(0).permutation(len(X_train)) // 16
    props = bag_props(bags, y_train, 10)
    return X_train, bags, props, y_train, X_test, y_test


@pytest.fixture
def problem():
    """Two classes: 60 rows x 4 in ten bags of 6, sample-aligned props."""
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 60)
    X = rng.normal(size=(60, 4)) + 1.5 * y[:, None]
    bags = np.repeat(np.arange(10), 6)
    props = np.zeros((10, 2))
    np.add.at(props, (bags, y), 1.0 / 6)
    return X, bags, props[bags], y


@pytest.fixture
def small_bags():
    """A quick 3-class problem in 12 bags of 10."""
    rng = np.random.RandomState(0)
    y = rng.randint(0, 3, 120)
    X = rng.normal(size=(120, 4)) + 2.0 * np.eye(3, 4)[y]
    bags = np.arange(120) // 10
    return X, bags, bag_props(bags, y, 3), y


@pytest.fixture
def device():
    """``cpu``, or the device ``SKLEARN_LLP_TEST_DEVICE`` names
    (``benchmarks/gpu_check.py`` sets ``cuda``); skips where it is absent."""
    name = os.environ.get("SKLEARN_LLP_TEST_DEVICE", "cpu")
    kind = torch.device(name).type
    if kind == "cuda" and not torch.cuda.is_available():
        pytest.skip(f"SKLEARN_LLP_TEST_DEVICE={name}, but CUDA is not available")
    return name


@pytest.fixture
def local_cluster():
    """A context manager: a real Dask cluster (2 worker processes) as the
    default scheduler while it is open; it yields the task stream."""
    distributed = pytest.importorskip("distributed")

    @contextlib.contextmanager
    def running():
        with (
            distributed.LocalCluster(
                n_workers=2,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            ) as cluster,
            distributed.Client(cluster) as client,
            distributed.get_task_stream(client) as tasks,
        ):
            yield tasks

    return running


@pytest.fixture(scope="session")
def load_example():
    """Import ``examples/<name>.py`` as a module (without running ``main``)."""

    def load(name):
        path = Path(__file__).resolve().parent.parent / "examples" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(f"example_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
