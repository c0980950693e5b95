"""Conformance of ``LLPRegressor``: the same question gets the same answer.

The regression counterpart of ``test_conformance.py``. An LLP user has no
instance targets to catch a wrong answer, so the worst defect is a silent
wrong result: the same bags or bag means read two ways, a weight that is
dropped or weighs the wrong thing, targets whose units leak into the model,
a refit that keeps half of the last one. Every test states an equivalence
that the documentation promises (``LLPRegressor.fit``,
``check_bag_targets``, the bag metrics and scorers, ``noise_aware_bag_weights``,
``make_bag_means``) and puts EVERY registered regression method through it
(``available_methods("regression")``: a method registered later is picked up
by itself; give it extra parameters in ``METHOD_PARAMS`` if it needs any).

Fits are tiny and seeded (CPU, one thread, two epochs of an 8-unit MLP), so
that "the same model" can be checked bit for bit. Two problems:

- ``few``: 64 rows in 8 bags of unequal sizes. ``early_stopping="auto"`` is
  off (fewer than 5 bags would be held out).
- ``many``: 100 rows in 50 bags of 1 to 3 rows. ``early_stopping="auto"`` is
  ON, so 10 % of the bags are held out and the fit stops on their errors:
  the equivalences must hold there too (the held-out split may depend on the
  bag structure only, never on the form of the ids).

Where two fits are the same model only up to the order of float additions
(e.g. duplicated rows against integer weights, or targets rescaled before
the internal standardisation) they are compared to a stated tolerance.
"""

import functools
import pickle
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import r2_score
from sklearn.model_selection import cross_validate
from skorch.callbacks import Callback

from sklearn_llp import LLPRegressor
from sklearn_llp.bags import UniformBagGenerator
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import IdentifiabilityWarning
from sklearn_llp.methods import available_methods
from sklearn_llp.methods._base import BagBatch
from sklearn_llp.metrics import (
    BagScorer,
    bag_mean_absolute_error,
    bag_mean_squared_error,
    bag_r2_score,
    make_bag_scorer,
)
from sklearn_llp.privacy import dp_bag_means, noise_aware_bag_weights

pytestmark = pytest.mark.filterwarnings("ignore", category=IdentifiabilityWarning)

# ----------------------------------------------------------------------
# the estimators
# ----------------------------------------------------------------------
PARAMS = dict(
    device="cpu",
    verbose=0,
    max_epochs=2,
    random_state=0,
    n_threads=1,
    module__hidden_sizes=(8,),
)

#: Extra parameters a registered method needs to fit at all (none so far).
METHOD_PARAMS = {}

METHODS = available_methods("regression")


def make(method, **params):
    return LLPRegressor(
        method=method, **{**PARAMS, **METHOD_PARAMS.get(method, {}), **params}
    )


# ----------------------------------------------------------------------
# the data
# ----------------------------------------------------------------------
SIZES = {
    "few": (8, 8, 8, 4, 16, 8, 4, 8),
    "many": tuple(np.tile([1, 2, 3, 2], 13)[:50]),
}
PROBLEMS = sorted(SIZES)


@functools.cache
def problem(case):
    """Rows in interleaved bags whose means differ.

    ``codes``: the bag of every row (0..n_bags-1, the sorted-id order);
    ``means``: every bag's mean of ``y``; ``aligned``: every row its bag's
    mean. Never mutate these arrays.
    """
    sizes = SIZES[case]
    rng = np.random.RandomState(len(sizes))
    n_bags = len(sizes)
    codes = rng.permutation(np.repeat(np.arange(n_bags), sizes))
    X = rng.normal(size=(len(codes), 4)) + 0.5 * rng.normal(size=(n_bags, 4))[codes]
    y = X @ [1.0, -2.0, 0.5, 0.0] + np.sin(X[:, 3]) + 0.1 * rng.normal(size=len(codes))
    means = np.bincount(codes, weights=y) / np.bincount(codes)
    aligned = means[codes]
    for array in (X, y, codes, means, aligned):
        array.flags.writeable = False
    return SimpleNamespace(
        X=X, y=y, codes=codes, means=means, aligned=aligned, n_bags=n_bags
    )


def membership(codes, n_bags):
    return sp.csc_matrix(
        (np.ones(len(codes)), (np.arange(len(codes)), codes)),
        shape=(len(codes), n_bags),
    )


def row_lists(codes, n_bags):
    return [np.flatnonzero(codes == j) for j in range(n_bags)]


def str_ids(codes):
    return [f"bag{c:02d}" for c in codes]  # sorts like the ints


def per_bag_index(ids):
    """A named index of bag ids (a named index is never row numbers)."""
    return pd.Index(list(ids), name="bag", tupleize_cols=False)


# name -> (problem -> (bags, targets)); one form of the bags or of the
# targets at a time, everything else as in the reference (int ids
# 0..n_bags-1, sample-aligned means).
FORMS = {
    # the bags
    "str_ids": lambda p: (str_ids(p.codes), p.aligned),
    "series_ids": lambda p: (pd.Series(p.codes), p.aligned),
    "one_column_frame_ids": lambda p: (pd.DataFrame({"bag": p.codes}), p.aligned),
    "bags_object": lambda p: (check_bags(p.codes, targets=p.aligned), None),
    "bags_object_from_dict": lambda p: (
        check_bags(p.codes, targets=dict(enumerate(p.means))),
        None,
    ),
    "csc_membership": lambda p: (membership(p.codes, p.n_bags), p.means),
    "csr_membership": lambda p: (membership(p.codes, p.n_bags).tocsr(), p.means),
    "row_index_lists": lambda p: (row_lists(p.codes, p.n_bags), p.means),
    "membership_with_dict": lambda p: (
        membership(p.codes, p.n_bags),
        dict(enumerate(p.means)),
    ),
    # the targets
    "aligned_list": lambda p: (p.codes, p.aligned.tolist()),
    "aligned_series": lambda p: (p.codes, pd.Series(p.aligned)),
    "aligned_column": lambda p: (p.codes, p.aligned[:, None]),
    "per_bag_dict": lambda p: (p.codes, {int(j): m for j, m in enumerate(p.means)}),
    "per_bag_dict_reversed": lambda p: (
        p.codes,
        {int(j): p.means[j] for j in reversed(range(p.n_bags))},
    ),
    "per_bag_series": lambda p: (
        p.codes,
        pd.Series(p.means, index=per_bag_index(range(p.n_bags))),
    ),
    "per_bag_series_reversed": lambda p: (
        p.codes,
        pd.Series(p.means, index=per_bag_index(range(p.n_bags))).iloc[::-1],
    ),
    "per_bag_frame": lambda p: (
        p.codes,
        pd.DataFrame({"mean": p.means}, index=per_bag_index(range(p.n_bags))),
    ),
    "str_ids_with_str_keyed_series": lambda p: (
        str_ids(p.codes),
        pd.Series(p.means, index=per_bag_index(str_ids(range(p.n_bags)))),
    ),
    "str_ids_with_str_keyed_dict": lambda p: (
        str_ids(p.codes),
        dict(zip(str_ids(range(p.n_bags)), p.means)),
    ),
}

EARLY_STOPPING = {"few": False, "many": True}


@functools.cache
def reference(method, case):
    """The model of the reference form: int ids, sample-aligned means."""
    p = problem(case)
    est = make(method).fit(p.X, p.codes, p.aligned)
    assert est.do_early_stopping_ is EARLY_STOPPING[case]
    pred = est.predict(p.X)
    pred.flags.writeable = False
    return pred


# ----------------------------------------------------------------------
# 1. the same bags and means in any form
# ----------------------------------------------------------------------
@pytest.mark.parametrize("case", PROBLEMS)
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("method", METHODS)
def test_the_same_bags_and_means_in_any_form_give_the_identical_model(
    method, form, case
):
    p = problem(case)
    bags, targets = FORMS[form](p)
    est = make(method).fit(p.X, bags, targets)
    assert est.do_early_stopping_ is EARLY_STOPPING[case]
    np.testing.assert_array_equal(est.predict(p.X), reference(method, case))


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_form_validates_to_the_same_bags(form):
    p = problem("few")
    bags, targets = FORMS[form](p)
    validated = check_bags(bags, targets=targets, n_samples=len(p.codes))
    np.testing.assert_array_equal(validated.props[:, 0], p.means)
    np.testing.assert_array_equal(validated.sizes, SIZES["few"])
    np.testing.assert_array_equal(validated.codes, p.codes)


# ----------------------------------------------------------------------
# 2. weights
# ----------------------------------------------------------------------
def integer_weights(n, seed=0):
    w = np.random.RandomState(seed).randint(1, 4, n).astype(float)
    w[:2] = [1.0, 3.0]  # never constant
    return w


@pytest.mark.parametrize("weight", [1.0, 2.5])
@pytest.mark.parametrize("through", ["ids", "bags_object"])
@pytest.mark.parametrize("case", PROBLEMS)
@pytest.mark.parametrize("method", METHODS)
def test_constant_weights_are_no_weights(method, case, through, weight):
    p = problem(case)
    w = np.full(len(p.codes), weight)
    if through == "ids":
        est = make(method).fit(p.X, p.codes, p.aligned, sample_weight=w)
    else:
        est = make(method).fit(
            p.X, check_bags(p.codes, targets=p.aligned), sample_weight=w
        )
    np.testing.assert_array_equal(est.predict(p.X), reference(method, case))


@pytest.mark.parametrize(
    "given", ["sample_weight_with_a_bags_object", "bags_object_built_with_weights"]
)
@pytest.mark.parametrize("method", METHODS)
def test_a_bags_object_with_weights_fits_like_ids_with_the_same_weights(method, given):
    p = problem("few")
    w = integer_weights(len(p.codes))
    expected = make(method).fit(p.X, p.codes, p.aligned, sample_weight=w).predict(p.X)
    # the weights change this model: dropping them would be seen
    assert not np.array_equal(expected, reference(method, "few"))
    if given == "sample_weight_with_a_bags_object":
        est = make(method).fit(
            p.X, check_bags(p.codes, targets=p.aligned), sample_weight=w
        )
    else:
        est = make(method).fit(
            p.X, check_bags(p.codes, targets=p.aligned, sample_weight=w)
        )
    np.testing.assert_array_equal(est.predict(p.X), expected)


@pytest.mark.parametrize("zeros", ["some_rows", "a_whole_bag"])
@pytest.mark.parametrize("case", PROBLEMS)
@pytest.mark.parametrize("method", METHODS)
def test_a_zero_weight_removes_the_row(method, case, zeros):
    p = problem(case)
    w = np.ones(len(p.codes))
    if zeros == "some_rows":
        # rows of bags that keep at least one row
        for bag in range(p.n_bags):
            rows = np.flatnonzero(p.codes == bag)
            if len(rows) > 1 and bag % 3 == 0:
                w[rows[: len(rows) // 2]] = 0.0
    else:
        w[p.codes == 2] = 0.0
    kept = w > 0
    zero = make(method).fit(p.X, p.codes, p.aligned, sample_weight=w)
    removed = make(method).fit(p.X[kept], p.codes[kept], p.aligned[kept])
    # a per-bag table keeps the removed bag's entry: extra bags are ignored
    table = pd.Series(p.means, index=per_bag_index(range(p.n_bags)))
    removed_table = make(method).fit(p.X[kept], p.codes[kept], table)
    assert zero.do_early_stopping_ is removed.do_early_stopping_
    assert zero.target_mean_ == removed.target_mean_
    assert zero.target_scale_ == removed.target_scale_
    np.testing.assert_array_equal(zero.predict(p.X), removed.predict(p.X))
    np.testing.assert_array_equal(removed_table.predict(p.X), removed.predict(p.X))
    assert not np.array_equal(zero.predict(p.X), reference(method, case))


def one_sgd_step(method, **params):
    """One full-batch SGD step: the weights after it are a function of the
    loss's gradient at the (seeded) initial weights only."""
    one_step = dict(
        max_epochs=1,
        batch_size=10**6,
        optimizer=torch.optim.SGD,
        lr=0.1,
        early_stopping=False,
    )
    return make(method, **{**one_step, **params})


@pytest.mark.parametrize("method", METHODS)
def test_integer_weights_fit_like_duplicated_rows(method):
    # every loss is a sum over rows of w_i * (...) divided by sum_i w_i, so
    # weight k is k copies of the row in its bag; the rows of a batch are in
    # another order, so the sums agree to float rounding only (rtol 1e-5)
    p = problem("few")
    w = integer_weights(len(p.codes))
    weighted = one_sgd_step(method).fit(p.X, p.codes, p.aligned, sample_weight=w)
    rows = np.repeat(np.arange(len(p.codes)), w.astype(int))
    duplicated = one_sgd_step(method).fit(p.X[rows], p.codes[rows], p.aligned[rows])
    unweighted = one_sgd_step(method).fit(p.X, p.codes, p.aligned)
    assert weighted.target_mean_ == pytest.approx(duplicated.target_mean_, rel=1e-12)
    assert weighted.target_scale_ == pytest.approx(duplicated.target_scale_, rel=1e-12)
    expected = duplicated.predict(p.X)
    assert not np.allclose(unweighted.predict(p.X), expected, rtol=1e-4)
    np.testing.assert_allclose(weighted.predict(p.X), expected, rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------
# 3. instance targets are singleton bags
# ----------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("method", METHODS)
def test_fit_on_instance_targets_equals_singleton_bags(method, weighted):
    p = problem("few")  # 64 singletons: early stopping is on (6 held out)
    w = integer_weights(len(p.y)) if weighted else None
    on_y = make(method).fit(p.X, p.y, sample_weight=w)
    singletons = make(method).fit(p.X, np.arange(len(p.y)), p.y, sample_weight=w)
    assert on_y.do_early_stopping_ and singletons.do_early_stopping_
    assert on_y.target_mean_ == singletons.target_mean_
    assert on_y.target_scale_ == singletons.target_scale_
    np.testing.assert_array_equal(on_y.predict(p.X), singletons.predict(p.X))
    # and an instance-target model scores R^2 against y, as sklearn does
    assert on_y.score(p.X, p.y, sample_weight=w) == pytest.approx(
        r2_score(p.y, on_y.predict(p.X), sample_weight=w), rel=1e-12
    )


# ----------------------------------------------------------------------
# 4. the units of the targets do not matter
# ----------------------------------------------------------------------
@pytest.mark.parametrize(("a", "b"), [(3.0, -7.0), (1e-3, 250.0), (1e4, 0.0)])
@pytest.mark.parametrize("case", PROBLEMS)
@pytest.mark.parametrize("method", METHODS)
def test_affine_targets_give_affine_predictions(method, case, a, b):
    # the targets are standardised internally, so the network sees the same
    # numbers up to the rounding of (a m + b - (a c + b)) / (a s) against
    # (m - c) / s: a relative 1e-5 of the targets' spread
    p = problem(case)
    base = reference(method, case)
    est = make(method).fit(p.X, p.codes, a * p.aligned + b)
    assert est.do_early_stopping_ is EARLY_STOPPING[case]
    spread = a * np.ptp(p.means)
    np.testing.assert_allclose(
        est.predict(p.X), a * base + b, rtol=1e-5, atol=1e-5 * spread
    )


@pytest.mark.parametrize("method", METHODS)
def test_affine_instance_targets_give_affine_predictions(method):
    p = problem("few")
    base = make(method).fit(p.X, p.y).predict(p.X)
    pred = make(method).fit(p.X, 2.0 * p.y - 5.0).predict(p.X)
    np.testing.assert_allclose(pred, 2.0 * base - 5.0, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------
# 5. failures, reproducibility, clone and pickle
# ----------------------------------------------------------------------
class TrainingSpy(Callback):
    """Counts the starts of training; raises at an epoch's end when armed."""

    def __init__(self):
        self.trainings = 0
        self.armed = False

    def on_train_begin(self, net, **kwargs):
        self.trainings += 1

    def on_epoch_end(self, net, **kwargs):
        if self.armed:
            raise CallbackFailure("raised by the test's callback")


class CallbackFailure(RuntimeError):
    pass


def _invalid(case):
    """(bags, targets, expected error, message pattern) of a refit."""
    p = problem("few")
    if case == "nan_targets":
        targets = p.aligned.copy()
        targets[p.codes == 3] = np.nan
        return p.codes, targets, ValueError, "targets"
    if case == "inf_in_per_bag_dict":
        return p.codes, {**dict(enumerate(p.means)), 3: np.inf}, ValueError, "targets"
    if case == "targets_differing_within_a_bag":
        targets = p.aligned.copy()
        targets[np.flatnonzero(p.codes == 1)[0]] += 1.0
        return p.codes, targets, ValueError, "same bag"
    if case == "missing_bag_in_table":
        return p.codes, dict(enumerate(p.means[:-1])), ValueError, "no row"
    if case == "wrong_number_of_bag_ids":
        return p.codes[:-1], p.aligned[:-1], ValueError, r"\bbags\b|\by\b|rows"
    if case == "two_column_targets":
        return p.codes, np.c_[p.aligned, p.aligned], ValueError, "targets"
    if case == "callback_raises_at_epoch_end":
        return p.codes, p.aligned, CallbackFailure, "test's callback"
    raise AssertionError(case)


FAILURES = [
    "nan_targets",
    "inf_in_per_bag_dict",
    "targets_differing_within_a_bag",
    "missing_bag_in_table",
    "wrong_number_of_bag_ids",
    "two_column_targets",
    "callback_raises_at_epoch_end",
]


@pytest.mark.parametrize("case", FAILURES)
@pytest.mark.parametrize("method", METHODS)
def test_a_failing_fit_leaves_the_model_as_it_was_or_unfitted(method, case):
    p = problem("few")
    spy = TrainingSpy()
    est = make(method, callbacks=[("spy", spy)]).fit(p.X, p.codes, p.aligned)
    before = {
        "predict": est.predict(p.X),
        "target_mean_": est.target_mean_,
        "target_scale_": est.target_scale_,
    }
    bags, targets, error, match = _invalid(case)
    # a refit on other targets would change the standardisation: the refused
    # fit must not have committed it
    if case != "callback_raises_at_epoch_end":
        targets = targets * 3.0 + 1.0 if isinstance(targets, np.ndarray) else targets
    spy.trainings = 0
    spy.armed = case == "callback_raises_at_epoch_end"
    with pytest.raises(error, match=match):
        est.fit(p.X, bags, targets)
    spy.armed = False
    if case != "callback_raises_at_epoch_end":
        assert spy.trainings == 0, "invalid input must be refused before training"
    try:
        pred = est.predict(p.X)
    except NotFittedError:
        return
    assert case != "callback_raises_at_epoch_end", "a half-trained model predicts"
    np.testing.assert_array_equal(pred, before["predict"])
    assert est.target_mean_ == before["target_mean_"]
    assert est.target_scale_ == before["target_scale_"]


@pytest.mark.parametrize("case", PROBLEMS)
@pytest.mark.parametrize("method", METHODS)
def test_seeded_fits_are_reproducible(method, case):
    p = problem(case)
    est = make(method)
    first = est.fit(p.X, p.codes, p.aligned).predict(p.X)
    again = est.fit(p.X, p.codes, p.aligned).predict(p.X)  # warm_start=False
    np.testing.assert_array_equal(first, reference(method, case))
    np.testing.assert_array_equal(again, first)
    # a refit on other targets after a fit is a fresh fit
    est.fit(p.X, p.codes, 2.0 * p.aligned)
    np.testing.assert_array_equal(est.fit(p.X, p.codes, p.aligned).predict(p.X), first)


@pytest.mark.parametrize("method", METHODS)
def test_clone_and_pickle_keep_the_model_and_its_hyperparameters(method):
    p = problem("few")
    params = {"method__rho": 0.25} if method == "interpolating" else {}
    est = make(method, **params).fit(p.X, p.codes, p.aligned)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict(p.X), est.predict(p.X))
    assert restored.target_mean_ == est.target_mean_
    assert restored.target_scale_ == est.target_scale_
    cloned = clone(est)
    for key, value in params.items():
        assert cloned.get_params()[key] == value
        assert restored.get_params()[key] == value
    np.testing.assert_array_equal(
        cloned.fit(p.X, p.codes, p.aligned).predict(p.X), est.predict(p.X)
    )
    if method == "interpolating":
        assert cloned.method_.rho == 0.25
        # the hyperparameter is used: another rho is another model
        other = make(method, method__rho=0.9).fit(p.X, p.codes, p.aligned)
        assert not np.array_equal(other.predict(p.X), est.predict(p.X))
        # and set_params reaches it
        cloned.set_params(method__rho=0.9).fit(p.X, p.codes, p.aligned)
        np.testing.assert_array_equal(cloned.predict(p.X), other.predict(p.X))


# ----------------------------------------------------------------------
# 6. metrics and scorers
# ----------------------------------------------------------------------
METRICS = {
    "r2": bag_r2_score,
    "mse": bag_mean_squared_error,
    "mae": bag_mean_absolute_error,
}


def some_predictions(p):
    return p.X @ [0.9, -1.8, 0.4, 0.3] + 0.2


def by_hand(p, y_pred, weights=None):
    w = np.ones(len(p.codes)) if weights is None else weights
    f = np.bincount(p.codes, weights=w * y_pred) / np.bincount(p.codes, weights=w)
    r = p.means - f
    return {
        "mse": np.mean(r**2),
        "mae": np.mean(np.abs(r)),
        "r2": 1 - np.sum(r**2) / np.sum((p.means - p.means.mean()) ** 2),
    }


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("metric", sorted(METRICS))
@pytest.mark.parametrize("case", PROBLEMS)
def test_bag_metrics_are_the_same_for_every_form(case, metric, weighted):
    p = problem(case)
    y_pred = some_predictions(p)
    w = integer_weights(len(p.codes)) if weighted else None
    expected = METRICS[metric](p.codes, p.aligned, y_pred, sample_weight=w)
    assert expected == pytest.approx(by_hand(p, y_pred, w)[metric], rel=1e-12)
    for form in sorted(FORMS):
        bags, targets = FORMS[form](p)
        if form.startswith("bags_object") and weighted:
            bags = check_bags(bags, sample_weight=w)
        value = METRICS[metric](bags, targets, y_pred, sample_weight=w)
        # the same bag sums in the same order: the identical number
        assert value == expected, form


@pytest.mark.parametrize("method", METHODS)
def test_score_is_the_bag_r2_of_predict_for_every_form(method):
    p = problem("few")
    est = make(method).fit(p.X, p.codes, p.aligned)
    y_pred = est.predict(p.X)
    expected = bag_r2_score(p.codes, p.aligned, y_pred)
    w = integer_weights(len(p.codes))
    expected_w = bag_r2_score(p.codes, p.aligned, y_pred, sample_weight=w)
    assert expected_w != expected
    for form in sorted(FORMS):
        bags, targets = FORMS[form](p)
        assert est.score(p.X, bags, targets) == expected, form
        if not form.startswith("bags_object"):
            assert est.score(p.X, bags, targets, sample_weight=w) == expected_w, form
    with pytest.raises(ValueError, match="targets"):
        est.score(p.X, p.codes)  # bag ids are no instance targets


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_scorers_agree_with_the_metrics_and_with_each_other(metric):
    p = problem("few")
    est = make("bag").fit(p.X, p.codes, p.aligned)
    sign = 1.0 if metric == "r2" else -1.0
    expected = sign * METRICS[metric](p.codes, p.aligned, est.predict(p.X))
    routed = BagScorer(metric)(est, p.X, p.codes, targets=p.aligned)
    table = make_bag_scorer(metric, bags=p.codes, targets=p.aligned)
    by_table = table(est, p.X, p.codes)
    by_bags_object = BagScorer(metric)(est, p.X, check_bags(p.codes, targets=p.aligned))
    assert routed == by_table == by_bags_object == expected


def _bag_folds(p, n_splits=2):
    fold = np.arange(p.n_bags) % n_splits
    return [
        (np.flatnonzero(fold[p.codes] != k), np.flatnonzero(fold[p.codes] == k))
        for k in range(n_splits)
    ]


def test_cross_validation_scores_agree_with_routing_on_and_off():
    p = problem("many")
    est = make("bag")
    cv = _bag_folds(p)
    table_scorer = make_bag_scorer("r2", bags=p.codes, targets=p.aligned)
    # routing off: targets go to fit as a sample-aligned fit parameter and
    # the scorer looks the test bags up in its table
    off = cross_validate(
        est, p.X, p.codes, cv=cv, scoring=table_scorer, params={"targets": p.aligned}
    )["test_score"]
    with sklearn.config_context(enable_metadata_routing=True):
        on = cross_validate(
            est,
            p.X,
            p.codes,
            cv=cv,
            scoring=BagScorer("r2"),
            params={"targets": p.aligned},
        )["test_score"]
    by_hand_scores = []
    for train, test in cv:
        model = clone(est).fit(p.X[train], p.codes[train], p.aligned[train])
        by_hand_scores.append(
            bag_r2_score(p.codes[test], p.aligned[test], model.predict(p.X[test]))
        )
    np.testing.assert_array_equal(off, by_hand_scores)
    np.testing.assert_array_equal(on, by_hand_scores)


# ----------------------------------------------------------------------
# 7. noise-aware weights weigh every bag by its inverse variance
# ----------------------------------------------------------------------
def _released(seed=0):
    sizes = np.tile([2, 4, 16, 8, 32, 4, 2, 8], 2)
    codes = np.random.RandomState(seed).permutation(np.repeat(np.arange(16), sizes))
    y = np.random.RandomState(seed + 1).uniform(0, 1, len(codes))
    table = dp_bag_means(codes, y, 1.0, bounds=(0, 1), random_state=seed)
    return codes, table


def test_noise_aware_row_weights_add_up_to_the_bag_weights():
    codes, table = _released()
    per_bag = noise_aware_bag_weights(table, target_variance=0.05)
    per_row = noise_aware_bag_weights(table, codes, target_variance=0.05)
    totals = np.bincount(codes, weights=per_row)
    np.testing.assert_allclose(totals / totals.mean(), per_bag.to_numpy(), rtol=1e-12)
    # equal within a bag: the bag's weighted mean prediction is its mean
    for bag in range(len(table)):
        assert np.ptp(per_row[codes == bag]) == 0


def _loss_batches(codes, weights, means, pred, groups):
    """``BagBatch`` of the bags of every group (each group one batch)."""
    batches = []
    for group in groups:
        rows = np.concatenate([np.flatnonzero(codes == b) for b in group])
        segments = np.repeat(np.arange(len(group)), [np.sum(codes == b) for b in group])
        batches.append(
            (
                torch.tensor(pred[rows], dtype=torch.float32)[:, None],
                BagBatch(
                    torch.as_tensor(segments),
                    torch.tensor(means[group], dtype=torch.float32)[:, None],
                    torch.as_tensor(np.asarray(group)),
                    None,
                    None
                    if weights is None
                    else torch.tensor(weights[rows], dtype=torch.float32),
                    None,
                ),
                len(rows),
            )
        )
    return batches


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("method", METHODS)
def test_the_bag_loss_weighs_a_bag_by_its_rows_total_weight_across_batches(
    method, weighted
):
    """The loss of a full batch weighs bag ``a`` by ``W_a``, its rows' total
    weight (what ``noise_aware_bag_weights`` relies on); an epoch of smaller
    batches must estimate the same objective: the batches' losses, each
    weighted by its share of the rows (the sampler packs batches by rows),
    add up to the full-batch loss. A batch loss normalised by its own total
    weight breaks this: a batch of low-weight (noisy) bags then pulls as
    hard as a batch of high-weight ones, undoing the inverse-variance
    weighting between batches."""
    codes, table = _released()
    weights = (
        noise_aware_bag_weights(table, codes, target_variance=0.05)
        if weighted
        else None
    )
    rng = np.random.RandomState(3)
    means = table["mean"].to_numpy()
    pred = rng.normal(0.5, 0.3, len(codes))
    bags = check_bags(codes, targets=dict(enumerate(means)), sample_weight=weights)
    loss = make(method).initialize_method()
    loss = loss.method_
    loss.prepare(bags, np.random.RandomState(0))
    (full,) = _loss_batches(codes, weights, means, pred, [np.arange(16)])
    full_loss = float(loss.get_loss(None, None, full[0], full[1], 0, 1))
    # the noisiest (smallest) bags in one batch, the others in another
    order = np.argsort(table["size"].to_numpy(), kind="stable")
    split = _loss_batches(codes, weights, means, pred, [order[:8], order[8:]])
    epoch = sum(
        float(loss.get_loss(None, None, logits, batch, 0, 1)) * n_rows / len(codes)
        for logits, batch, n_rows in split
    )
    assert epoch == pytest.approx(full_loss, rel=1e-5)


def test_noise_aware_weights_as_sample_weight_in_one_batch_weigh_the_bags():
    # one full batch: the fit equals a fit whose loss weighs every bag by its
    # per-bag weight, i.e. integer per-bag weights == duplicated bags
    codes, table = _released()
    rng = np.random.RandomState(0)
    X = rng.normal(size=(len(codes), 3))
    means = table["mean"].to_numpy()
    per_bag = np.array([1.0, 3.0, 2.0, 1.0] * 4)
    sizes = table["size"].to_numpy()
    row_weights = (per_bag / sizes)[codes]
    weighted = one_sgd_step("bag").fit(
        X, codes, means[codes], sample_weight=row_weights
    )
    # bag b duplicated per_bag[b] times, each copy a bag of its own
    copies = [(b, k) for b in range(16) for k in range(int(per_bag[b]))]
    rows = np.concatenate([np.flatnonzero(codes == b) for b, _ in copies])
    ids = np.concatenate([np.full(sizes[b], 100 * b + k) for b, k in copies])
    # the duplicated fit weighs every copy by its size: divide that back out
    dup_weights = np.concatenate([np.full(sizes[b], 1.0 / sizes[b]) for b, _ in copies])
    duplicated = one_sgd_step("bag").fit(
        X[rows], ids, means[codes][rows], sample_weight=dup_weights
    )
    np.testing.assert_allclose(
        weighted.predict(X), duplicated.predict(X), rtol=1e-5, atol=1e-6
    )
    # the per-bag weights matter: without them it is another model
    plain = one_sgd_step("bag").fit(
        X, codes, means[codes], sample_weight=1.0 / sizes[codes]
    )
    assert not np.allclose(plain.predict(X), weighted.predict(X), rtol=1e-4)


# ----------------------------------------------------------------------
# 8. make_bag_means and make_bags
# ----------------------------------------------------------------------
def test_make_bag_means_equals_make_bags_for_a_continuous_target():
    p = problem("few")
    y = np.asarray(p.y)
    bags_a, targets_a = UniformBagGenerator(8, random_state=0).make_bags(p.X, y)
    bags_b, targets_b = UniformBagGenerator(8, random_state=0).make_bag_means(p.X, y)
    np.testing.assert_array_equal(bags_a, bags_b)
    np.testing.assert_array_equal(targets_a, targets_b)
    kept = bags_a >= 0
    expected = check_bags(bags_a[kept], targets=y[kept] * 0 + targets_a[kept])
    for bag, mean in zip(expected.ids, expected.props[:, 0]):
        assert mean == pytest.approx(y[bags_a == bag].mean(), rel=1e-12)


def test_make_bags_of_an_integral_target_gives_proportions_make_bag_means_means():
    p = problem("few")
    hours = np.round(np.abs(p.y) * 3).astype(float)  # integral floats
    gen = UniformBagGenerator(8, random_state=0)
    bags, props = gen.make_bags(p.X, hours)
    assert props.ndim == 2 and props.shape[1] == len(gen.classes_)
    np.testing.assert_array_equal(gen.classes_, np.unique(hours))
    bags_m, means = UniformBagGenerator(8, random_state=0).make_bag_means(p.X, hours)
    np.testing.assert_array_equal(bags, bags_m)
    kept = bags >= 0
    # the proportions imply the same means
    np.testing.assert_allclose(props[kept] @ gen.classes_, means[kept], rtol=1e-12)
    # and proportions given as targets are refused, pointing to make_bag_means
    with pytest.raises(ValueError, match="make_bag_means"):
        make("bag").fit(p.X[kept], bags[kept], props[kept])


def test_a_table_scorer_reads_its_table_by_bag_id_whatever_its_length():
    # a test fold with as many rows as the table has bags: the scorer's own
    # per-bag table must not be taken for sample-aligned targets (it was
    # refused as ambiguous, which cross_validate turned into a silent NaN)
    p = problem("few")
    est = make("bag").fit(p.X, p.codes, p.aligned)
    rows = np.flatnonzero(np.isin(p.codes, [0, 1, 2]))[:8]  # 8 rows, 8 bags
    table_scorer = make_bag_scorer("r2", bags=p.codes, targets=p.aligned)
    assert len(table_scorer.table) == len(rows)
    expected = bag_r2_score(p.codes[rows], p.aligned[rows], est.predict(p.X[rows]))
    assert table_scorer(est, p.X[rows], p.codes[rows]) == expected
    routed = BagScorer("r2")(est, p.X[rows], p.codes[rows], p.aligned[rows])
    assert routed == expected
