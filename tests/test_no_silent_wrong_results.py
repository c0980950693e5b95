"""Paths that used to give a wrong answer without an error (issue 13).

Each test names the case it covers; every one failed before the redesign
(method as a component, one ``Bags`` object from one validator).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.model_selection import cross_val_predict as sklearn_cross_val_predict
from skorch.callbacks import EpochScoring, ProgressBar

from sklearn_llp import LLPClassifier
from sklearn_llp.exceptions import FitDivergedError, ModelResetWarning
from sklearn_llp.methods import VAT, LLPMethod
from sklearn_llp.metrics import BagScorer, hard_l1_error, make_bag_scorer
from sklearn_llp.model_selection import BagKFold, BagShuffleSplit, cross_val_predict
from sklearn_llp.utils import check_bags


@pytest.fixture
def problem():
    """The issue's setting: 60 rows x 4, ten bags of 6, sample-aligned props."""
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 60)
    X = rng.normal(size=(60, 4)) + 1.5 * y[:, None]
    bags = np.repeat(np.arange(10), 6)
    props = np.zeros((10, 2))
    np.add.at(props, (bags, y), 1.0 / 6)
    return X, bags, props[bags], y


def small(**params):
    defaults = dict(
        module__hidden_sizes=(16,),
        max_epochs=5,
        verbose=0,
        random_state=0,
        device="cpu",
    )
    return LLPClassifier(**{**defaults, **params})


# ---------------------------------------------------------------- case 1
def test_score_without_props_is_refused_for_a_model_fitted_on_bags(problem):
    X, bags, props, y = problem
    clf = small().fit(X, bags, props)
    with pytest.raises(ValueError, match="fitted on bags, so y holds bag ids"):
        clf.score(X, bags)
    assert 0 <= clf.score(X, bags, props) <= 1
    supervised = small().fit(X, y)  # fitted on labels: plain accuracy
    assert supervised.score(X, y) == np.mean(supervised.predict(X) == y)


def test_grid_search_default_scoring_with_routing_off_never_ranks_by_bag_ids(
    problem,
):
    X, bags, props, _ = problem
    search = GridSearchCV(small(), {"lr": [1e-4, 1e-2]}, cv=BagKFold(3))
    with pytest.warns(UserWarning, match="fitted on bags"):
        search.fit(X, bags, props=props)
    assert np.isnan(search.cv_results_["mean_test_score"]).all()
    raising = GridSearchCV(
        small(), {"lr": [1e-4, 1e-2]}, cv=BagKFold(3), error_score="raise"
    )
    with pytest.raises(ValueError, match="make_bag_scorer"):
        raising.fit(X, bags, props=props)
    # the README's routing-off recipe works
    scorer = make_bag_scorer("hard_l1", bags=bags, props=props)
    search = GridSearchCV(small(), {"lr": [1e-4, 1e-2]}, cv=BagKFold(3), scoring=scorer)
    search.fit(X, bags, props=props)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


# ---------------------------------------------------------------- case 2
@pytest.mark.parametrize("string_ids", [False, True])
def test_cross_val_predict_gives_one_column_per_class(problem, string_ids):
    X, bags, props, _ = problem
    if string_ids:
        bags = np.array([f"bag {b}" for b in bags])
        props = pd.DataFrame(props, index=bags).groupby(level=0).first()
    clf = small()
    with pytest.raises(TypeError, match="sklearn_llp.model_selection.cross_val_pre"):
        sklearn_cross_val_predict(
            clf,
            X,
            bags,
            cv=BagKFold(3),
            params={"props": props},
            method="predict_proba",
        )
    proba = cross_val_predict(
        clf, X, bags, props, cv=BagKFold(3), method="predict_proba"
    )
    assert proba.shape == (60, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    # each fold's rows come from a model fitted on the other folds' bags
    checked = check_bags(bags, props)
    for train, test in BagKFold(3).split(X, bags):
        fold = clone(clf).fit(X[train], checked.restrict(train)[0])
        np.testing.assert_allclose(fold.predict_proba(X[test]), proba[test])
    argmax = clf.set_params(threshold="argmax")
    labels = cross_val_predict(argmax, X, bags, props, cv=BagKFold(3))
    np.testing.assert_array_equal(labels, np.array([0, 1])[proba.argmax(axis=1)])


# ---------------------------------------------------------------- case 3
def test_composite_keys_as_tuples_are_keys_not_row_lists(problem):
    X, bags, props, y = problem
    band = bags // 2  # 5 values
    region = bags % 2  # 2 values: (band, region) is the bag
    as_tuples = list(zip(band, region))
    as_strings = np.array([f"{b}-{r}" for b, r in as_tuples])
    as_frame = pd.DataFrame({"band": band, "region": region})
    reference = check_bags(as_strings, props)
    for keys in (as_tuples, pd.Series(as_tuples), as_frame):
        checked = check_bags(keys, props)
        assert checked.n_bags == 10 and not checked.overlapping
        np.testing.assert_array_equal(checked.sizes, reference.sizes)
        np.testing.assert_array_equal(checked.codes, reference.codes)
    proba = small().fit(X, as_tuples, props).predict_proba(X)
    assert hard_l1_error(as_tuples, props, proba) == hard_l1_error(
        as_strings, props, proba
    )
    # the rows a fit trains on: all 60, not the first pair of "indices"
    clf = small(batch_size=6, max_epochs=1).fit(X, as_tuples, props)
    assert clf.n_train_steps_ == 10
    # lists of index arrays stay overlapping bags
    assert check_bags([[0, 1], [1, 2]], n_samples=3).overlapping


# ---------------------------------------------------------------- case 4
def test_sample_aligned_dataframe_not_subset_with_X_is_refused(problem):
    X, bags, props, _ = problem
    frame = pd.DataFrame(props, columns=["no", "yes"])
    train = np.arange(42)
    with pytest.raises(ValueError, match="props has 60 rows but X has 42"):
        small().fit(X[train], bags[train], frame)
    small().fit(X[train], bags[train], frame.iloc[train])  # the right call
    # a real per-bag table (its index holds bag ids) may have extra bags
    table = frame.groupby(bags).first().rename_axis("bag")
    small().fit(X[train], bags[train], table)
    # a per-bag table that happens to have one row per sample reads both ways
    ids = np.array([10, 10, 11, 11])
    tricky = pd.DataFrame([[1, 0], [0, 1], [0, 1], [1, 0]], index=[12, 13, 10, 11])
    with pytest.raises(ValueError, match="reads both as sample-aligned"):
        check_bags(ids, tricky)
    assert check_bags(ids, tricky.to_dict("index")).props.tolist() == [
        [0, 1],
        [1, 0],
    ]


# ---------------------------------------------------------------- case 5
def test_a_diverged_fit_stops_with_an_error_and_is_not_fitted(problem):
    X, bags, props, _ = problem
    clf = small(lr=1e20, validation_fraction=0.2)
    with pytest.raises(FitDivergedError, match=r"epoch \d+, batch \d+.*lr=1e\+20"):
        clf.fit(X, bags, props)
    with pytest.raises(NotFittedError):
        clf.predict(X)
    assert not any(np.isfinite(row.get("valid_hard_l1", np.nan)) for row in clf.history)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(method=VAT(alpha=np.nan)), "method__alpha"),
        (dict(method="vat", method__alpha=np.nan), "method__alpha"),
        (dict(method="vat", method__eps=-1.0), "method__eps"),
        (dict(method="pi", method__rampup=2.0), "method__rampup"),
        (dict(method="rot", method__n_iter=0), "method__n_iter"),
    ],
)
def test_method_hyperparameters_are_validated_before_training(problem, params, match):
    X, bags, props, _ = problem
    with pytest.raises(ValueError, match=match):
        small(**params).fit(X, bags, props)


def test_nan_weights_give_an_error_not_a_prediction(problem):
    X, bags, props, _ = problem
    clf = small().fit(X, bags, props)
    with torch.no_grad():
        next(clf.module_.parameters()).fill_(np.nan)
    with pytest.raises(ValueError, match="NaN or infinite probabilities"):
        clf.predict(X)


# ---------------------------------------------------------------- case 6
def test_a_failed_warm_start_refit_leaves_the_model_as_it_was(problem):
    X, bags, props, _ = problem
    clf = small(warm_start=True).fit(X, bags, props)
    before = clf.predict_proba(X)
    three = np.column_stack([props * 0.5, 0.5 * np.ones(60)])
    with pytest.raises(ValueError, match="same classes"):
        clf.fit(X, bags, three)
    with pytest.raises(ValueError, match="X has 3 features"):
        clf.fit(X[:, :3], bags, props)
    assert clf.classes_.tolist() == [0, 1] and clf.n_features_in_ == 4
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    clf.set_params(warm_start=False).fit(X[:, :3], bags, three)  # afresh: fine
    assert clf.n_features_in_ == 3 and len(clf.classes_) == 3


# ---------------------------------------------------------------- case 7
def test_method_hyperparameters_are_skorch_style_parameters(problem):
    X, bags, props, _ = problem
    clf = small(method="vat")
    assert clf.get_params()["method__alpha"] == VAT().alpha
    clf.set_params(method__alpha=0.5).fit(X, bags, props)
    assert clf.method_.alpha == 0.5 and clf.get_params()["method__alpha"] == 0.5
    assert clone(clf).get_params()["method__alpha"] == 0.5
    search = GridSearchCV(
        small(max_epochs=2),
        {"method__alpha": [0.01, 0.5]},
        cv=BagKFold(2),
        scoring=make_bag_scorer("hard_l1", bags=bags, props=props),
        error_score="raise",
    ).fit(X, bags, props=props)
    assert search.best_estimator_.method_.alpha in (0.01, 0.5)
    assert [p["method__alpha"] for p in search.cv_results_["params"]] == [0.01, 0.5]


def test_one_method_construction_per_fit(problem):
    X, bags, props, _ = problem

    class Counted(LLPMethod):
        built = 0

        def __init__(self, scale=1.0):
            type(self).built += 1
            self.scale = scale

        def get_loss(self, module, X, logits, bags, step, total_steps):
            return self.scale * bags.proportion_loss(logits)

    clf = small(method=Counted(), method__scale=2.0)
    Counted.built = 0
    clf.fit(X, bags, props)
    assert Counted.built == 1 and clf.method_.scale == 2.0
    clf.partial_fit(X, bags, props)
    assert Counted.built == 2


# ---------------------------------------------------------------- case 8
def test_resetting_the_module_after_fit_warns_and_unfits(problem):
    X, bags, props, _ = problem
    clf = small().fit(X, bags, props)
    with pytest.warns(ModelResetWarning, match="module__dropout"):
        clf.set_params(module__dropout=0.5)
    with pytest.raises(NotFittedError):
        clf.predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.set_params(lr=0.01)  # the optimizer's lr keeps the weights
        small().set_params(module__dropout=0.5)  # not fitted: nothing to lose
    clf.fit(X, bags, props).predict(X)


# ---------------------------------------------------------------- case 9
def test_bool_ids_with_a_bool_indexed_table_are_looked_up_by_label():
    bags = np.array([False, False, True, True])
    table = pd.DataFrame({"no": [0.0, 1.0], "yes": [1.0, 0.0]}, index=[True, False])
    checked = check_bags(bags, table)
    assert checked.ids.tolist() == [False, True]
    np.testing.assert_array_equal(checked.props, [[1.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize(
    "bags, error, match",
    [
        (pd.to_datetime(["2020", "2020", None, "2021"]), ValueError, "NaT"),
        (
            pd.Series(
                [frozenset({1}), frozenset({1}), frozenset({2})] * 1 + [frozenset({2})]
            ),
            TypeError,
            "frozenset",
        ),
        (np.array([0, 0, -1, -1]), ValueError, "the id -1"),
        ([("a", 1), ("a", 1), ("b", 1), "b"], TypeError, "composite keys"),
    ],
)
def test_ids_that_cannot_name_a_bag_are_refused(bags, error, match):
    with pytest.raises(error, match=match):
        check_bags(bags, n_samples=4)


def test_float_rounding_negatives_are_zero_but_real_negatives_fail():
    tiny = 1 - 0.3 - 0.3 - 0.4  # -5.6e-17
    checked = check_bags([0, 1], [[0.3, 0.3, 0.4 + tiny], [tiny, 0.5, 0.5 - tiny]])
    assert (checked.props >= 0).all()
    with pytest.raises(ValueError, match="negative"):
        check_bags([0, 1], [[-0.001, 1.001], [0.5, 0.5]])


def test_duplicate_class_columns_are_refused():
    props = pd.DataFrame([[0.5, 0.5]] * 4, columns=["yes", "yes"])
    with pytest.raises(ValueError, match="duplicate class columns"):
        check_bags([0, 0, 1, 1], props)


def test_epoch_scoring_gets_a_clear_error_and_callbacks_may_be_a_tuple(problem):
    X, bags, props, _ = problem
    with pytest.raises(TypeError, match="validation_fraction.*valid_hard_l1"):
        small(callbacks=[EpochScoring("accuracy")]).fit(X, bags, props)
    clf = small(callbacks=(ProgressBar("count"),)).fit(X, bags, props)
    assert clf.predict(X).shape == (60,)


def test_initialize_then_load_params(problem, tmp_path):
    X, bags, props, _ = problem
    clf = small().fit(X, bags, props)
    clf.save_params(f_params=tmp_path / "params.pt")
    with pytest.raises(ValueError, match="module__n_features"):
        small().initialize()
    restored = small(module__n_features=4, classes=[0, 1]).initialize()
    with pytest.raises(NotFittedError):
        restored.predict(X)
    restored.load_params(f_params=tmp_path / "params.pt")
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


def test_bag_scorer_on_overlapping_bags(problem):
    X, _, _, y = problem
    lists = [np.arange(i, i + 8) for i in range(0, 52, 4)]
    per_bag = np.stack([np.bincount(y[r], minlength=2) / len(r) for r in lists])
    clf = small(threshold="argmax").fit(X, lists, per_bag)
    score = BagScorer("hard_l1")(clf, X, lists, props=per_bag)
    assert score == -hard_l1_error(lists, per_bag, clf.predict_proba(X))
    matrix = sp.csr_matrix(check_bags(lists, n_samples=60).membership())
    assert BagScorer("hard_l1")(clf, X, matrix, props=per_bag) == score


@pytest.mark.parametrize("seed", range(20))
def test_validation_fraction_on_overlapping_bags_is_capped(seed):
    rng = np.random.RandomState(seed)
    # 30 bags in chains of 3 sharing a row: 10 connected groups of 7 rows
    lists = []
    for start in range(0, 70, 7):
        lists += [
            np.arange(start, start + 3),
            np.arange(start + 2, start + 5),
            np.arange(start + 4, start + 7),
        ]
    checked = check_bags(lists, rng.dirichlet([1, 1], 30), n_samples=70)
    train, valid = next(
        BagShuffleSplit(1, test_size=0.2, random_state=seed).split_bags(checked)
    )
    rows = np.unique(checked.members[valid[checked.pair_bags]])
    assert 0.2 * 70 - 7 / 2 <= len(rows) <= 0.2 * 70 + 7 / 2
    assert train.sum() >= 0.7 * 30
