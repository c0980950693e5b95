"""EasyLLP (Busa-Fekete et al. 2023): the debiased loss against hand
computations, its unbiasedness, bag sizes through bag_index, the random-bags
check, and learning."""

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
from sklearn_llp.neural._data import BagBatchSampler, BagDataset

torch.set_num_threads(1)


def tiny_problem(weights=None):
    """Bag "a": 4 rows, proportions [0.5, 0.25, 0.25]; bag "b": 2 rows, [0, 0, 1].

    The batch holds rows a1, b1, a2 only (bags subsampled: 2 of a's 4 rows,
    1 of b's 2), bag "b" first: k must be the full sizes 4 and 2.
    """
    ids = np.array(["a", "b", "a", "a", "b", "a"])
    props_a, props_b = [0.5, 0.25, 0.25], [0.0, 0.0, 1.0]
    props = np.array([props_a, props_b, props_a, props_a, props_b, props_a])
    bags = check_bags(ids, props, sample_weight=weights)
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.2, 0.5, 0.3]])
    batch_rows = np.array([0, 1, 2])  # a1, b1, a2
    batch = BagBatch(
        segments=torch.tensor([1, 0, 1]),
        bag_props=torch.tensor([props_b, props_a], dtype=torch.float64),
        weights=None if weights is None else torch.tensor(weights[batch_rows]),
        bag_index=torch.tensor([1, 0]),
    )
    return bags, torch.tensor(np.log(probs)), batch, probs


ALPHA_A, ALPHA_B = np.array([0.5, 0.25, 0.25]), np.array([0.0, 0.0, 1.0])


def class_losses(q, loss):
    """``l(q, c)`` for every class ``c`` of predicted probabilities ``q``."""
    if loss == "log":
        return -np.log(q)
    if loss == "bounded_log":
        return -np.log(q + 1e-8)
    return ((q[None, :] - np.eye(len(q))) ** 2).sum(1)  # ||q - e_c||^2


@pytest.mark.parametrize("loss", ["log", "bounded_log", "square"])
def test_loss_of_a_tiny_batch_by_hand(loss):
    bags, logits, batch, probs = tiny_problem()
    method = EasyLLP(loss=loss).prepare(bags, None)
    # prior over the 6 rows: (4 alpha_a + 2 alpha_b) / 6; soft labels k (alpha - p) + p
    p = np.array([2, 1, 3]) / 6
    np.testing.assert_allclose(method.class_prior_, p)
    soft_a, soft_b = 4 * (ALPHA_A - p) + p, 2 * (ALPHA_B - p) + p
    np.testing.assert_allclose(soft_a, [1.0, 0.5, -0.5])
    np.testing.assert_allclose(soft_b, [-1 / 3, -1 / 6, 1.5])
    rows = [(soft_a, probs[0]), (soft_b, probs[1]), (soft_a, probs[2])]
    per_row = [soft @ class_losses(q, loss) for soft, q in rows]
    loss_value = method.get_loss(None, None, logits, batch, 0, 1).item()
    assert loss_value == pytest.approx(np.mean(per_row), rel=1e-12)
    if loss == "square":  # sum_c y_c ||q - e_c||^2 = ||q - y||^2 + 1 - ||y||^2
        s, q = soft_b, probs[1]
        assert per_row[1] == pytest.approx(((q - s) ** 2).sum() + 1 - (s**2).sum())


def test_binary_case_is_the_papers_form():
    # y~ = k alpha - (k - 1) p; loss y~ l(h, 1) + (1 - y~) l(h, 0)
    rng = np.random.RandomState(0)
    k, p, alpha = 8, 0.3, np.array([0.125, 0.75])
    h = rng.uniform(0.05, 0.95, size=(16,))  # P(y = 1 | x)
    segments = np.repeat([0, 1], 8)
    soft = k * alpha - (k - 1) * p
    expected = np.mean(
        -soft[segments] * np.log(h) - (1 - soft[segments]) * np.log(1 - h)
    )
    loss = easyllp_loss(
        torch.tensor(np.log(np.stack([1 - h, h], 1))),
        torch.tensor(segments),
        torch.tensor(np.stack([1 - alpha, alpha], 1)),
        torch.tensor([8.0, 8.0], dtype=torch.float64),
        torch.tensor([1 - p, p], dtype=torch.float64),
    )
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    assert soft[0] < 0  # a bag with few positives: negative soft label


def test_loss_can_be_negative():
    # a bag of 4 without class 1, prior 0.5: soft label [2.5, -1.5]; predicting
    # class 1 unlikely (log-probability about -20) makes the loss negative
    f64 = dict(dtype=torch.float64)
    loss = easyllp_loss(
        torch.tensor([[0.0, -20.0]], **f64),
        torch.tensor([0]),
        torch.tensor([[1.0, 0.0]], **f64),
        torch.tensor([4.0], **f64),
        torch.tensor([0.5, 0.5], **f64),
    )
    assert loss.item() == pytest.approx(-1.5 * 20, rel=1e-6)


def test_easyllp_is_unbiased_for_random_bags():
    # Instances of 4 types with known posteriors; bags of k iid draws. For a
    # fixed predictor, the mean EasyLLP loss over many bags estimates the
    # instance-level cross-entropy with the true labels.
    rng = np.random.RandomState(0)
    posterior = np.array(
        [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.4, 0.3, 0.3]]
    )
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
    per_bag = easyllp_loss(
        torch.tensor(logits_of_type[types]),
        torch.tensor(segments),
        torch.tensor(alpha),
        torch.full((n_bags,), float(k), dtype=torch.float64),
        torch.tensor(prior),
    ).item()
    # standard error of the mean of the bags' losses, from the bags
    soft = k * (alpha - prior) + prior
    bag_losses = (soft[segments] * -log_q[types]).sum(1).reshape(n_bags, k).mean(1)
    assert per_bag == pytest.approx(bag_losses.mean(), rel=1e-10)
    se = bag_losses.std() / math.sqrt(n_bags)
    assert abs(per_bag - expected) < 4 * se
    # the naive soft label (k = 1: the bag's proportions) is biased
    naive = np.mean((alpha[segments] * -log_q[types]).sum(1))
    assert abs(naive - expected) > 10 * se


# ---------------------------------------------------------------------------
# Sample weights
# ---------------------------------------------------------------------------
def test_weighted_loss_by_hand_and_scale_invariance():
    weights = np.array([1.0, 2.0, 3.0, 1.0, 2.0, 1.0])  # a1 b1 a2 a3 b2 a4
    bags, logits, batch, probs = tiny_problem(weights)
    method = EasyLLP(loss="log").prepare(bags, None)
    # W_a = 1 + 3 + 1 + 1 = 6, W_b = 4; prior (6 alpha_a + 4 alpha_b) / 10
    alpha_a, alpha_b = ALPHA_A, ALPHA_B
    p = (6 * alpha_a + 4 * alpha_b) / 10
    np.testing.assert_allclose(method.class_prior_, p)
    np.testing.assert_allclose(method.bag_sizes_, [6, 4])
    # a row of weight w in a bag of total weight W: k = W / w, so
    # w * y~ = W (alpha - p) + w p
    rows = [(1.0, 6, alpha_a, probs[0]), (2.0, 4, alpha_b, probs[1])]
    rows.append((3.0, 6, alpha_a, probs[2]))
    total = sum(
        -((W * (alpha - p) + w * p) * np.log(q)).sum() for w, W, alpha, q in rows
    )
    expected = total / (1 + 2 + 3)
    loss = method.get_loss(None, None, logits, batch, 0, 1)
    assert loss.item() == pytest.approx(expected, rel=1e-12)

    scaled_bags, _, scaled_batch, _ = tiny_problem(5 * weights)
    scaled = EasyLLP(loss="log").prepare(scaled_bags, None)
    assert scaled.get_loss(None, None, logits, scaled_batch, 0, 1).item() == (
        pytest.approx(loss.item(), rel=1e-12)
    )


def test_unit_weights_and_singleton_bags():
    bags, logits, batch, _ = tiny_problem()
    method = EasyLLP(loss="log").prepare(bags, None)
    loss = method.get_loss(None, None, logits, batch, 0, 1)
    ones = batch._replace(weights=torch.ones(3, dtype=torch.float64))
    unit = method.get_loss(None, None, logits, ones, 0, 1)
    assert unit.item() == pytest.approx(loss.item(), rel=1e-12)

    # one row per bag: y~ = alpha, the weighted cross-entropy
    rng = np.random.RandomState(0)
    labels = rng.randint(0, 3, 7)
    weights = rng.uniform(0.5, 3.0, 7)
    singles = check_bags(np.arange(7), np.eye(3)[labels], sample_weight=weights)
    logits = torch.tensor(rng.normal(size=(7, 3)))
    batch = BagBatch(
        torch.arange(7),
        torch.tensor(np.eye(3)[labels]),
        weights=torch.tensor(weights),
        bag_index=torch.arange(7),
    )
    loss = EasyLLP(loss="log").prepare(singles, None)
    loss = loss.get_loss(None, None, logits, batch, 0, 1)
    expected = (
        F.cross_entropy(logits, torch.tensor(labels), reduction="none")
        @ torch.tensor(weights)
        / weights.sum()
    )
    assert loss.item() == pytest.approx(expected.item(), rel=1e-12)


# ---------------------------------------------------------------------------
# bag_index with the real batch sampler
# ---------------------------------------------------------------------------
def reference_loss(bags, rows, logits):
    """Row by row, with each bag's full size and the training prior."""
    sizes = bags.total_weights()
    prior = sizes @ bags.props / sizes.sum()
    log_q = torch.log_softmax(logits, 1).numpy()
    w = np.ones(bags.n_samples) if bags.weights is None else bags.weights
    total = 0.0
    for r, row in enumerate(rows):
        bag = bags.codes[row]
        soft_times_w = sizes[bag] * (bags.props[bag] - prior) + w[row] * prior
        total += -(soft_times_w * log_q[r]).sum()
    return total / w[rows].sum()


@pytest.mark.parametrize("weighted", [False, True])
def test_bag_index_lookup_with_shuffled_batches_and_subsampled_bags(weighted):
    rng = np.random.RandomState(0)
    n_bags, sizes = 15, rng.randint(1, 12, 15)
    ids = rng.permutation(np.repeat(np.arange(n_bags) * 5 % 17, sizes))
    codes = np.unique(ids, return_inverse=True)[1]
    props = rng.dirichlet(np.ones(4), n_bags)[codes]
    weights = rng.uniform(0.5, 2.0, len(ids)) if weighted else None
    bags = check_bags(ids, props, sample_weight=weights)
    method = EasyLLP(loss="log").prepare(bags, None)

    dataset = BagDataset(torch.zeros(bags.n_samples, 1), bags)
    logits_of_row = torch.randn(bags.n_samples, 4, dtype=torch.float64)
    sampler = BagBatchSampler(
        dataset.pair_bags, batch_size=12, max_bag_size=5, shuffle=True, random_state=0
    )
    n_subsampled = 0
    for pairs in sampler:
        _, target = dataset[pairs]
        rows = bags.members[pairs]
        in_batch = np.bincount(bags.codes[rows], minlength=n_bags)
        n_subsampled += np.sum((in_batch > 0) & (in_batch < bags.sizes))
        batch = BagBatch(
            target["segments"],
            target["bag_props"],
            weights=target.get("weights"),
            bag_index=target["bag_index"],
        )
        loss = method.get_loss(None, None, logits_of_row[rows], batch, 0, 1)
        expected = reference_loss(bags, rows, logits_of_row[rows])
        assert loss.item() == pytest.approx(expected, rel=1e-5, abs=1e-6)
    assert n_subsampled > 0


def test_overlapping_bags_use_every_membership(small_bags):
    X, _, _, _ = small_bags
    lists = [np.arange(0, 50), np.arange(40, 90), np.arange(80, 120)]
    props = np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]])
    clf = LLPClassifier(method="easyllp", max_epochs=2, random_state=0, verbose=0)
    clf.fit(X, lists, props)
    # the prior counts every (bag, row) pair: 50 + 50 + 40 pairs
    np.testing.assert_allclose(
        clf.method_.class_prior_, (50 * props[0] + 50 * props[1] + 40 * props[2]) / 140
    )
    assert np.all(np.isfinite(clf.history[:, "train_loss"]))


# ---------------------------------------------------------------------------
# Are the bags random? (issue 34, item 5)
# ---------------------------------------------------------------------------
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
    [
        ("random", 1.0, False),
        ("random", 100.0, False),  # warned "99.5 times" reading weights as rows
        ("sorted", 1.0, True),
        ("sorted", 0.01, True),  # did not warn
    ],
)
def test_the_random_bags_check_counts_rows_not_weight_units(order, weight_scale, warns):
    messages = spread_warnings(order, weight_scale)
    assert bool(messages) is warns
    if warns:  # the same spread, whatever the units of the weights
        assert messages == spread_warnings(order, 1.0)
        assert "vary 8.7 times as much as random bags" in messages[0]


def test_effective_size_of_a_weighted_bag_is_kish():
    # weights 1, 1, 2 in bag 0: (1 + 1 + 2)^2 / (1 + 1 + 4) = 8/3; bag 1 one row
    bags = check_bags([0, 0, 0, 1], [[0.5, 0.5]] * 3 + [[1.0, 0.0]])
    np.testing.assert_array_equal(_effective_sizes(bags), [3, 1])
    weighted = bags.with_weights([1.0, 1.0, 2.0, 5.0])
    np.testing.assert_allclose(_effective_sizes(weighted), [8 / 3, 1])
    scaled = bags.with_weights([100.0, 100.0, 200.0, 500.0])
    np.testing.assert_allclose(_effective_sizes(scaled), [8 / 3, 1])


# ---------------------------------------------------------------------------
# Learning
# ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("loss", ["log", "square"])
def test_easyllp_learns_digits_from_bags_of_16(digits_bags, loss):
    X_train, bags, props, _, X_test, y_test = digits_bags
    clf = LLPClassifier(
        method="easyllp", method__loss=loss, max_epochs=10, random_state=0, verbose=0
    )
    clf.fit(X_train, bags, props)
    assert isinstance(clf.method_, EasyLLP)
    assert np.mean(clf.predict(X_test) == y_test) > 0.75
