"""EasyLLP (Busa-Fekete et al. 2023): the debiased loss against hand
computations (bags looked up by bag_index), its unbiasedness, and
the random-bags check. The bag_index lookup of every method with per-bag
state is in test_method_suite.py."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import NonRandomBagsWarning
from sklearn_llp.methods import BagBatch, EasyLLP
from sklearn_llp.methods._easyllp import _effective_sizes
from sklearn_llp.methods.functional import easyllp_loss

ALPHA_A, ALPHA_B = np.array([0.5, 0.25, 0.25]), np.array([0.0, 0.0, 1.0])
PROBS = np.random.RandomState(0).dirichlet(np.ones(3), 6)  # of the batch's rows
ORDER = [1, 4, 0, 2, 3, 5]  # the batch's rows: bag "b", then bag "a"


def tiny_problem(weights=None):
    """Bag "a": rows 0, 2, 3, 5, proportions ALPHA_A; bag "b": rows 1, 4,
    ALPHA_B. The batch holds both whole, "b" numbered first (rows ORDER)."""
    ids = np.array(["a", "b", "a", "a", "b", "a"])
    props = np.where((ids == "a")[:, None], ALPHA_A, ALPHA_B)
    bags = check_bags(ids, props, sample_weight=weights)
    batch = BagBatch(
        segments=torch.tensor([0, 0, 1, 1, 1, 1]),
        bag_props=torch.tensor(np.stack([ALPHA_B, ALPHA_A])),
        bag_index=torch.tensor([1, 0]),
        weights=None if weights is None else torch.tensor(weights[ORDER]),
    )
    return bags, torch.tensor(np.log(PROBS)), batch


def class_losses(q, loss):
    """``l(q, c)`` for every class ``c`` of predicted probabilities ``q``."""
    if loss == "square":
        return ((q[None, :] - np.eye(len(q))) ** 2).sum(1)  # ||q - e_c||^2
    return -np.log(q + (1e-8 if loss == "bounded_log" else 0.0))


@pytest.mark.parametrize("loss", ["log", "bounded_log", "square"])
def test_loss_of_a_batch_by_hand(loss):
    bags, logits, batch = tiny_problem()
    method = EasyLLP(loss=loss).prepare(bags, None)
    # prior over the 6 rows: (4 alpha_a + 2 alpha_b) / 6; soft labels k (alpha - p) + p
    p = np.array([2, 1, 3]) / 6
    np.testing.assert_allclose(method.class_prior_, p)
    soft_a, soft_b = 4 * (ALPHA_A - p) + p, 2 * (ALPHA_B - p) + p
    np.testing.assert_allclose(soft_a, [1.0, 0.5, -0.5])
    np.testing.assert_allclose(soft_b, [-1 / 3, -1 / 6, 1.5])
    soft = [soft_b] * 2 + [soft_a] * 4  # the batch's rows
    row = [s @ class_losses(q, loss) for s, q in zip(soft, PROBS)]
    expected = np.mean(row)  # every row weighs 1
    loss_value = method.get_loss(None, None, logits, batch, 0, 1).item()
    assert loss_value == pytest.approx(expected, rel=1e-12)
    if loss == "square":  # sum_c y_c ||q - e_c||^2 = ||q - y||^2 + 1 - ||y||^2
        s, q = soft_b, PROBS[1]
        assert row[1] == pytest.approx(((q - s) ** 2).sum() + 1 - (s**2).sum())


def test_weighted_loss_by_hand_and_scale_invariance():
    weights = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 1.0])  # a1 b1 a2 a3 b2 a4
    bags, logits, batch = tiny_problem(weights)
    method = EasyLLP(loss="log").prepare(bags, None)
    # W_a = 1 + 3 + 1 + 1 = 6, W_b = 4; prior (6 alpha_a + 4 alpha_b) / 10
    p = (6 * ALPHA_A + 4 * ALPHA_B) / 10
    np.testing.assert_allclose(method.class_prior_, p)
    np.testing.assert_allclose(method.bag_sizes_, [6, 4])
    # a row of weight w in a bag of total weight W: k = W / w, so
    # w y~ = W (alpha - p) + w p; the mean weighs the rows by w
    bag = [(4, ALPHA_B)] * 2 + [(6, ALPHA_A)] * 4
    rows = zip(weights[ORDER], bag, PROBS)
    terms = [-((W * (a - p) + w * p) * np.log(q)).sum() for w, (W, a), q in rows]
    expected = sum(terms) / (6 + 4)
    loss = method.get_loss(None, None, logits, batch, 0, 1)
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    scaled_bags, _, scaled_batch = tiny_problem(5 * weights)
    scaled = EasyLLP(loss="log").prepare(scaled_bags, None)
    scaled_loss = scaled.get_loss(None, None, logits, scaled_batch, 0, 1)
    assert scaled_loss.item() == pytest.approx(loss.item(), rel=1e-12)


def test_binary_case_is_the_papers_form_and_the_loss_can_be_negative():
    # y~ = k alpha - (k - 1) p; loss y~ l(h, 1) + (1 - y~) l(h, 0)
    k, p, alpha = 8, 0.3, np.array([0.125, 0.75])
    h = np.random.RandomState(0).uniform(0.05, 0.95, size=(16,))  # P(y = 1 | x)
    segments = np.repeat([0, 1], 8)
    soft = (k * alpha - (k - 1) * p)[segments]
    expected = np.mean(-soft * np.log(h) - (1 - soft) * np.log(1 - h))
    binary = np.stack([1 - h, h], 1), segments, np.stack([1 - alpha, alpha], 1)
    loss = easyllp(*binary, [8, 8], [1 - p, p])
    assert loss == pytest.approx(expected, rel=1e-12)
    assert soft[0] < 0  # a bag with few positives: negative soft label
    # a bag of 4 without class 1, prior 0.5: soft label [2.5, -1.5]; a row
    # predicting class 1 with probability exp(-20) has loss -1.5 * 20
    loss = easyllp(np.exp([[0.0, -20.0]]), [0], [[1.0, 0.0]], [4.0], [0.5, 0.5])
    assert loss == pytest.approx(-1.5 * 20, rel=1e-6)


def easyllp(probs, segments, props, sizes, prior):
    """easyllp_loss of float64 arrays, the logits from probabilities."""
    floats = [torch.tensor(np.asarray(a, float)) for a in (props, sizes, prior)]
    logits = torch.tensor(np.log(probs))
    return easyllp_loss(logits, torch.as_tensor(segments), *floats).item()


def test_easyllp_is_unbiased_for_random_bags():
    # Instances of 4 types with known posteriors; bags of k iid draws. For a
    # fixed predictor, the mean EasyLLP loss over many bags estimates the
    # instance-level cross-entropy with the true labels.
    rng = np.random.RandomState(0)
    posterior = [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.4, 0.3, 0.3]]
    posterior = np.array(posterior)
    logits_of_type = rng.normal(size=(4, 3))
    log_q = logits_of_type - np.log(np.exp(logits_of_type).sum(1, keepdims=True))
    expected = np.mean((posterior * -log_q).sum(1))  # types equally likely
    prior = posterior.mean(0)
    n_bags, k = 20000, 5
    types = rng.randint(0, 4, size=n_bags * k)
    u = rng.random_sample(len(types))[:, None]
    labels = (u > np.cumsum(posterior[types], 1)).sum(1)
    segments = np.repeat(np.arange(n_bags), k)
    alpha = np.zeros((n_bags, 3))
    np.add.at(alpha, (segments, labels), 1.0 / k)
    per_bag = easyllp(np.exp(log_q[types]), segments, alpha, np.full(n_bags, k), prior)
    # standard error of the mean of the bags' losses, from the bags
    soft = k * (alpha - prior) + prior
    bag_losses = (soft[segments] * -log_q[types]).sum(1).reshape(n_bags, k).mean(1)
    assert per_bag == pytest.approx(bag_losses.mean(), rel=1e-10)
    se = bag_losses.std() / math.sqrt(n_bags)
    assert abs(per_bag - expected) < 4 * se
    # the naive soft label (k = 1: the bag's proportions) is biased
    naive = np.mean((alpha[segments] * -log_q[types]).sum(1))
    assert abs(naive - expected) > 10 * se


def test_a_bag_of_one_row_gets_the_weighted_cross_entropy():
    rng = np.random.RandomState(0)
    labels, weights = rng.randint(0, 3, 7), rng.uniform(0.5, 3.0, 7)
    singles = check_bags(np.arange(7), np.eye(3)[labels], sample_weight=weights)
    logits, props = torch.tensor(rng.normal(size=(7, 3))), torch.eye(3)[labels]
    w = torch.tensor(weights)
    batch = BagBatch(torch.arange(7), props, torch.arange(7), weights=w)
    method = EasyLLP(loss="log").prepare(singles, None)
    loss = method.get_loss(None, None, logits, batch, 0, 1)
    ce = F.cross_entropy(logits, torch.tensor(labels), reduction="none")
    assert loss.item() == pytest.approx((ce @ w).item() / weights.sum())


def test_overlapping_bags_use_every_membership(small_bags):
    X, _, _, _ = small_bags
    lists = [np.arange(0, 50), np.arange(40, 90), np.arange(80, 120)]
    props = np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]])
    clf = LLPClassifier(method="easyllp", max_epochs=2, random_state=0, verbose=0)
    with pytest.warns(NonRandomBagsWarning):
        clf.fit(X, lists, props)
    # the prior counts every (bag, row) pair: 50 + 50 + 40 pairs
    expected = (50 * props[0] + 50 * props[1] + 40 * props[2]) / 140
    np.testing.assert_allclose(clf.method_.class_prior_, expected)
    assert np.all(np.isfinite(clf.history[:, "train_loss"]))


# --- Are the bags random? (issue 34, item 5) ---
def spread_warnings(order, weight_scale):
    """Messages of EasyLLP.prepare on 40 bags of 10 rows of 3 classes, the
    rows in random order or sorted by class, weighted by uniform(0.5, 2)
    times ``weight_scale``."""
    rng = np.random.RandomState(0)
    y = rng.randint(0, 3, 400)
    w = rng.uniform(0.5, 2.0, 400)
    rows = rng.permutation(400) if order == "random" else np.argsort(y, kind="stable")
    ids = np.empty(400, dtype=int)
    ids[rows] = np.arange(400) // 10
    props = np.zeros((40, 3))
    np.add.at(props, ids, np.eye(3)[y] * w[:, None])
    props /= props.sum(1, keepdims=True)
    bags = check_bags(ids, props[ids], sample_weight=weight_scale * w)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        EasyLLP().prepare(bags, None)
    return [str(w.message) for w in caught if w.category is NonRandomBagsWarning]


@pytest.mark.parametrize(
    "order, weight_scale, warns",
    # ("random", 100) warned "99.5 times" reading weights as rows; ("sorted",
    # 0.01) did not warn
    [("random", 1.0, False), ("random", 100.0, False)]
    + [("sorted", 1.0, True), ("sorted", 0.01, True)],
)
def test_the_random_bags_check_counts_rows_not_weight_units(order, weight_scale, warns):
    messages = spread_warnings(order, weight_scale)
    assert bool(messages) is warns
    if warns:  # the same spread, whatever the units of the weights
        assert messages == spread_warnings(order, 1.0)
        assert "vary 8.9 times as much as random bags" in messages[0]  # dof 39 x 2


def test_effective_size_of_a_weighted_bag_is_kish():
    # weights 1, 1, 2 in bag 0: (1 + 1 + 2)^2 / (1 + 1 + 4) = 8/3; bag 1 one row
    bags = check_bags([0, 0, 0, 1], [[0.5, 0.5]] * 3 + [[1.0, 0.0]])
    np.testing.assert_array_equal(_effective_sizes(bags), [3, 1])
    for scale in (1.0, 100.0):
        weighted = bags.with_weights(scale * np.array([1.0, 1.0, 2.0, 5.0]))
        np.testing.assert_allclose(_effective_sizes(weighted), [8 / 3, 1])
