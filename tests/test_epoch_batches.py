"""An epoch's batches built in one go are ``BagDataset[pairs]`` built one at a time."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.methods import _segments as losses
from sklearn_llp.methods import available_methods
from sklearn_llp.neural._data import (
    BagBatchSampler,
    BagDataset,
    EpochBatches,
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
    segments (a device sync on a GPU) never happens inside a step."""
    in_step = []
    plan = losses._plan_numpy

    def refuse(segments, n_segments):
        if in_step:
            raise AssertionError("a segment sum was planned inside a step")
        return plan(segments, n_segments)

    class InStep(Callback):
        def on_batch_begin(self, net, **kwargs):
            in_step.append(True)

        def on_batch_end(self, net, **kwargs):
            in_step.clear()

    with monkeypatch.context() as patch:
        patch.setattr(losses, "_plan_numpy", refuse)
        new = _fit(method, kind, callbacks=[InStep()])
    assert len(new.history) == 3  # the steps did run
    one_at_a_time = lambda self: iter([self.dataset[p] for p in self.sampler])  # noqa: E731
    monkeypatch.setattr(EpochBatches, "__iter__", one_at_a_time)
    old = _fit(method, kind)
    for a, b in zip(new.module_.parameters(), old.module_.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert new.history[:, "valid_hard_l1"] == old.history[:, "valid_hard_l1"]
