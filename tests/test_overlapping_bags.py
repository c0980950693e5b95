"""Bags that overlap: membership matrices and lists of row indices."""

import numpy as np
import pytest

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.methods.functional import segment_mean
from sklearn_llp.neural._data import BagBatchSampler, BagDataset, as_tensor


def _random_overlapping(n_samples, n_bags, seed):
    rng = np.random.RandomState(seed)
    return [
        rng.choice(n_samples, rng.randint(1, 12), replace=False) for _ in range(n_bags)
    ]


def test_batch_bag_means_equal_a_loop_over_memberships():
    rng = np.random.RandomState(0)
    lists = _random_overlapping(40, 15, seed=0)
    props = rng.dirichlet(np.ones(3), size=15)
    checked = check_bags(lists, props, n_samples=40)
    bag_props = checked.props
    X = rng.normal(size=(40, 3))
    dataset = BagDataset(as_tensor(X), checked)
    assert dataset.overlapping
    sampler = BagBatchSampler(dataset.pair_bags, batch_size=20, random_state=0)
    seen_bags = 0
    for pairs in sampler:
        rows, target = dataset[pairs]
        n_bags = len(target["bag_props"])
        means = segment_mean(rows[target["members"]], target["segments"], n_bags)
        means = means.numpy()
        bag_of_pair = dataset.pair_bags[pairs]
        first = np.sort(np.unique(bag_of_pair, return_index=True)[1])
        for local, bag in enumerate(bag_of_pair[first]):  # numbered as they come
            expected = X[np.sort(lists[bag])].mean(0)
            np.testing.assert_allclose(means[local], expected, rtol=1e-5)
            np.testing.assert_allclose(target["bag_props"][local], bag_props[bag])
        # every instance of the batch is computed once
        assert len(rows) == len(np.unique(dataset.bags.members[pairs]))
        seen_bags += len(target["bag_props"])
    assert seen_bags == 15


@pytest.mark.slow
def test_overlapping_bags_learn_digits(digits_bags):
    X_train, _, _, y_train, X_test, y_test = digits_bags
    rng = np.random.RandomState(1)
    n = len(X_train)
    # Two independent partitions into bags of 32: every image is in 2 bags.
    split = lambda: np.array_split(rng.permutation(n), n // 32)  # noqa: E731
    lists = [*split(), *split()]
    onehot = np.eye(10)[y_train]
    props = np.stack([onehot[rows].mean(0) for rows in lists])
    clf = LLPClassifier(method="vat", random_state=0, verbose=0)
    clf.fit(X_train, lists, props)
    assert np.mean(clf.predict(X_test) == y_test) >= 0.90
