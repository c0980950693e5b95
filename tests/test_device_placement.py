"""Where the work happens: a CPU fit never touches CUDA.

``torch.cuda._lazy_init``, which every call creating a CUDA context goes
through, is patched to record its callers: on any machine it shows whether a
CPU fit, prediction or pickling would have created a context.
"""

import pickle

import numpy as np
import pytest
import torch

from sklearn_llp import LLPClassifier, LLPRegressor
from sklearn_llp.methods import available_methods


@pytest.fixture
def cuda_calls(monkeypatch):
    calls = []
    monkeypatch.setattr(torch.cuda, "_lazy_init", lambda: calls.append(1))
    return calls


def _data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(240, 5))
    y = (X[:, 0] > 0).astype(int)
    bags = np.arange(240) // 8
    props = np.bincount(bags, weights=y)[bags] / 8
    return X, y, bags, np.c_[1 - props, props]


ESTIMATORS = [(LLPClassifier, m) for m in available_methods()]
ESTIMATORS += [(LLPRegressor, m) for m in available_methods("regression")]


@pytest.mark.parametrize("device", ["cpu", "auto"])
@pytest.mark.parametrize(
    ("cls", "method"), ESTIMATORS, ids=[f"{c.__name__}-{m}" for c, m in ESTIMATORS]
)
@pytest.mark.slow
def test_a_cpu_fit_creates_no_cuda_context(cls, method, device, cuda_calls):
    if device == "auto" and torch.cuda.is_available():
        pytest.skip("'auto' means CUDA here")
    X, y, bags, props = _data()
    params = dict(max_epochs=2, module__hidden_sizes=(8,), validation_fraction=0.25)
    est = cls(method=method, device=device, verbose=0, random_state=0, **params)
    est.fit(X, bags, props if cls is LLPClassifier else props[:, 1])
    est.predict(X)
    pickle.loads(pickle.dumps(est)).predict(X)
    assert cuda_calls == []


def test_the_check_sees_a_cuda_call(cuda_calls):
    """The patch does catch what it is there to catch."""
    try:
        torch.cuda.current_device()
    except (AssertionError, AttributeError, RuntimeError):  # a CPU build
        pass
    assert cuda_calls


def test_a_device_that_is_not_here_is_refused_naming_it(monkeypatch):
    from sklearn_llp.neural._runtime import check_device

    check_device("auto")
    check_device("cpu")
    with pytest.raises(ValueError, match=r"device='gpu' is not a torch device"):
        check_device("gpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ValueError, match=r"device='cuda', but CUDA is not available"):
        check_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    check_device("cuda:1")
    with pytest.raises(ValueError, match=r"device='cuda:2', but this machine has 2"):
        check_device("cuda:2")


def test_batches_go_to_the_network_device_when_X_stays_elsewhere():
    """X kept on the host (too large for the device) is gathered there and
    each batch copied; the bag structure is planned on the device. The
    ``meta`` device stands in for a GPU: shapes and devices, no values."""
    from sklearn_llp.core import check_bags
    from sklearn_llp.neural._data import (
        BagBatchSampler,
        BagDataset,
        EpochBatches,
        as_tensor,
    )

    X, _, bags, props = _data()
    dataset = BagDataset(as_tensor(X), check_bags(bags, props))
    sampler = lambda: BagBatchSampler(dataset.pair_bags, 48, random_state=0)  # noqa: E731
    expected = [dataset[pairs] for pairs in sampler()]
    got = list(EpochBatches(dataset, sampler(), device="meta"))
    assert len(got) == len(expected)
    for (X_got, target), (X_expected, target_expected) in zip(got, expected):
        assert X_got.device.type == "meta" and X_got.shape == X_expected.shape
        assert target.pop("largest_bag") == target_expected.pop("largest_bag")
        for key, value in target.items():  # the host plan's one int aside
            assert value.device.type == "meta", key
            assert value.shape == target_expected[key].shape, key


@pytest.mark.parametrize("method", ["dllp", "vat"])
def test_a_dask_fit_on_the_test_device_streams_the_numpy_fit(method, device):
    """Partitions stream to the device a window at a time
    and train what the in-memory fit trains; Dask predict stays lazy."""
    da = pytest.importorskip("dask.array")
    X, _, bags, props = _data()
    chunks = ((80, 80, 80), (5,))  # blocks of whole bags of 8
    params = dict(method=method, device=device, max_epochs=3, random_state=0)
    params |= dict(module__hidden_sizes=(8,), validation_fraction=0.25, verbose=0)
    expected = LLPClassifier(**params).fit(X, bags, props)
    lazy_props = da.from_array(props, chunks=(chunks[0], (2,)))
    lazy_X, lazy_bags = da.from_array(X, chunks=chunks), da.from_array(bags, chunks[:1])
    est = LLPClassifier(**params).fit(lazy_X, lazy_bags, lazy_props)
    assert est.history[:, "valid_loss"] == expected.history[:, "valid_loss"]
    lazy = est.predict_proba(da.from_array(X, chunks=chunks))
    assert type(lazy).__name__ == "Array"
    np.testing.assert_array_equal(lazy.compute(), expected.predict_proba(X))
