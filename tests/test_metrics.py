"""Bag metrics and scorers by hand (over random bags and every form:
``test_equivalent_inputs.py``, ``test_conformance.py``)."""

import math

import numpy as np
import pandas as pd
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.metrics import (
    accuracy_score,
    mean_absolute_error,
    mean_squared_error,
    r2_score,
)
from sklearn.utils.metadata_routing import get_routing_for_object

from sklearn_llp import metrics
from sklearn_llp.metrics import (
    BAG_METRICS,
    BagScorer,
    bag_errors,
    bag_mean_absolute_error,
    bag_mean_squared_error,
    bag_r2_score,
    bag_table,
    hard_l1_error,
    hard_l1_scorer,
    make_bag_scorer,
    soft_kl_scorer,
    soft_l1_error,
)

FUNCTIONS = {name: getattr(metrics, f"{name}_error") for name in BAG_METRICS}
SCORERS = {name: getattr(metrics, f"{name}_scorer") for name in BAG_METRICS}


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


@pytest.mark.parametrize("metric", BAG_METRICS)
def test_hand_computed_values(metric):
    value = FUNCTIONS[metric](HAND_BAGS, HAND_PROPS, HAND_PROBA)
    assert isinstance(value, float)
    assert value == pytest.approx(HAND_EXPECTED[metric], rel=1e-9)
    # the positive class's column stands for two columns
    positive = FUNCTIONS[metric](HAND_BAGS, HAND_PROPS, HAND_PROBA[:, 1])
    assert positive == pytest.approx(value, abs=1e-12)
    # bag_errors gives them all at once, or the ones asked for
    assert bag_errors(HAND_BAGS, HAND_PROPS, HAND_PROBA)[metric] == value
    one = bag_errors(HAND_BAGS, HAND_PROPS, HAND_PROBA, metrics=[metric])
    assert one == {metric: value}
    assert list(bag_errors(HAND_BAGS, HAND_PROPS, HAND_PROBA)) == list(BAG_METRICS)


def test_single_bag_is_accepted():
    props = np.array([[0.5, 0.5]] * 2)
    proba = np.array([[0.8, 0.2], [0.4, 0.6]])
    assert hard_l1_error(["x", "x"], props, proba) == pytest.approx(0.0)
    assert soft_l1_error(["x", "x"], {"x": 0.5}, proba) == pytest.approx(0.2)


@settings(max_examples=40, deadline=None, database=None)
@given(st.lists(st.integers(0, 2), min_size=2, max_size=30), st.integers(0, 2**32 - 1))
def test_singleton_bags_hard_l1_is_twice_the_error_rate(labels, seed):
    labels = np.array(labels)
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.ones(3), size=len(labels))
    props = np.eye(3)[labels]
    bags = np.arange(len(labels))
    accuracy = accuracy_score(labels, proba.argmax(axis=1))
    assert 1 - hard_l1_error(bags, props, proba) / 2 == pytest.approx(accuracy)


# --- Scorers.
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


@pytest.mark.parametrize("form", HAND_PROPS_FORMS)
@pytest.mark.parametrize("metric", BAG_METRICS)
def test_scorer_is_minus_the_error_with_props_routed_in_any_form(metric, form):
    estimator = FixedProba(HAND_PROBA).fit(HAND_X)
    props = HAND_PROPS_FORMS[form]
    score = SCORERS[metric](estimator, HAND_X, HAND_BAGS, props=props)
    assert score == pytest.approx(-HAND_EXPECTED[metric])
    table_scorer = make_bag_scorer(metric, bags=HAND_BAGS, props=HAND_PROPS)
    assert table_scorer(estimator, HAND_X, HAND_BAGS) == pytest.approx(score)


def test_scorers_request_props_under_routing():
    for scorer in SCORERS.values():
        keys = ["props", "sample_weight"]
        assert get_routing_for_object(scorer).consumes("score", keys) == set(keys)
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
    expected = pytest.approx(-HAND_EXPECTED["soft_kl"])
    assert BagScorer("soft_kl", table=table)(estimator, HAND_X, HAND_BAGS) == expected
    # Routed sample-aligned DataFrame: matched by name too.
    frame = table.loc[HAND_BAGS].reset_index(drop=True)
    assert soft_kl_scorer(estimator, HAND_X, HAND_BAGS, props=frame) == expected
    wrong = table.rename(columns={"pos": "cat", "neg": "dog"})
    with pytest.raises(ValueError, match="do not match classes"):
        BagScorer("soft_kl", table=wrong)(estimator, HAND_X, HAND_BAGS)


def test_routed_props_take_precedence_over_the_table():
    estimator = FixedProba(HAND_PROBA).fit(HAND_X)
    stale = {"A": [1.0, 0.0], "B": [0.0, 1.0]}
    scorer = make_bag_scorer("hard_l1", table=stale)
    routed = scorer(estimator, HAND_X, HAND_BAGS, props=HAND_PROPS)
    assert routed == pytest.approx(-HAND_EXPECTED["hard_l1"])
    assert scorer(estimator, HAND_X, HAND_BAGS) != pytest.approx(routed)


def test_a_table_is_checked_when_the_scorer_is_made_and_the_repr_shows_it():
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
    means = bag_table(["a", "a", "b", "b", "c"], targets=[2.0, 2.0, 5.0, 5.0, 0.0])
    assert means["mean"].to_dict() == {"a": 2.0, "b": 5.0, "c": 0.0}


# --- Regression.
def test_regression_metrics_by_hand_and_on_singletons():
    # bags weigh by size, as in training: a and b hold 2 rows, c 1
    bags = ["a", "a", "b", "b", "c"]
    targets = {"a": 2.0, "b": 5.0, "c": 0.0}
    y_pred = [1.0, 2.0, 4.0, 4.0, 1.0]  # bag means 1.5, 4, 1
    expected = (2 * 0.25 + 2 * 1 + 1) / 5
    assert bag_mean_squared_error(bags, targets, y_pred) == pytest.approx(expected)
    assert bag_mean_absolute_error(bags, targets, y_pred) == pytest.approx(4 / 5)
    centre = (2 * 2 + 2 * 5 + 0) / 5
    total = (2 * (2 - centre) ** 2 + 2 * (5 - centre) ** 2 + centre**2) / 5
    assert bag_r2_score(bags, targets, y_pred) == pytest.approx(1 - 3.5 / 5 / total)
    # sample weights: bag a weighs 4, its mean prediction (3 + 2) / 4
    w = [3, 1, 1, 1, 1]
    weighted = bag_mean_squared_error(bags, targets, y_pred, sample_weight=w)
    assert weighted == pytest.approx((4 * (2 - 1.25) ** 2 + 2 + 1) / 7)
    # the scorer and early stopping's criterion share the weighting
    est = type("Fitted", (), {"predict": lambda self, X: np.asarray(y_pred)})()
    scorer = make_bag_scorer("mse")
    assert scorer(est, np.zeros((5, 1)), bags, targets) == pytest.approx(-3.5 / 5)
    # bags of one row: the instance metrics
    rng = np.random.RandomState(0)
    y, pred, ids = rng.normal(size=9), rng.normal(size=9), np.arange(9)
    for bag_metric, metric in [
        (bag_mean_squared_error, mean_squared_error),
        (bag_mean_absolute_error, mean_absolute_error),
        (bag_r2_score, r2_score),
    ]:
        assert bag_metric(ids, y, pred) == pytest.approx(metric(y, pred))
