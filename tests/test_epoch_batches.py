"""An epoch's batches built in one go are ``BagDataset[pairs]`` built one at a time."""

import contextlib
import sys

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from skorch.callbacks import Callback
from torch.utils._python_dispatch import TorchDispatchMode

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.methods import available_methods
from sklearn_llp.neural._data import (
    BagBatchSampler,
    BagDataset,
    EpochBatches,
    _lexsort,
    as_tensor,
)


def _data(kind, seed=0):
    rng = np.random.RandomState(seed)
    n = 90
    X = rng.normal(size=(n, 4))
    if kind == "overlapping":
        lists = [rng.choice(n, rng.randint(1, 14), replace=False) for _ in range(17)]
        props = rng.dirichlet(np.ones(3), size=len(lists))
        return X, check_bags(lists, props, n_samples=n)
    ids = rng.randint(0, 12, n)
    props = rng.dirichlet(np.ones(3), size=12)[ids]
    weights = rng.uniform(0.5, 2.0, n) if kind == "weighted" else None
    bags = check_bags(ids, props, sample_weight=weights)
    if kind == "sparse":
        X = sp.random(n, 4, density=0.4, random_state=seed, format="csr")
    return X, bags


def _assert_same(got, expected):
    assert got.keys() == expected.keys()
    for key in expected:
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["disjoint", "overlapping", "weighted", "sparse"])
@pytest.mark.parametrize("batch_size, max_bag_size", [(20, None), (1, None), (16, 5)])
def test_each_batch_is_the_dataset_item_of_its_pairs(kind, batch_size, max_bag_size):
    X, bags = _data(kind)
    dataset = BagDataset(as_tensor(X), bags)

    def sampler():
        kw = dict(max_bag_size=max_bag_size, random_state=3)
        return BagBatchSampler(dataset.pair_bags, batch_size, **kw)

    expected = [dataset[pairs] for pairs in sampler()]
    got = list(EpochBatches(dataset, sampler()))
    assert len(got) == len(expected) > 1
    for (X_got, target_got), (X_expected, target_expected) in zip(got, expected):
        torch.testing.assert_close(X_got, X_expected, rtol=0, atol=0)
        _assert_same(target_got, target_expected)
    # the weighted data set does carry weights, the others none
    assert ("weights" in got[0][1]) == (kind == "weighted")
    assert ("members" in got[0][1]) == (kind == "overlapping")


def test_every_epoch_draws_anew_and_len_is_the_samplers():
    X, bags = _data("disjoint")
    dataset = BagDataset(as_tensor(X), bags)
    sampler = BagBatchSampler(dataset.pair_bags, 20, random_state=0)
    loader = EpochBatches(dataset, sampler)
    assert len(loader) == len(sampler)
    first = [target["bag_index"] for _, target in loader]
    second = [target["bag_index"] for _, target in loader]
    assert torch.cat(first).sort().values.equal(torch.cat(second).sort().values)
    assert not all(a.equal(b) for a, b in zip(first, second))


def _fit_args(kind):
    X, bags = _data(kind, seed=1)
    if kind == "overlapping":
        lists = np.split(bags.members, bags.indptr[1:-1])
        return X, lists, bags.props, None
    rows = bags.members
    ids = np.asarray(bags.ids)[bags.pair_bags]
    weights = None if bags.weights is None else bags.weights[rows]
    return X[rows], ids, bags.props[bags.pair_bags], weights


def _fit(method, kind, **params):
    if method == "llpfc" and kind == "overlapping":
        pytest.skip("LLPFC refuses overlapping bags")
    X, bags, props, weights = _fit_args(kind)
    params = dict(method=method, max_epochs=3, batch_size=24, **params)
    params.update(module__hidden_sizes=(8,), random_state=0, verbose=0, device="cpu")
    clf = LLPClassifier(early_stopping=False, validation_fraction=0.25, **params)
    return clf.fit(X, bags, props, sample_weight=weights)


@pytest.mark.parametrize("kind", ["disjoint", "overlapping", "weighted"])
@pytest.mark.parametrize("method", available_methods())
@pytest.mark.slow
def test_fit_is_the_fit_of_batches_built_one_at_a_time(method, kind, monkeypatch):
    """The whole fit, not only the batches: the same weights and validation
    errors either way, for every method. And every segment sum of a training
    or validation step uses the plan of the epoch: planning a batch's
    segments (a device sync on a GPU) never happens inside a step; no step
    reads the device (:func:`_host_reads`)."""
    with monkeypatch.context() as patch, _host_reads(patch) as reads:
        new = _fit(method, kind)
    assert reads.reads == []
    assert len(new.history) == 3  # the steps did run
    one_at_a_time = lambda self: iter([self.dataset[p] for p in self.sampler])  # noqa: E731
    monkeypatch.setattr(EpochBatches, "__iter__", one_at_a_time)
    old = _fit(method, kind)
    for a, b in zip(new.module_.parameters(), old.module_.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert new.history[:, "valid_hard_l1"] == old.history[:, "valid_hard_l1"]


class _HostReads(TorchDispatchMode):
    """Records, while ``armed``, the ops that read tensor data on the host:
    on a GPU each waits for the device (``item``, ``bool``, ``nonzero``, ...).
    The optimizers' step counters live on the host by design (torch's Adam)."""

    SYNCS = ("_local_scalar_dense", "nonzero", "masked_select", "unique", "bincount")

    def __init__(self):
        super().__init__()
        self.armed, self.reads = False, []

    def read(self, what):
        frame, callers = sys._getframe(2), []
        while frame is not None and len(callers) < 12:
            callers.append(frame.f_globals.get("__name__", ""))
            frame = frame.f_back
        if self.armed and not any(c.startswith("torch.optim") for c in callers):
            self.reads.append(f"{what} from {callers[:4]}")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name.split("::")[1]
        masks = name == "index" and any(
            i is not None and i.dtype == torch.bool for i in args[1]
        )
        if name in self.SYNCS or masks or name.startswith("repeat_interleave"):
            self.read(name)
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def _host_reads(patch):
    """A :class:`_HostReads` armed from every epoch's first step to the end of
    its last (batches made meanwhile included), tensors' ``numpy``, ``tolist``
    and ``cpu`` counted too."""
    reads, iterate = _HostReads(), EpochBatches.__iter__

    def watched(self):
        for batch in iterate(self):
            reads.armed = True
            yield batch
        reads.armed = False

    patch.setattr(EpochBatches, "__iter__", watched)
    for name in ("numpy", "tolist", "cpu"):
        host = getattr(torch.Tensor, name)

        def counted(t, *args, _host=host, _name=name, **kwargs):
            reads.read(_name)
            return _host(t, *args, **kwargs)

        patch.setattr(torch.Tensor, name, counted)
    with reads:
        yield reads


@pytest.mark.parametrize("method", ["auto", "dllp", "vat"])
def test_a_step_reads_the_device_only_for_a_callback_of_batch_events(
    small_bags, monkeypatch, method
):
    """From an epoch's first step to its last nothing waits for the device:
    the losses are read once, after the last step (skorch reads one a step).
    A callback overriding ``on_batch_*``/``on_grad_computed`` gets every batch,
    its loss recorded, and the fit and its records are the same."""
    calls = []

    class Counts(Callback):
        def on_batch_end(self, net, training=False, **kwargs):
            calls.append(not training or "train_loss" in net.history[-1, "batches", -1])

        def on_grad_computed(self, net, named_parameters, **kwargs):
            calls.append("grad")

    X, bags, props, _ = small_bags
    params = dict(method=method, batch_size=20, max_epochs=2, verbose=0)
    params |= dict(random_state=0, validation_fraction=0.25)
    with _host_reads(monkeypatch) as reads:
        clf = LLPClassifier(**params).fit(X, bags, props)
    assert clf.n_train_steps_ == 10 and reads.reads == []
    sizes = [b["train_batch_size"] for b in clf.history[-1, "batches"][:5]]
    assert sizes == [20] * 4 + [10] and np.isfinite(clf.history[-1, "train_loss"])
    counted = LLPClassifier(callbacks=[Counts()], **params).fit(X, bags, props)
    assert calls.count(True) == 14 and calls.count("grad") == 10
    assert counted.history[:, "batches"] == clf.history[:, "batches"]
    np.testing.assert_array_equal(counted.predict_proba(X), clf.predict_proba(X))


@pytest.mark.parametrize("optimizer", [torch.optim.Adam, torch.optim.LBFGS])
def test_the_bare_step_trains_as_skorchs(small_bags, optimizer, monkeypatch):
    """Bit for bit skorch's (for a callback of gradients, LBFGS' closure)."""
    grads = type("Grads", (Callback,), {"on_grad_computed": lambda *a, **k: None})
    X, bags, props, _ = small_bags
    kw = dict(method="vat", max_epochs=2, batch_size=20, max_bag_size=3, verbose=0)
    kw |= dict(optimizer=optimizer, random_state=0)
    bare = LLPClassifier(**kw).fit(X, bags, props)
    monkeypatch.setattr(EpochBatches, "max_copy", 0)  # a batch's rows at a time
    skorch = LLPClassifier(callbacks=[grads()], **kw).fit(X, bags, props)
    np.testing.assert_array_equal(bare.predict_proba(X), skorch.predict_proba(X))
    assert bare.history[:, "train_loss"] == skorch.history[:, "train_loss"]


def test_the_shuffle_orders_pairs_as_lexsort():
    rank, u = np.arange(999) % 50, np.random.RandomState(0).random_sample(999)
    # one float sort; lexsort where keys tie or their sum rounds
    for r, w in [(rank, u), (rank, np.where(rank % 7, u, 0.5)), (rank << 52, u)]:
        np.testing.assert_array_equal(_lexsort(w, r), np.lexsort((w, r)))
