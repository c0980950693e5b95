"""One ``random_state``, one result: CPU fits and bag generators are reproducible.

``LLPClassifier(random_state=int)`` seeds a fork of torch's RNG (network
initialisation, dropout masks, VAT directions, Pi-model noise), the bag
sampler's shuffles and the validation hold-out, so on the CPU two fits with
the same seed give bit-identical ``predict_proba``; another seed gives other
weights. The bag generators with a ``random_state`` draw identical bags
under one seed.
"""

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import (
    FeatureBagGenerator,
    KMeansBagGenerator,
    UniformBagGenerator,
)
from sklearn_llp.methods import available_methods

METHODS = available_methods()  # every registered method


def _tiny(**params):
    defaults = dict(
        module__hidden_sizes=(16,),
        max_epochs=3,
        batch_size=32,
        verbose=0,
        device="cpu",
    )
    return LLPClassifier(**{**defaults, **params})


def _three_fits(X, bags, props, **params):
    """predict_proba of seed 0, seed 0 again (a clone) and seed 1."""
    first = _tiny(random_state=0, **params).fit(X, bags, props)
    torch.manual_seed(12345)  # the global RNGs play no part
    np.random.seed(12345)  # noqa: NPY002
    again = clone(first).fit(X, bags, props)
    other = clone(first).set_params(random_state=1).fit(X, bags, props)
    return [clf.predict_proba(X) for clf in (first, again, other)]


def _assert_reproducible(X, bags, props, **params):
    first, again, other = _three_fits(X, bags, props, **params)
    assert first.dtype == np.float32
    assert np.array_equal(first, again), "same random_state, different result"
    assert not np.array_equal(first, other), "random_state had no effect"


@pytest.mark.parametrize("validation_fraction", [None, 0.25])
@pytest.mark.parametrize("method", METHODS)
def test_same_seed_bit_identical_for_every_method(
    small_bags, method, validation_fraction, device
):
    # device: SKLEARN_LLP_TEST_DEVICE (benchmarks/gpu_check.py sets cuda)
    X, bags, props, _ = small_bags
    _assert_reproducible(
        X,
        bags,
        props,
        method=method,
        validation_fraction=validation_fraction,
        device=device,
    )


@pytest.mark.parametrize("method", METHODS)
def test_dropout_masks_are_seeded(small_bags, method):
    X, bags, props, _ = small_bags
    _assert_reproducible(X, bags, props, method=method, module__dropout=0.3)


@pytest.mark.parametrize("method", [m for m in METHODS if m != "llpfc"])
def test_overlapping_bags_are_reproducible(small_bags, method, device):
    # llpfc refuses overlapping bags (an instance would get several labels)
    X, _, _, y = small_bags
    rng = np.random.RandomState(3)
    # 5 blocks of 24 rows, 5 overlapping bags inside each: 5 connected groups,
    # so validation can hold out whole groups
    lists = [
        24 * block + rng.choice(24, rng.randint(3, 15), replace=False)
        for block in range(5)
        for _ in range(5)
    ]
    props = np.stack([np.bincount(y[rows], minlength=3) / len(rows) for rows in lists])
    _assert_reproducible(
        X,
        lists,
        props,
        method=method,
        module__dropout=0.3,
        validation_fraction=0.2,
        max_bag_size=8,  # subsampling of large bags is seeded too
        device=device,
    )


def test_history_and_step_counts_repeat(small_bags):
    X, bags, props, _ = small_bags
    first = _tiny(random_state=5, validation_fraction=0.25).fit(X, bags, props)
    again = clone(first).fit(X, bags, props)
    for key in ("train_loss", "valid_loss", "valid_hard_l1"):
        assert first.history[:, key] == again.history[:, key]
    assert first.n_train_steps_ == again.n_train_steps_


def test_partial_fit_after_the_same_fit_repeats(small_bags):
    X, bags, props, _ = small_bags
    first = _tiny(random_state=2).fit(X, bags, props).partial_fit(X, bags, props)
    again = _tiny(random_state=2).fit(X, bags, props).partial_fit(X, bags, props)
    assert np.array_equal(first.predict_proba(X), again.predict_proba(X))


def test_random_state_instances_follow_scikit_learn(small_bags):
    # As in scikit-learn, a RandomState instance is advanced by every fit:
    # two instances in the same state give the same fit, one shared
    # instance gives a fresh draw each time.
    X, bags, props, _ = small_bags
    first = _tiny(random_state=np.random.RandomState(4)).fit(X, bags, props)
    again = _tiny(random_state=np.random.RandomState(4)).fit(X, bags, props)
    assert np.array_equal(first.predict_proba(X), again.predict_proba(X))
    shared = np.random.RandomState(4)
    one = _tiny(random_state=shared).fit(X, bags, props).predict_proba(X)
    two = _tiny(random_state=shared).fit(X, bags, props).predict_proba(X)
    assert not np.array_equal(one, two)


# --------------------------------------------------------------------------
# Bag generators.
# --------------------------------------------------------------------------
@pytest.fixture
def unstructured():
    """Rows without cluster structure, so K-means depends on its seed."""
    rng = np.random.RandomState(0)
    X = rng.uniform(size=(300, 3))
    y = rng.randint(0, 3, 300)
    return X, y


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: UniformBagGenerator(16, random_state=seed),
        lambda seed: UniformBagGenerator(7, drop_last=False, random_state=seed),
        lambda seed: KMeansBagGenerator(12, random_state=seed, minibatch=False),
        lambda seed: KMeansBagGenerator(12, random_state=seed, minibatch=True),
        lambda seed: KMeansBagGenerator(12, n_components=2, random_state=seed),
    ],
    ids=["uniform", "uniform-keep-last", "kmeans", "minibatch-kmeans", "pca-kmeans"],
)
def test_random_generators_repeat_under_one_seed_and_differ_across(unstructured, make):
    X, y = unstructured
    bags, props = make(0).make_bags(X, y)
    again_bags, again_props = make(0).make_bags(X, y)
    np.testing.assert_array_equal(bags, again_bags)
    np.testing.assert_array_equal(props, again_props)
    assert np.array_equal(make(0).fit_transform(X), bags)
    other = make(1).fit_transform(X)
    assert not np.array_equal(bags, other)


def test_feature_generator_is_deterministic(unstructured):
    X, y = unstructured
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(
        region=np.array(["north", "south", "east"])[y]
    )
    make = lambda: FeatureBagGenerator(["region", "a"], n_bins={"a": 4})  # noqa: E731
    bags, props = make().make_bags(frame, y)
    again_bags, again_props = make().make_bags(frame, y)
    np.testing.assert_array_equal(bags, again_bags)
    np.testing.assert_array_equal(props, again_props)
    # Shuffling the rows moves every row with its bag: the same groups.
    order = np.random.RandomState(1).permutation(len(frame))
    shuffled = make().fit_transform(frame.iloc[order])
    np.testing.assert_array_equal(shuffled, bags[order])
