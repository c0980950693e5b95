"""LLPFC (Zhang, Wang & Scott 2022): transition matrices, the forward-corrected
loss against hand computations (a leftover bag weighs 0), and the grouping
schedule."""

import numpy as np
import pytest
import torch

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.methods import LLPFC, BagBatch
from sklearn_llp.methods.functional import (
    forward_correction_loss,
    llpfc_transition_matrices,
)


def test_transition_matrix_by_hand():
    # one group of 3 bags, 3 classes; n = sizes, p = proportions
    props = np.array([[0.5, 0.5, 0.0], [0.25, 0.25, 0.5], [0.0, 0.0, 1.0]])
    sizes = np.array([4.0, 8.0, 2.0])
    # joint n_i p_ic: [[2, 2, 0], [2, 2, 4], [0, 0, 2]]; class masses 4, 4, 6
    expected = [[2 / 4, 2 / 4, 0], [2 / 4, 2 / 4, 0], [0, 4 / 6, 2 / 6]]
    T = llpfc_transition_matrices(props[None], sizes[None])
    np.testing.assert_allclose(T[0], expected)


def test_transition_matrix_rows_and_columns():
    rng = np.random.RandomState(0)
    props = rng.dirichlet(np.ones(4), size=(6, 4))  # 6 groups of 4 bags
    sizes = rng.randint(1, 50, size=(6, 4)).astype(float)
    T = llpfc_transition_matrices(props, sizes)
    assert T.shape == (6, 4, 4) and np.all(T >= 0)
    np.testing.assert_allclose(T.sum(axis=2), 1.0)  # P(bag | class)
    # with the clean prior pi_c of the pooled group, pi_c T[c, i] is the
    # joint sigma_i p_ic of class and bag (sigma_i: the group's share in bag i)
    sigma = sizes / sizes.sum(1, keepdims=True)
    pi = np.einsum("gi,gic->gc", sigma, props)
    joint = (sigma[:, :, None] * props).transpose(0, 2, 1)
    np.testing.assert_allclose(pi[:, :, None] * T, joint)


def test_absent_class_row_is_the_noisy_prior_and_singular_groups_are_kept():
    props = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.5, 0.0]])
    T = llpfc_transition_matrices(props[None], np.array([[1.0, 2.0, 1.0]]))[0]
    np.testing.assert_allclose(T[2], [0.25, 0.5, 0.25])  # class 2 in no bag
    np.testing.assert_allclose(T.sum(1), 1.0)
    assert np.linalg.matrix_rank(T) < 3  # bags 1 and 2 look the same
    bags = check_bags(np.repeat([0, 1, 2], [1, 2, 1]), np.repeat(props, [1, 2, 1], 0))
    method = LLPFC().prepare(bags, np.random.RandomState(0))
    assert method.n_singular_groups_ == 1
    segments = torch.tensor([0, 1, 1, 2])
    batch = BagBatch(segments, torch.tensor(props), bag_index=torch.arange(3))
    logits = torch.randn(4, 3, dtype=torch.float64)
    assert torch.isfinite(method.get_loss(None, None, logits, batch, 0, 1))


def test_forward_correction_loss_by_hand():
    log_probs = torch.tensor(np.log([[0.8, 0.1, 0.1], [0.2, 0.2, 0.6]]))
    columns = torch.tensor([[0.5, 0.0, 0.25], [0.0, 1.0, 0.5]])
    per_row = -np.log([0.425, 0.5])  # sum_c q_c T[c, noisy]
    loss = forward_correction_loss(log_probs, columns)
    np.testing.assert_allclose(loss.numpy(), per_row)
    weights = torch.tensor([1.0, 3.0], dtype=torch.float64)
    mean = forward_correction_loss(log_probs, columns, weights)
    assert mean.item() == pytest.approx((per_row[0] + 3 * per_row[1]) / 4)
    zero = forward_correction_loss(log_probs, columns, torch.zeros(2).double())
    assert zero.item() == 0.0


@pytest.mark.parametrize(
    "weighted, rows, expected_weights",
    [
        (False, [0, 1, 2, 3], [1, 1, 1, 1]),
        (True, [0, 1, 2, 3], [1, 2, 2, 1]),
        (False, [0, 1, 2, 3, 4], [1, 1, 1, 1, 0]),  # c left over: weight 0
        (True, [0, 1, 2, 3, 4], [1, 2, 2, 1, 0]),
    ],
)
def test_llpfc_loss_of_a_tiny_batch_by_hand(weighted, rows, expected_weights):
    """Bags "a" (rows 0, 2, 3, proportions [2/3, 1/3]), "b" (row 1, class 1)
    and "c" (row 4, class 0, left over); the batch holds ``rows``, whole bags,
    "b" numbered first. One group of a and b: joint n_i p_ic a [2, 1], b [0, 1],
    T[:, a] = [2/2, 1/2], T[:, b] = [0/2, 1/2]; weighted sizes a 4, b 2: joint
    a [8/3, 4/3], b [0, 2], T[:, a] = [1, 0.4], T[:, b] = [0, 0.6]."""
    t = [0.4, 0.6] if weighted else [0.5, 0.5]  # T[1, a], T[1, b]
    columns = {"a": [1, t[0]], "b": [0, t[1]], "c": [0, t[1]]}  # c reads b's
    ids = np.array(["a", "b", "a", "a", "c"])
    props = np.array([[2 / 3, 1 / 3], [0, 1], [2 / 3, 1 / 3], [2 / 3, 1 / 3], [1, 0]])
    weights = np.array([1.0, 2.0, 2.0, 1.0, 3.0]) if weighted else None
    bags = check_bags(ids, props, sample_weight=weights)
    probs = np.array([[0.8, 0.2], [0.3, 0.7], [0.4, 0.6], [0.5, 0.5], [0.1, 0.9]])
    probs = probs[rows]
    batch = BagBatch(
        segments=torch.tensor([{"b": 0, "a": 1, "c": 2}[ids[r]] for r in rows]),
        bag_props=torch.tensor([[0.0, 1.0], [2 / 3, 1 / 3], [1.0, 0.0]]),
        weights=None if weights is None else torch.tensor(weights[rows]),
        bag_index=torch.tensor([1, 0, 2]),
    )
    method = LLPFC().prepare(bags, np.random.RandomState(3))
    assert method.groups_.tolist() == [0, 0, -1]
    per_row = -np.log((probs * [columns[ids[r]] for r in rows]).sum(1))
    w = np.array(expected_weights, dtype=float)
    loss = method.get_loss(None, None, torch.tensor(np.log(probs)), batch, 0, 1)
    assert loss.item() == pytest.approx((w * per_row).sum() / w.sum(), rel=1e-12)


def test_groups_and_their_matrices_follow_the_papers_formula():
    rng = np.random.RandomState(0)
    sizes = rng.randint(1, 10, 23)
    ids = rng.permutation(np.repeat(np.arange(23) * 7 % 31, sizes))
    codes = np.unique(ids, return_inverse=True)[1]
    bags = check_bags(ids, rng.dirichlet(np.ones(3), 23)[codes])
    method = LLPFC(regroup_every=None).prepare(bags, np.random.RandomState(3))
    # 23 bags, 3 classes: 7 groups of 3 and 2 leftover bags
    assert (method.groups_ < 0).sum() == 2
    assert np.bincount(method.groups_[method.groups_ >= 0]).tolist() == [3] * 7
    n = bags.total_weights()
    for g, T in enumerate(method.transitions_):  # T[c, i] = n_i p_ic / sum_j ...
        members = np.flatnonzero(method.groups_ == g)
        members = members[np.argsort(method.positions_[members])]
        assert method.positions_[members].tolist() == [0, 1, 2]
        joint = n[members, None] * bags.props[members]
        np.testing.assert_allclose(T, (joint / joint.sum(0)).T)


def test_device_tensors_are_built_once_per_grouping():
    props = np.repeat(np.eye(3)[[0, 1, 2] * 2], 2, 0)
    bags = check_bags(np.repeat(np.arange(6), 2), props)
    method = LLPFC(regroup_every=1).prepare(bags, np.random.RandomState(0))
    logits = torch.randn(5, 3, dtype=torch.float64)
    first = method.bag_tensor("transitions_", logits)
    assert method.bag_tensor("transitions_", logits) is first  # moved once
    method.on_epoch_begin(0)  # the first epoch keeps the first grouping
    assert method.bag_tensor("transitions_", logits) is first
    method.on_epoch_begin(1)
    assert method.n_regroupings_ == 2
    assert method.bag_tensor("transitions_", logits) is not first


def test_regrouping_follows_the_schedule_and_the_seed():
    rng = np.random.RandomState(0)
    bags = check_bags(np.arange(40), rng.dirichlet(np.ones(2), 40))

    def groupings(regroup_every, seed, n_epochs):
        method = LLPFC(regroup_every).prepare(bags, np.random.RandomState(seed))
        snapshots = []
        for epoch in range(n_epochs):
            method.on_epoch_begin(epoch)
            snapshots.append((method.groups_.tolist(), method.positions_.tolist()))
        return snapshots, method.n_regroupings_

    snaps, n = groupings(2, 0, 5)
    # epochs 0-1 on the first grouping, 2-3 on the second, 4 on the third
    assert snaps[0] == snaps[1] != snaps[2] == snaps[3] != snaps[4] and n == 3
    assert groupings(2, 0, 5) == (snaps, 3)  # seeded
    assert groupings(2, 1, 1)[0] != snaps[:1]
    assert groupings(None, 0, 4) == ([snaps[0]] * 4, 1)


def test_a_fit_learns_from_labels(small_bags):
    # (the schedule: above; a fit calls on_epoch_begin every epoch:
    # tests/test_fit_state.py)
    X, _, _, y = small_bags
    # every row its own bag: groups of 3 one-row bags, T from one-hot rows
    clf = LLPClassifier(method="llpfc", max_epochs=30, random_state=0, verbose=0)
    assert np.mean(clf.fit(X, y).predict(X) == y) > 0.8
