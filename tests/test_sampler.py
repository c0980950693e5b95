"""The whole-bag batch sampler."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_llp.neural._data import BagBatchSampler


def _codes(sizes, seed=0):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    np.random.RandomState(seed).shuffle(codes)
    return codes


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=30),
    batch_size=st.integers(1, 100),
    seed=st.integers(0, 1000),
)
def test_batches_never_split_a_bag_and_cover_every_instance_once(
    sizes, batch_size, seed
):
    codes = _codes(sizes, seed)
    sampler = BagBatchSampler(codes, batch_size, random_state=seed)
    for _ in range(2):  # two epochs
        batches = list(sampler)
        everything = np.concatenate(batches)
        assert np.array_equal(np.sort(everything), np.arange(len(codes)))
        bags_of_batches = [set(codes[b]) for b in batches]
        for i, bags in enumerate(bags_of_batches):
            for bag in bags:
                assert (codes[batches[i]] == bag).sum() == sizes[bag]
            assert len(batches[i]) < batch_size + max(sizes)


def test_uniform_bags_fill_batches_exactly():
    sampler = BagBatchSampler(_codes([16] * 20), batch_size=64, random_state=0)
    assert [len(b) for b in sampler] == [64] * 5
    assert len(sampler) == 5


def test_epochs_are_reshuffled_and_seeded():
    codes = _codes([5] * 30)
    first = list(BagBatchSampler(codes, 20, random_state=3))
    sampler = BagBatchSampler(codes, 20, random_state=3)
    second, third = list(sampler), list(sampler)
    assert all(np.array_equal(a, b) for a, b in zip(first, second))
    assert not all(np.array_equal(a, b) for a, b in zip(second, third))


def test_no_shuffle_keeps_bag_order():
    codes = np.array([1, 0, 1, 2, 0, 2])
    sampler = BagBatchSampler(codes, 2, shuffle=False)
    assert [list(b) for b in sampler] == [[1, 4], [0, 2], [3, 5]]


def test_large_bags_are_whole_and_packed_as_if_cut():
    codes = _codes([500, 10, 300, 20, 30])
    sampler = BagBatchSampler(codes, 64, max_bag_size=100, random_state=0)
    for _ in range(2):
        batches = list(sampler)
        assert np.array_equal(np.sort(np.concatenate(batches)), np.arange(len(codes)))
        for b in batches:  # every bag whole, and at most 64 + 100 rows as if cut
            assert set(np.bincount(codes[b])) <= {0, 500, 10, 300, 20, 30}
            assert np.minimum(np.bincount(codes[b]), 100).sum() <= 164


@pytest.mark.parametrize("max_bag_size", [None, 7])
def test_len_matches_the_batches_of_uniform_bags(max_bag_size):
    sampler = BagBatchSampler(_codes([10] * 12), 30, max_bag_size=max_bag_size)
    assert len(sampler) == len(list(sampler))
