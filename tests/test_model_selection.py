"""Bag splitters and model selection with the bag scorers."""

import numpy as np
import pytest
import sklearn
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, check_cv, cross_validate

from sklearn_llp.metrics import (
    hard_l1_error,
    hard_l1_scorer,
    make_bag_scorer,
    soft_kl_scorer,
)
from sklearn_llp.model_selection import BagKFold, BagShuffleSplit
from sklearn_llp.utils import check_bags


@pytest.fixture(autouse=True)
def _routing_is_left_off():
    assert sklearn.get_config()["enable_metadata_routing"] is False
    yield
    assert sklearn.get_config()["enable_metadata_routing"] is False


class BagMajorityLR(ClassifierMixin, BaseEstimator):
    """Stand-in LLP classifier: logistic regression on bag-majority labels."""

    __metadata_request__fit = {"props": True}
    __metadata_request__score = {"props": True}

    def __init__(self, C=1.0):
        self.C = C

    def fit(self, X, y, props=None):
        checked = check_bags(y, props, n_samples=len(X))
        codes, bag_props, classes = checked.codes, checked.props, checked.classes
        self.classes_ = classes
        self.model_ = LogisticRegression(C=self.C).fit(X, bag_props.argmax(1)[codes])
        return self

    def predict_proba(self, X):
        proba = np.zeros((len(X), len(self.classes_)))
        proba[:, self.model_.classes_] = self.model_.predict_proba(X)
        return proba

    def predict(self, X):
        return self.classes_[self.predict_proba(X).argmax(axis=1)]

    def score(self, X, y, props=None):
        return -hard_l1_error(y, props, self.predict_proba(X))


def make_bag_data(n_bags=30, bag_size=10, seed=0):
    """Two Gaussian classes; bags with random class mixes, sample-aligned props."""
    rng = np.random.default_rng(seed)
    bags = np.repeat(np.arange(n_bags), bag_size)
    positive_rate = rng.uniform(0.05, 0.95, n_bags)
    labels = rng.random(len(bags)) < positive_rate[bags]
    X = rng.normal(size=(len(bags), 2)) + 1.5 * labels[:, None]
    fraction = np.bincount(bags, weights=labels) / bag_size
    props = np.column_stack([1 - fraction[bags], fraction[bags]])
    order = rng.permutation(len(bags))  # bags interleaved, not contiguous
    return X[order], bags[order], props[order]


GRID = {"C": [1e-4, 1e-2, 1.0]}


# --------------------------------------------------------------------------
# Splitters.
# --------------------------------------------------------------------------
@st.composite
def bag_layouts(draw):
    sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=12))
    string_ids = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    ids = rng.permutation(len(sizes)) * 3 + 5
    if string_ids:
        ids = np.array([f"b{i}" for i in ids])
    bags = rng.permutation(np.repeat(ids, sizes))
    n_splits = draw(st.integers(2, min(5, len(sizes))))
    return bags, n_splits, seed


@settings(max_examples=60, deadline=None, database=None)
@given(bag_layouts(), st.booleans(), st.booleans())
def test_splitters_never_split_a_bag(layout, use_groups, shuffle):
    bags, n_splits, seed = layout
    X = np.zeros((len(bags), 1))
    splitters = [
        BagKFold(n_splits, shuffle=shuffle, random_state=seed if shuffle else None),
        BagShuffleSplit(n_splits, random_state=seed),
    ]
    for splitter in splitters:
        if use_groups:  # y deliberately unrelated to the bags
            splits = list(splitter.split(X, np.zeros(len(bags)), groups=bags))
        else:
            splits = list(splitter.split(X, bags))
        assert len(splits) == splitter.get_n_splits() == n_splits
        for train, test in splits:
            assert len(test) > 0 and len(train) > 0
            assert not set(bags[train]) & set(bags[test])
            np.testing.assert_array_equal(
                np.sort(np.concatenate([train, test])), np.arange(len(bags))
            )
        if isinstance(splitter, BagKFold):
            tests = np.sort(np.concatenate([test for _, test in splits]))
            np.testing.assert_array_equal(tests, np.arange(len(bags)))
        else:  # 10 % of the rows, within one bag
            largest = np.unique(bags, return_counts=True)[1].max()
            for _, test in splits:
                assert len(test) < 0.1 * len(bags) + largest


def test_bag_shuffle_split_holds_out_ten_percent_of_rows():
    X, bags, _ = make_bag_data(n_bags=50, bag_size=3)
    splitter = BagShuffleSplit(n_splits=4, random_state=0)
    held_out = [set(bags[test]) for _, test in splitter.split(X, bags)]
    assert [len(s) for s in held_out] == [5, 5, 5, 5]
    assert len({frozenset(s) for s in held_out}) > 1  # random draws
    explicit = BagShuffleSplit(n_splits=1, test_size=0.3, random_state=0)
    (_, test), *_ = explicit.split(X, bags)
    assert len(set(bags[test])) == 15
    train_only = BagShuffleSplit(n_splits=1, train_size=0.6, random_state=0)
    (train, test), *_ = train_only.split(X, bags)
    assert (len(set(bags[train])), len(set(bags[test]))) == (30, 20)


def test_bags_from_y_or_groups_give_the_same_folds():
    X, bags, _ = make_bag_data()
    for splitter in (BagKFold(4), BagShuffleSplit(3, random_state=1)):
        from_y = list(splitter.split(X, bags))
        from_groups = list(splitter.split(X, None, groups=bags))
        for (a_train, a_test), (b_train, b_test) in zip(from_y, from_groups):
            np.testing.assert_array_equal(a_train, b_train)
            np.testing.assert_array_equal(a_test, b_test)


def test_splitters_need_bag_ids():
    X = np.zeros((6, 1))
    for splitter in (BagKFold(2), BagShuffleSplit(2)):
        with pytest.raises(ValueError, match="needs the bag id of every sample"):
            next(splitter.split(X))
        with pytest.raises(ValueError, match="1-D"):
            next(splitter.split(X, np.zeros((6, 2))))
    with pytest.raises(ValueError, match="needs at least 4 bags"):
        next(BagKFold(4).split(X, [0, 0, 1, 1, 2, 2]))


def test_integer_cv_splits_bags_but_bag_kfold_does_not():
    # The trap: cv=5 with y=bags is StratifiedKFold over bag ids.
    X, bags, _ = make_bag_data(n_bags=10, bag_size=10)
    stratified = check_cv(5, bags, classifier=True)
    split_bags = {
        b for train, test in stratified.split(X, bags) for b in set(bags[train])
    } & {b for train, test in stratified.split(X, bags) for b in set(bags[test])}
    assert len(split_bags) == 10  # every bag is on both sides of some split
    for train, test in BagKFold(5).split(X, bags):
        assert not set(bags[train]) & set(bags[test])


# --------------------------------------------------------------------------
# GridSearchCV and cross_validate, routing on and off.
# --------------------------------------------------------------------------
def test_grid_search_routing_on_and_off_select_the_same_parameters():
    X, bags, props = make_bag_data()
    with sklearn.config_context(enable_metadata_routing=True):
        routed = GridSearchCV(
            BagMajorityLR(), GRID, scoring=hard_l1_scorer, cv=BagKFold(3)
        ).fit(X, bags, props=props)
    table_scorer = make_bag_scorer("hard_l1", bags=bags, props=props)
    unrouted = GridSearchCV(
        BagMajorityLR(), GRID, scoring=table_scorer, cv=BagKFold(3)
    ).fit(X, bags, props=props)
    scores = routed.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores <= 0)
    assert len(set(np.round(scores, 9))) > 1  # the grid matters
    np.testing.assert_allclose(unrouted.cv_results_["mean_test_score"], scores)
    assert routed.best_params_ == unrouted.best_params_
    assert routed.best_params_ == {"C": GRID["C"][int(np.argmax(scores))]}


def test_grid_search_routing_on_with_groups_and_several_metrics():
    X, bags, props = make_bag_data()
    with sklearn.config_context(enable_metadata_routing=True):
        search = GridSearchCV(
            BagMajorityLR(),
            GRID,
            scoring={"hard_l1": hard_l1_scorer, "soft_kl": soft_kl_scorer},
            refit="soft_kl",
            cv=BagShuffleSplit(3, random_state=0),
        ).fit(X, bags, props=props, groups=bags)
        best_score = search.score(X, bags, props=props)
    for name in ("hard_l1", "soft_kl"):
        scores = search.cv_results_[f"mean_test_{name}"]
        assert np.all(np.isfinite(scores)) and np.all(scores <= 0)
    assert np.isfinite(best_score)


def test_cross_validate_routing_on_with_two_jobs():
    X, bags, props = make_bag_data()
    with sklearn.config_context(enable_metadata_routing=True):
        result = cross_validate(
            BagMajorityLR(),
            X,
            bags,
            cv=BagKFold(3),
            scoring=soft_kl_scorer,
            params={"props": props},
            n_jobs=2,
        )
    serial = cross_validate(
        BagMajorityLR(),
        X,
        bags,
        cv=BagKFold(3),
        scoring=make_bag_scorer("soft_kl", bags=bags, props=props),
        params={"props": props},
    )
    assert np.all(np.isfinite(result["test_score"]))
    assert np.all(result["test_score"] <= 0)
    np.testing.assert_allclose(result["test_score"], serial["test_score"])


@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")
def test_plain_scorer_with_routing_off_fails_loudly():
    X, bags, props = make_bag_data()
    search = GridSearchCV(
        BagMajorityLR(),
        GRID,
        scoring=hard_l1_scorer,
        cv=BagKFold(3),
        error_score="raise",
    )
    with pytest.raises(ValueError, match="enable_metadata_routing=True"):
        search.fit(X, bags, props=props)
    # scikit-learn's default error_score=np.nan turns the error into warnings
    # that carry the message; the scorer itself never returns NaN.
    default = GridSearchCV(
        BagMajorityLR(), GRID, scoring=hard_l1_scorer, cv=BagKFold(3)
    )
    with pytest.warns(UserWarning, match="received no label proportions"):
        default.fit(X, bags, props=props)
    with pytest.raises(ValueError, match="make_bag_scorer"):
        cross_validate(
            BagMajorityLR(),
            X,
            bags,
            cv=BagKFold(3),
            scoring=hard_l1_scorer,
            params={"props": props},
            error_score="raise",
        )
