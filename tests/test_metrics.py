"""Bag metrics and scorers of sklearn_llp.metrics."""

import math

import numpy as np
import pandas as pd
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import accuracy_score
from sklearn.utils.metadata_routing import get_routing_for_object

from sklearn_llp.metrics import (
    BAG_METRICS,
    KL_EPS,
    BagScorer,
    bag_errors,
    bag_table,
    hard_kl_error,
    hard_kl_scorer,
    hard_l1_error,
    hard_l1_scorer,
    make_bag_scorer,
    soft_kl_error,
    soft_kl_scorer,
    soft_l1_error,
    soft_l1_scorer,
)

FUNCTIONS = {
    "hard_l1": hard_l1_error,
    "soft_l1": soft_l1_error,
    "hard_kl": hard_kl_error,
    "soft_kl": soft_kl_error,
}
SCORERS = {
    "hard_l1": hard_l1_scorer,
    "soft_l1": soft_l1_scorer,
    "hard_kl": hard_kl_scorer,
    "soft_kl": soft_kl_scorer,
}


def test_import_leaves_metadata_routing_off():
    assert sklearn.get_config()["enable_metadata_routing"] is False


# --------------------------------------------------------------------------
# Hand-computed example: 2 bags, 2 classes.
#
# bag "A" (2 samples): p = [0.5, 0.5], y_proba = [0.8, 0.2], [0.4, 0.6]
#     hard estimate: argmax -> classes 0, 1       -> q_hard = [1/2, 1/2]
#     soft estimate: mean of rows                 -> q_soft = [0.6, 0.4]
# bag "B" (3 samples): p = [1, 0], y_proba = [0.9, 0.1], [0.3, 0.7], [0.9, 0.1]
#     hard estimate: argmax -> classes 0, 1, 0    -> q_hard = [2/3, 1/3]
#     soft estimate: mean of rows                 -> q_soft = [0.7, 0.3]
#
# hard L1 = (|.5-.5| + |.5-.5|   +  |1-2/3| + |0-1/3|) / 2 = (0 + 2/3) / 2 = 1/3
# soft L1 = (|.5-.6| + |.5-.4|   +  |1-.7| + |0-.3|)   / 2 = (0.2 + 0.6) / 2 = 0.4
# hard KL = (0  +  1 log(1 / (2/3)) + 0 log 0) / 2            = log(3/2) / 2
# soft KL = (.5 log(.5/.6) + .5 log(.5/.4)  +  1 log(1/.7)) / 2
#         = (0.5 log(25/24) + log(10/7)) / 2
# --------------------------------------------------------------------------
HAND_BAGS = np.array(["A", "A", "B", "B", "B"])
HAND_PROPS = np.array([[0.5, 0.5], [0.5, 0.5], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
HAND_PROBA = np.array([[0.8, 0.2], [0.4, 0.6], [0.9, 0.1], [0.3, 0.7], [0.9, 0.1]])
HAND_EXPECTED = {
    "hard_l1": 1 / 3,
    "soft_l1": 0.4,
    "hard_kl": math.log(1.5) / 2,
    "soft_kl": (0.5 * math.log(25 / 24) + math.log(10 / 7)) / 2,
}
HAND_PROPS_FORMS = {
    "sample_aligned": HAND_PROPS,
    "fraction": HAND_PROPS[:, 1],
    "frame": pd.DataFrame([[0.5, 0.5], [1.0, 0.0]], index=["A", "B"]),
    "series": pd.Series({"A": 0.5, "B": 0.0}),
    "dict": {"A": [0.5, 0.5], "B": [1.0, 0.0]},
}


@pytest.mark.parametrize("form", HAND_PROPS_FORMS)
@pytest.mark.parametrize("metric", BAG_METRICS)
def test_hand_computed_values(metric, form):
    props = HAND_PROPS_FORMS[form]
    value = FUNCTIONS[metric](HAND_BAGS, props, HAND_PROBA)
    assert isinstance(value, float)
    assert value == pytest.approx(HAND_EXPECTED[metric], rel=1e-9)


def test_bag_errors_returns_all_four_at_once():
    errors = bag_errors(HAND_BAGS, HAND_PROPS, HAND_PROBA)
    assert list(errors) == list(BAG_METRICS)
    for metric, value in errors.items():
        assert value == pytest.approx(HAND_EXPECTED[metric], rel=1e-9)
    subset = bag_errors(HAND_BAGS, HAND_PROPS, HAND_PROBA, metrics=["soft_kl"])
    assert list(subset) == ["soft_kl"]
    with pytest.raises(ValueError, match="metrics must be among"):
        bag_errors(HAND_BAGS, HAND_PROPS, HAND_PROBA, metrics=["accuracy"])


def test_binary_proba_as_positive_class_column():
    assert hard_l1_error(HAND_BAGS, HAND_PROPS, HAND_PROBA[:, 1]) == pytest.approx(
        HAND_EXPECTED["hard_l1"]
    )


def test_classes_reorder_a_labelled_table():
    table = pd.DataFrame({"neg": [0.5, 1.0], "pos": [0.5, 0.0]}, index=["A", "B"])
    flipped = table[["pos", "neg"]]
    expected = soft_kl_error(HAND_BAGS, table, HAND_PROBA, classes=["neg", "pos"])
    assert expected == pytest.approx(HAND_EXPECTED["soft_kl"])
    got = soft_kl_error(HAND_BAGS, flipped, HAND_PROBA, classes=["neg", "pos"])
    assert got == pytest.approx(expected)


def test_kl_zero_when_estimates_equal_props_and_positive_otherwise():
    # Bag 0: p = [1/4, 3/4] and 1 of 4 predictions is class 0.
    # Bag 1: p = [1/2, 1/2] and 1 of 2 predictions is class 0.
    bags = np.array([0, 0, 0, 0, 1, 1])
    props = np.array([[0.25, 0.75]] * 4 + [[0.5, 0.5]] * 2)
    hard_proba = np.array(
        [[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.1, 0.9], [0.6, 0.4], [0.3, 0.7]]
    )
    assert hard_kl_error(bags, props, hard_proba) == pytest.approx(0.0, abs=1e-12)
    assert hard_l1_error(bags, props, hard_proba) == pytest.approx(0.0, abs=1e-12)
    # Every row equal to its bag's proportions: soft estimate == p.
    assert soft_kl_error(bags, props, props) == pytest.approx(0.0, abs=1e-12)
    assert soft_l1_error(bags, props, props) == pytest.approx(0.0, abs=1e-12)

    worse = hard_proba.copy()
    worse[0] = [0.1, 0.9]  # bag 0 now predicts 0 of 4 as class 0
    assert hard_kl_error(bags, props, worse) > 1e-3
    assert soft_kl_error(bags, props, worse) > 1e-3


def test_soft_kl_is_cross_entropy_minus_entropy():
    rng = np.random.default_rng(0)
    bags = rng.integers(0, 6, size=60)
    bag_props = rng.dirichlet(np.ones(3), size=6)
    props = bag_props[bags]
    proba = rng.dirichlet(np.ones(3), size=60)
    # Bag means by hand, bag by bag.
    q = np.array([proba[bags == b].mean(axis=0) for b in range(6)])
    cross_entropy = -(bag_props * np.log(q)).sum(axis=1).mean()
    entropy = -(bag_props * np.log(bag_props)).sum(axis=1).mean()
    kl = soft_kl_error(bags, props, proba)
    assert kl == pytest.approx(cross_entropy - entropy, rel=1e-9)
    assert kl < cross_entropy - 1e-3  # not the cross-entropy


def test_kl_clips_unpredicted_classes_to_eps():
    # Every prediction class 0, so q_hard = [1, 0] in both bags.
    # Bag 0, p = [1/2, 1/2]: q is raised to [1, eps] / (1 + eps).
    # Bag 1, p = [1, 0]: the class with p_k = 0 is left alone, KL = 0 exactly.
    bags = np.array([0, 0, 1, 1])
    props = np.array([[0.5, 0.5]] * 2 + [[1.0, 0.0]] * 2)
    proba = np.array([[0.9, 0.1]] * 4)
    q = np.array([1.0, KL_EPS]) / (1 + KL_EPS)
    bag0 = 0.5 * math.log(0.5 / q[0]) + 0.5 * math.log(0.5 / q[1])
    value = hard_kl_error(bags, props, proba)
    assert np.isfinite(value)
    assert value == pytest.approx(bag0 / 2, rel=1e-9)
    assert hard_kl_error(bags[2:], props[2:], proba[2:]) == 0.0


def test_single_bag_is_accepted():
    props = np.array([[0.5, 0.5]] * 2)
    proba = np.array([[0.8, 0.2], [0.4, 0.6]])
    assert hard_l1_error(["x", "x"], props, proba) == pytest.approx(0.0)
    assert soft_l1_error(["x", "x"], {"x": 0.5}, proba) == pytest.approx(0.2)


# --------------------------------------------------------------------------
# Properties over random bag layouts.
# --------------------------------------------------------------------------
@st.composite
def bag_problems(draw):
    """Random bags, per-bag proportions (some classes absent) and y_proba."""
    sizes = draw(st.lists(st.integers(1, 6), min_size=1, max_size=8))
    n_classes = draw(st.integers(2, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n_bags = len(sizes)
    codes = rng.permutation(np.repeat(np.arange(n_bags), sizes))
    bag_props = rng.dirichlet(np.full(n_classes, 0.5), size=n_bags)
    bag_props[rng.random((n_bags, n_classes)) < 0.3] = 0.0  # some 0 log 0
    empty = bag_props.sum(axis=1) == 0
    bag_props[empty, 0] = 1.0
    bag_props /= bag_props.sum(axis=1, keepdims=True)
    proba = rng.dirichlet(np.full(n_classes, 0.5), size=len(codes))
    return codes, bag_props, proba, rng


@settings(max_examples=60, deadline=None, database=None)
@given(bag_problems())
def test_bounds_and_bag_errors_agree(problem):
    codes, bag_props, proba, _ = problem
    props = bag_props[codes]
    errors = bag_errors(codes, props, proba)
    for metric, value in errors.items():
        assert np.isfinite(value)
        assert value == pytest.approx(FUNCTIONS[metric](codes, props, proba))
    n_classes = proba.shape[1]
    kl_max = math.log((1 + n_classes * KL_EPS) / KL_EPS)
    assert -1e-12 <= errors["hard_l1"] <= 2 + 1e-12
    assert -1e-12 <= errors["soft_l1"] <= 2 + 1e-12
    assert 0.0 <= errors["hard_kl"] <= kl_max
    assert 0.0 <= errors["soft_kl"] <= kl_max


@settings(max_examples=40, deadline=None, database=None)
@given(bag_problems())
def test_relabelling_bags_and_reordering_samples_changes_nothing(problem):
    codes, bag_props, proba, rng = problem
    props = bag_props[codes]
    expected = bag_errors(codes, props, proba)
    names = np.array([f"bag-{i}" for i in rng.permutation(len(bag_props)) * 7 + 3])
    order = rng.permutation(len(codes))
    relabelled = bag_errors(names[codes][order], props[order], proba[order])
    for metric in BAG_METRICS:
        assert relabelled[metric] == pytest.approx(expected[metric], abs=1e-12)
    tables = [dict(zip(names, bag_props))]
    if len(bag_props) != len(codes):
        # with one row per sample a DataFrame reads as sample-aligned
        tables.append(pd.DataFrame(bag_props, index=names))
    for table in tables:
        from_table = bag_errors(names[codes], table, proba)
        for metric in BAG_METRICS:
            assert from_table[metric] == pytest.approx(expected[metric], abs=1e-12)


@settings(max_examples=40, deadline=None, database=None)
@given(
    st.integers(2, 30).flatmap(
        lambda n: st.tuples(
            st.lists(st.integers(0, 2), min_size=n, max_size=n),
            st.integers(0, 2**32 - 1),
        )
    )
)
def test_singleton_bags_hard_l1_is_twice_the_error_rate(data):
    labels, seed = data
    labels = np.array(labels)
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(3), size=len(labels))
    props = np.eye(3)[labels]
    bags = np.arange(len(labels))
    accuracy = accuracy_score(labels, proba.argmax(axis=1))
    assert 1 - hard_l1_error(bags, props, proba) / 2 == pytest.approx(accuracy)


# --------------------------------------------------------------------------
# Scorers.
# --------------------------------------------------------------------------
class FixedProba(ClassifierMixin, BaseEstimator):
    """Predicts stored probabilities; X holds row numbers."""

    def __init__(self, proba=None, classes=(0, 1)):
        self.proba = proba
        self.classes = classes

    def fit(self, X, y=None, props=None):
        self.classes_ = np.asarray(self.classes)
        return self

    def predict_proba(self, X):
        return np.asarray(self.proba)[np.asarray(X)[:, 0].astype(int)]


HAND_X = np.arange(len(HAND_BAGS))[:, None]


@pytest.mark.parametrize("metric", BAG_METRICS)
def test_scorer_is_minus_the_error(metric):
    estimator = FixedProba(HAND_PROBA).fit(HAND_X)
    score = SCORERS[metric](estimator, HAND_X, HAND_BAGS, props=HAND_PROPS)
    assert score == pytest.approx(-HAND_EXPECTED[metric])
    table_scorer = make_bag_scorer(metric, bags=HAND_BAGS, props=HAND_PROPS)
    assert table_scorer(estimator, HAND_X, HAND_BAGS) == pytest.approx(score)


@pytest.mark.parametrize("metric", BAG_METRICS)
def test_scorer_greater_is_better(metric):
    labels = np.array([0, 1, 0, 0, 0])  # matches HAND_PROPS bag by bag
    good = FixedProba(np.eye(2)[labels] * 0.98 + 0.01).fit(HAND_X)
    bad = FixedProba(np.eye(2)[1 - labels] * 0.98 + 0.01).fit(HAND_X)
    scorer = SCORERS[metric]
    good_score = scorer(good, HAND_X, HAND_BAGS, props=HAND_PROPS)
    bad_score = scorer(bad, HAND_X, HAND_BAGS, props=HAND_PROPS)
    assert bad_score < good_score <= 0.0
    if metric.startswith("hard"):
        assert good_score == pytest.approx(0.0, abs=1e-12)


def test_scorers_request_props_under_routing():
    for scorer in SCORERS.values():
        request = get_routing_for_object(scorer)
        assert request.consumes("score", ["props", "sample_weight"]) == {
            "props",
            "sample_weight",
        }
    table_scorer = make_bag_scorer(bags=HAND_BAGS, props=HAND_PROPS)
    assert table_scorer.get_metadata_routing().consumes("score", ["props"]) == {"props"}


def test_scorer_without_props_raises_what_to_do():
    estimator = FixedProba(HAND_PROBA).fit(HAND_X)
    with pytest.raises(ValueError, match="received no label proportions") as info:
        hard_l1_scorer(estimator, HAND_X, HAND_BAGS)
    message = str(info.value)
    assert "enable_metadata_routing=True" in message
    assert "make_bag_scorer('hard_l1', bags=bags, props=props)" in message
    with pytest.raises(ValueError, match="bag id of every row"):
        hard_l1_scorer(estimator, HAND_X, None, props=HAND_PROPS)


def test_table_scorer_scores_a_subset_of_bags_and_reports_unknown_bags():
    estimator = FixedProba(HAND_PROBA).fit(HAND_X)
    scorer = make_bag_scorer("soft_l1", table=HAND_PROPS_FORMS["frame"])
    only_b = HAND_BAGS == "B"
    # Bag B alone: |1 - .7| + |0 - .3| = 0.6
    assert scorer(estimator, HAND_X[only_b], HAND_BAGS[only_b]) == pytest.approx(-0.6)
    with pytest.raises(ValueError, match="no row for 1 bag"):
        scorer(estimator, HAND_X, np.where(only_b, "B", "C"))


def test_table_scorer_matches_columns_to_classes_by_name():
    estimator = FixedProba(HAND_PROBA, classes=("neg", "pos")).fit(HAND_X)
    table = pd.DataFrame({"pos": [0.5, 0.0], "neg": [0.5, 1.0]}, index=["A", "B"])
    scorer = BagScorer("soft_kl", table=table)
    assert scorer(estimator, HAND_X, HAND_BAGS) == pytest.approx(
        -HAND_EXPECTED["soft_kl"]
    )
    # Routed sample-aligned DataFrame: matched by name too.
    frame = table.loc[HAND_BAGS].reset_index(drop=True)
    assert soft_kl_scorer(estimator, HAND_X, HAND_BAGS, props=frame) == pytest.approx(
        -HAND_EXPECTED["soft_kl"]
    )
    wrong = table.rename(columns={"pos": "cat", "neg": "dog"})
    with pytest.raises(ValueError, match="do not match classes"):
        BagScorer("soft_kl", table=wrong)(estimator, HAND_X, HAND_BAGS)


def test_routed_per_bag_table_equals_sample_aligned_props():
    estimator = FixedProba(HAND_PROBA).fit(HAND_X)
    for form, props in HAND_PROPS_FORMS.items():
        score = soft_kl_scorer(estimator, HAND_X, HAND_BAGS, props=props)
        assert score == pytest.approx(-HAND_EXPECTED["soft_kl"]), form


def test_routed_props_take_precedence_over_the_table():
    estimator = FixedProba(HAND_PROBA).fit(HAND_X)
    stale = {"A": [1.0, 0.0], "B": [0.0, 1.0]}
    scorer = make_bag_scorer("hard_l1", table=stale)
    routed = scorer(estimator, HAND_X, HAND_BAGS, props=HAND_PROPS)
    assert routed == pytest.approx(-HAND_EXPECTED["hard_l1"])
    assert scorer(estimator, HAND_X, HAND_BAGS) != pytest.approx(routed)


def test_scorer_construction_errors_and_repr():
    with pytest.raises(ValueError, match="metric must be one of"):
        BagScorer("accuracy")
    with pytest.raises(TypeError, match="per-bag table"):
        BagScorer("hard_l1", table=HAND_PROPS)
    with pytest.raises(ValueError, match="both bags and props"):
        make_bag_scorer("hard_l1", bags=HAND_BAGS)
    with pytest.raises(ValueError, match="sum to 1"):
        BagScorer("hard_l1", table={"A": [0.5, 0.9], "B": [1.0, 0.0]})
    assert repr(hard_l1_scorer) == "BagScorer(metric='hard_l1')"
    scorer = make_bag_scorer("soft_kl", bags=HAND_BAGS, props=HAND_PROPS)
    assert repr(scorer) == "BagScorer(metric='soft_kl', table=<2 bags>)"


def test_bag_table():
    table = bag_table(HAND_BAGS, HAND_PROPS, classes=["neg", "pos"])
    assert table.index.tolist() == ["A", "B"]
    assert table.columns.tolist() == ["neg", "pos"]
    np.testing.assert_allclose(table.to_numpy(), [[0.5, 0.5], [1.0, 0.0]])
