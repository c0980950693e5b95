"""Conformance: every LLP estimator gives the same answer to the same question.

An LLP user has no instance labels to catch a wrong answer, so the worst
defect is a silent wrong result: the same bags read two ways, a weight that is
dropped, a class column read by position, a refit that continues from the
last one. Every test here states an equivalence that the documentation
promises (README "The data model", ``check_bags``, ``LLPClassifier.fit``,
``predict``, ``threshold``, ``random_state``) and puts EVERY estimator through
it: ``LLPClassifier`` with every registered method and ``MeanMapClassifier``.

To add an estimator, add one line to ``ESTIMATORS``; a method registered with
``sklearn_llp.methods.register_method`` is picked up by itself (give it extra
parameters in ``METHOD_PARAMS`` if it needs any).

Fits are tiny and seeded (CPU, one thread, two epochs of an 8-unit MLP on 64
rows in 8 bags), so that "the same model" can be checked bit for bit. Bag
sizes are powers of two, so that every proportion, and ``1 - p``, is exact in
floating point and every form of the same proportions is the same numbers.
"""

import functools
import pickle
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import label_proportions
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import IdentifiabilityWarning
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.methods import available_methods, method_params
from sklearn_llp.metrics import hard_l1_error
from sklearn_llp.modules import MLP

pytestmark = [
    pytest.mark.filterwarnings("ignore", category=IdentifiabilityWarning),
    pytest.mark.filterwarnings("ignore", category=ConvergenceWarning),
]

# ----------------------------------------------------------------------
# the estimators
# ----------------------------------------------------------------------
#: Tiny, deterministic LLPClassifier fits.
LLP_PARAMS = dict(
    device="cpu",
    verbose=0,
    max_epochs=2,
    random_state=0,
    n_threads=1,
    module__hidden_sizes=(8,),
)

#: Extra parameters a registered method needs to fit at all (none so far).
METHOD_PARAMS = {}


def _llp(method):
    def make(**params):
        return LLPClassifier(
            method=method, **{**LLP_PARAMS, **METHOD_PARAMS.get(method, {}), **params}
        )

    return make


#: name -> factory(**params) of an unfitted estimator. One line per estimator.
ESTIMATORS = {f"LLPClassifier-{m}": _llp(m) for m in available_methods()}
ESTIMATORS["MeanMapClassifier"] = lambda **params: MeanMapClassifier(**params)

ALL = sorted(ESTIMATORS)
LLP = [name for name in ALL if name.startswith("LLPClassifier-")]

#: MeanMap converged tightly, where a fit is compared to tolerance with a fit
#: on other (equivalent) data: L-BFGS's stopping point is then not the noise.
TIGHT = dict(tol=1e-10, max_iter=10_000)


def make(name, **params):
    return ESTIMATORS[name](**params)


def is_llp(name):
    return name.startswith("LLPClassifier-")


def fitted_state(est):
    """The numbers a fitted model predicts with."""
    if isinstance(est, LLPClassifier):
        return {
            k: v.detach().clone().numpy() for k, v in est.module_.state_dict().items()
        }
    return {"coef_": est.coef_.copy(), "intercept_": est.intercept_.copy()}


# ----------------------------------------------------------------------
# the data
# ----------------------------------------------------------------------
#: Bag sizes: powers of two, so that every proportion k/size (and 1 - it) is
#: exact; unequal, so that size weighting matters.
SIZES = (8, 8, 8, 4, 16, 8, 4, 8)
N = sum(SIZES)


@functools.cache
def problem(n_classes, features="continuous"):
    """64 rows in 8 interleaved bags of different class mixes.

    ``codes``: the bag of every row (0..7, numbered in sorted-id order);
    ``table``: ``label_proportions(codes, y)``; ``bag_props``: its values;
    ``aligned``: the sample-aligned proportions. Never mutate these arrays.
    """
    rng = np.random.RandomState(10 * n_classes + (features == "discrete"))
    n_bags = len(SIZES)
    codes = rng.permutation(np.repeat(np.arange(n_bags), SIZES))
    mixes = rng.dirichlet(np.full(n_classes, 0.7), size=n_bags)
    y = np.array([rng.choice(n_classes, p=mixes[c]) for c in codes])
    y[:n_classes] = np.arange(n_classes)  # every class occurs
    if features == "continuous":
        X = rng.normal(size=(N, 4)) + 1.5 * np.eye(n_classes, 4)[y]
    else:  # four binary columns: 16 distinct rows, tied probabilities
        X = rng.randint(0, 2, size=(N, 4)).astype(float)
        X[:, 0] = np.where(rng.rand(N) < 0.8, y == 1, X[:, 0])
    table = label_proportions(codes, y)
    bag_props = table.to_numpy()
    for array in (X, y, codes, bag_props):
        array.flags.writeable = False
    return SimpleNamespace(
        X=X,
        y=y,
        codes=codes,
        table=table,
        bag_props=bag_props,
        aligned=bag_props[codes],
        n_classes=n_classes,
    )


def onehot(y, n_classes):
    return np.eye(n_classes)[y]


def membership_csc(codes, n_bags):
    return sp.csc_matrix(
        (np.ones(len(codes)), (np.arange(len(codes)), codes)),
        shape=(len(codes), n_bags),
    )


def row_lists(codes, n_bags):
    return [np.flatnonzero(codes == j) for j in range(n_bags)]


def per_bag_index(ids):
    """A named index of bag ids (a named index is never row numbers)."""
    return pd.Index(list(ids), name="bag", tupleize_cols=False)


# ----------------------------------------------------------------------
# 1. the same bags in any form
# ----------------------------------------------------------------------
def _str_ids(codes):
    return [f"bag{c:02d}" for c in codes]  # sorts like the ints


#: Big ids (e.g. unsigned 64-bit hashes) that sort like the codes, some below
#: 2**63 and some at or above it, neighbours among them.
HASHES = [7, 2**40, 2**63 - 1, 2**63, 2**63 + 5, 2**63 + 6, 2**64 - 2, 2**64 - 1]

# name -> (problem -> (bags, props, estimator params)); one form of the bags
# or of the proportions at a time, everything else as in the reference
# (int ids 0..7, sample-aligned props).
BAG_FORMS = {
    "str_ids": lambda p: (_str_ids(p.codes), p.aligned, {}),
    "one_column_list": lambda p: ([[int(c)] for c in p.codes], p.aligned, {}),
    "series": lambda p: (pd.Series(p.codes), p.aligned, {}),
    "bags_object": lambda p: (check_bags(p.codes, p.aligned), None, {}),
    "csc_membership": lambda p: (
        membership_csc(p.codes, len(SIZES)),
        p.bag_props,
        {},
    ),
    "row_index_lists": lambda p: (row_lists(p.codes, len(SIZES)), p.bag_props, {}),
    "tuple_keys": lambda p: ([(int(c) // 3, f"k{c}") for c in p.codes], p.aligned, {}),
    "uint64_hash_array": lambda p: (
        np.array(HASHES, dtype=np.uint64)[p.codes],
        p.aligned,
        {},
    ),
    "int_list_spanning_2**63": lambda p: ([HASHES[c] for c in p.codes], p.aligned, {}),
    "str_ids_with_str_keyed_table": lambda p: (
        _str_ids(p.codes),
        pd.DataFrame(p.bag_props, index=per_bag_index(_str_ids(range(len(SIZES))))),
        {},
    ),
}


def _str_columns(p):
    return [f"c{k}" for k in range(p.n_classes)]


PROPS_FORMS = {
    "positive_fraction": lambda p: (p.codes, p.aligned[:, 1], {}),
    "dict_of_vectors": lambda p: (
        p.codes,
        {int(j): p.bag_props[j] for j in range(len(SIZES))},
        {},
    ),
    "dict_of_fractions": lambda p: (
        p.codes,
        {int(j): float(p.bag_props[j, 1]) for j in range(len(SIZES))},
        {},
    ),
    "series_of_fractions": lambda p: (
        p.codes,
        pd.Series(p.bag_props[:, 1], index=per_bag_index(range(len(SIZES)))),
        {},
    ),
    "frame_int_columns": lambda p: (
        p.codes,
        pd.DataFrame(p.bag_props, index=per_bag_index(range(len(SIZES)))),
        {},
    ),
    "frame_str_columns": lambda p: (
        p.codes,
        pd.DataFrame(
            p.bag_props,
            index=per_bag_index(range(len(SIZES))),
            columns=_str_columns(p),
        ),
        {"classes": _str_columns(p)},
    ),
    "label_proportions_table": lambda p: (
        p.codes,
        label_proportions(p.codes, p.y),
        {},
    ),
}
BINARY_ONLY = {"positive_fraction", "dict_of_fractions", "series_of_fractions"}

FORM_CASES = [
    (form, n_classes)
    for form in [*BAG_FORMS, *PROPS_FORMS]
    for n_classes in (2, 3)
    if not (n_classes == 3 and form in BINARY_ONLY)
]


@functools.cache
def reference_proba(name, n_classes):
    """The model of the reference form: int ids, sample-aligned props."""
    p = problem(n_classes)
    proba = make(name).fit(p.X, p.codes, p.aligned).predict_proba(p.X)
    proba.flags.writeable = False
    return proba


@pytest.mark.parametrize(("form", "n_classes"), FORM_CASES)
@pytest.mark.parametrize("name", ALL)
def test_the_same_bags_in_any_form_give_the_identical_model(name, form, n_classes):
    p = problem(n_classes)
    bags, props, params = {**BAG_FORMS, **PROPS_FORMS}[form](p)
    est = make(name, **params).fit(p.X, bags, props)
    expected_classes = params.get("classes", list(range(n_classes)))
    assert est.classes_.tolist() == expected_classes
    np.testing.assert_array_equal(
        est.predict_proba(p.X), reference_proba(name, n_classes)
    )


# ----------------------------------------------------------------------
# 2. class order is by name
# ----------------------------------------------------------------------
@pytest.mark.parametrize("names", ["int", "str"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ALL)
def test_proportion_columns_are_matched_to_classes_by_name(name, n_classes, names):
    p = problem(n_classes)
    labels = list(range(n_classes)) if names == "int" else ["a", "b", "c"][:n_classes]
    given = labels[1:] + labels[:1]  # classes= in another order than the columns
    table = pd.DataFrame(
        p.bag_props, index=per_bag_index(range(len(SIZES))), columns=labels
    )
    # the same table read two ways must give the same Bags...
    by_name = check_bags(p.codes, table, classes=given)
    matched = check_bags(p.codes, table[given], classes=given)
    np.testing.assert_array_equal(by_name.props, matched.props)
    # ...and the same model
    shuffled = make(name, classes=given).fit(p.X, p.codes, table)
    aligned = make(name, classes=given).fit(p.X, p.codes, table[given])
    assert shuffled.classes_.tolist() == given
    assert aligned.classes_.tolist() == given
    np.testing.assert_array_equal(
        shuffled.predict_proba(p.X), aligned.predict_proba(p.X)
    )


# ----------------------------------------------------------------------
# 3. weights of ones are no weights; a Bags object keeps the weights
# ----------------------------------------------------------------------
def integer_weights(n, seed=0, low=1):
    w = np.random.RandomState(seed).randint(low, 4, n).astype(float)
    w[:2] = [1.0, 3.0]  # never constant
    return w


@pytest.mark.parametrize("weight", [1.0, 2.5])
@pytest.mark.parametrize("through", ["ids", "bags_object"])
@pytest.mark.parametrize("name", ALL)
def test_constant_weights_are_no_weights(name, through, weight):
    p = problem(2)
    w = np.full(N, weight)
    if through == "ids":
        est = make(name).fit(p.X, p.codes, p.aligned, sample_weight=w)
    else:
        est = make(name).fit(p.X, check_bags(p.codes, p.aligned), sample_weight=w)
    np.testing.assert_array_equal(est.predict_proba(p.X), reference_proba(name, 2))


@pytest.mark.parametrize(
    "given", ["sample_weight_with_a_bags_object", "bags_object_built_with_weights"]
)
@pytest.mark.parametrize("name", ALL)
def test_a_bags_object_with_weights_fits_like_ids_with_the_same_weights(name, given):
    p = problem(2)
    w = integer_weights(N)
    expected = (
        make(name).fit(p.X, p.codes, p.aligned, sample_weight=w).predict_proba(p.X)
    )
    # the weights change this model: dropping them would be seen
    assert not np.array_equal(expected, reference_proba(name, 2))
    if given == "sample_weight_with_a_bags_object":
        est = make(name).fit(p.X, check_bags(p.codes, p.aligned), sample_weight=w)
    else:
        est = make(name).fit(p.X, check_bags(p.codes, p.aligned, sample_weight=w))
    np.testing.assert_array_equal(est.predict_proba(p.X), expected)


# ----------------------------------------------------------------------
# 4. integer weights are duplicated rows, a zero weight a removed row
# ----------------------------------------------------------------------
def one_sgd_step(**params):
    """DLLP, one full-batch SGD step: the weights after it are a function of
    the loss's gradient at the (seeded) initial weights only."""
    one_step = dict(
        method="dllp",
        max_epochs=1,
        batch_size=10**6,
        optimizer=torch.optim.SGD,
        lr=0.1,
    )
    return LLPClassifier(**{**LLP_PARAMS, **one_step, **params})


def assert_same_state(actual, desired, rtol, atol):
    assert actual.keys() == desired.keys()
    for key in desired:
        np.testing.assert_allclose(
            actual[key], desired[key], rtol=rtol, atol=atol, err_msg=key
        )


def assert_different_state(a, b):
    assert any(not np.allclose(a[k], b[k], rtol=1e-5, atol=1e-6) for k in a)


TOLERANCE = {
    "one_sgd_step": dict(rtol=1e-5, atol=1e-6),
    "mean_map": dict(rtol=1e-6, atol=1e-9),
}
WEIGHTED_ESTIMATORS = {
    "one_sgd_step": one_sgd_step,
    "mean_map": lambda: MeanMapClassifier(**TIGHT),
}


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("estimator", sorted(WEIGHTED_ESTIMATORS))
def test_integer_weights_fit_like_duplicated_rows(estimator, n_classes):
    p = problem(n_classes)
    factory = WEIGHTED_ESTIMATORS[estimator]
    w = integer_weights(N)
    weighted = factory().fit(p.X, p.codes, p.table, sample_weight=w)
    rows = np.repeat(np.arange(N), w.astype(int))  # each copy stays in its bag
    duplicated = factory().fit(p.X[rows], p.codes[rows], p.table)
    unweighted = factory().fit(p.X, p.codes, p.table)
    assert_different_state(fitted_state(weighted), fitted_state(unweighted))
    assert_same_state(
        fitted_state(weighted), fitted_state(duplicated), **TOLERANCE[estimator]
    )
    if n_classes == 2 and estimator == "mean_map":  # the decision rule too
        assert weighted.threshold_ == pytest.approx(duplicated.threshold_, rel=1e-6)


@pytest.mark.parametrize("zeros", ["some_rows", "a_whole_bag"])
@pytest.mark.parametrize("estimator", sorted(WEIGHTED_ESTIMATORS))
def test_a_zero_weight_removes_the_row(estimator, zeros):
    p = problem(3)
    factory = WEIGHTED_ESTIMATORS[estimator]
    w = np.ones(N)
    if zeros == "some_rows":
        w[np.flatnonzero(p.codes == 0)[:3]] = 0.0
        w[np.flatnonzero(p.codes == 4)[:5]] = 0.0
    else:
        w[p.codes == 2] = 0.0
    kept = w > 0
    zero = factory().fit(p.X, p.codes, p.table, sample_weight=w)
    # the table keeps the removed bag's row: extra bags are ignored
    removed = factory().fit(p.X[kept], p.codes[kept], p.table)
    unweighted = factory().fit(p.X, p.codes, p.table)
    assert_different_state(fitted_state(zero), fitted_state(unweighted))
    assert_same_state(fitted_state(zero), fitted_state(removed), **TOLERANCE[estimator])


# ----------------------------------------------------------------------
# 5. predict is the documented rule; 6. prior matching matches the prior
# ----------------------------------------------------------------------
def documented_prediction(est, proba):
    """``predict`` as ``LLPClassifier.predict`` and ``threshold_`` /
    ``decision_offsets_`` document it, literally: two classes,
    ``classes_[(proba[:, 1] >= threshold_).astype(int)]`` ("the probability
    of classes_[1] from which predict says classes_[1]", 0.5 for argmax);
    more, ``classes_[np.argmax(np.log(proba.astype(np.float64)) +
    decision_offsets_, axis=1)]``.
    """
    if len(est.classes_) == 2:
        return est.classes_[(proba[:, 1] >= est.threshold_).astype(int)]
    with np.errstate(divide="ignore"):
        scores = np.log(proba.astype(np.float64)) + est.decision_offsets_
    return est.classes_[np.argmax(scores, axis=1)]


PREDICT_CASES = [
    (threshold, n_classes)
    for n_classes in (2, 3)
    for threshold in ("auto", "prior", "argmax", 0.3)
    if not (n_classes == 3 and threshold == 0.3)
]

#: Mean Map without an intercept predicts exactly [0.5, 0.5] for a row of
#: zeros: the tie of the binary rule itself.
PREDICT_ESTIMATORS = {
    **ESTIMATORS,
    "MeanMapClassifier-no-intercept": lambda **params: MeanMapClassifier(
        fit_intercept=False, **params
    ),
}


@pytest.mark.parametrize("features", ["discrete", "continuous"])
@pytest.mark.parametrize(("threshold", "n_classes"), PREDICT_CASES)
@pytest.mark.parametrize("name", sorted(PREDICT_ESTIMATORS))
def test_predict_follows_the_documented_decision_rule(
    name, threshold, n_classes, features
):
    p = problem(n_classes, features)
    est = PREDICT_ESTIMATORS[name](threshold=threshold).fit(p.X, p.codes, p.aligned)
    X = np.vstack([p.X, np.zeros((1, p.X.shape[1])), p.X[:8] + 0.5])
    proba = est.predict_proba(X)
    if n_classes == 2:
        if threshold == "argmax":
            assert est.threshold_ == 0.5
        elif threshold == 0.3:
            assert est.threshold_ == pytest.approx(0.3, rel=1e-12)
    mismatch = np.flatnonzero(est.predict(X) != documented_prediction(est, proba))
    assert mismatch.size == 0, (
        f"{mismatch.size} rows differ from the documented rule, e.g. row "
        f"{mismatch[0]}: proba {proba[mismatch[0]].tolist()}, threshold_ "
        f"{est.threshold_!r}, decision_offsets_ {est.decision_offsets_.tolist()}"
    )


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", LLP)
def test_half_precision_fits_every_method_with_float32_weights(name, precision):
    # precision=: forward passes under autocast; weights, losses and the
    # probabilities predict_proba returns stay float32, predict follows the rule
    p = problem(3)
    est = make(name, precision=precision).fit(p.X, p.codes, p.aligned)
    assert all(w.dtype == torch.float32 for w in est.module_.parameters())
    assert np.isfinite(est.history[:, "train_loss"]).all()
    proba = est.predict_proba(p.X)
    assert proba.dtype == np.float32 and np.isfinite(proba).all()
    np.testing.assert_array_equal(est.predict(p.X), documented_prediction(est, proba))


@pytest.mark.parametrize("features", ["continuous", "discrete"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ALL)
def test_prior_matching_predicts_the_class_rates_of_the_bags(name, n_classes, features):
    p = problem(n_classes, features)
    est = make(name, threshold="prior").fit(p.X, p.codes, p.aligned)
    prior = np.asarray(SIZES) @ p.bag_props / N  # size-weighted mean proportions
    proba = est.predict_proba(p.X)
    codes = np.searchsorted(est.classes_, est.predict(p.X))
    rates = np.bincount(codes, minlength=n_classes) / N
    _, ties = np.unique(proba, axis=0, return_counts=True)
    if features == "continuous":
        assert ties.max() == 1, "the probabilities must be untied here"
        slack = 1.0 / N  # one row per class
    else:
        slack = ties.max() / N  # a group of tied rows moves at once
    assert np.abs(rates - prior).max() <= slack + 1e-12, (rates, prior, slack)


# ----------------------------------------------------------------------
# 7. clone, get_params/set_params and pickle
# ----------------------------------------------------------------------
#: A hyperparameter value per method, distinct from the default.
HYPERPARAMETERS = {
    "dllp": {},
    "vat": {"method__alpha": 0.123, "method__eps": 0.456},
    "pi": {"method__alpha": 0.123, "method__noise_std": 0.456},
    "rot": {"method__rot_alpha": 0.123},
    "llpfc": {"method__regroup_every": 3},
    "easyllp": {"method__loss": "square"},
    "noisy": {"method__scale": 0.123, "method__weighting": "reliability"},
}


def hyperparameters(name):
    if not is_llp(name):
        return {"C": 0.123, "mean_alpha": 0.456}
    method = name.removeprefix("LLPClassifier-")
    if method in HYPERPARAMETERS:
        return HYPERPARAMETERS[method]
    # a method registered later: its first float hyperparameter
    for key, value in method_params(method).items():
        if isinstance(value, float) and not isinstance(value, bool):
            return {f"method__{key}": 0.123}
    return {}


def assert_hyperparameters(est, params):
    got = est.get_params()
    for key, value in params.items():
        assert got[key] == value, key


@pytest.mark.parametrize("name", ALL)
def test_clone_set_params_and_pickle_keep_method_hyperparameters(name):
    params = hyperparameters(name)
    est = make(name, **params)
    assert_hyperparameters(est, params)
    assert_hyperparameters(clone(est), params)
    assert_hyperparameters(pickle.loads(pickle.dumps(est)), params)
    later = make(name).set_params(**params)
    assert_hyperparameters(later, params)
    assert_hyperparameters(clone(later), params)
    # and the fit uses them
    p = problem(2)
    for fitted in (
        clone(est).fit(p.X, p.codes, p.aligned),
        later.fit(p.X, p.codes, p.aligned),
    ):
        assert_hyperparameters(fitted, params)
        if is_llp(name):
            for key, value in params.items():
                assert getattr(fitted.method_, key.removeprefix("method__")) == value
        else:
            for key, value in params.items():
                assert getattr(fitted, key) == value
        assert_hyperparameters(pickle.loads(pickle.dumps(fitted)), params)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ALL)
def test_pickle_keeps_the_fitted_model(name, n_classes):
    p = problem(n_classes)
    est = make(name).fit(p.X, p.codes, p.aligned)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict_proba(p.X), est.predict_proba(p.X))
    np.testing.assert_array_equal(restored.predict(p.X), est.predict(p.X))
    np.testing.assert_array_equal(restored.classes_, est.classes_)
    np.testing.assert_array_equal(restored.decision_offsets_, est.decision_offsets_)


# ----------------------------------------------------------------------
# 8. a failing fit leaves the estimator as it was
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
    """(X, bags, props, set_params, expected error, message pattern)."""
    p, p3 = problem(2), problem(3)
    if case == "props_rows_not_summing_to_one":
        return p.X, p.codes, p.aligned * 0.9, {}, ValueError, "props"
    if case == "wrong_number_of_bag_ids":
        return p.X, p.codes[:-1], p.aligned, {}, ValueError, r"\bbags\b|\by\b"
    if case == "nan_in_X":
        X = p.X.copy()
        X[5, 1] = np.nan
        return X, p.codes, p.aligned, {}, ValueError, r"\bX\b"
    if case == "float_threshold_with_three_classes":
        return p3.X, p3.codes, p3.aligned, {"threshold": 0.3}, ValueError, "threshold"
    if case == "callback_raises_at_epoch_end":
        return p.X, p.codes, p.aligned, {}, CallbackFailure, "test's callback"
    raise AssertionError(case)


FAILURES = [
    "props_rows_not_summing_to_one",
    "wrong_number_of_bag_ids",
    "nan_in_X",
    "float_threshold_with_three_classes",
    "callback_raises_at_epoch_end",
]
FAILURE_CASES = [
    (name, case)
    for name in ALL
    for case in FAILURES
    if is_llp(name) or case != "callback_raises_at_epoch_end"
]


@pytest.mark.parametrize(("name", "case"), FAILURE_CASES)
def test_a_failing_fit_leaves_the_model_as_it_was_or_unfitted(name, case):
    p = problem(2)
    spy = TrainingSpy()
    params = {"threshold": 0.3}
    if is_llp(name):
        params["callbacks"] = [("spy", spy)]
    est = make(name, **params).fit(p.X, p.codes, p.aligned)
    before = {
        "proba": est.predict_proba(p.X),
        "predict": est.predict(p.X),
        "classes_": est.classes_.copy(),
        "decision_offsets_": est.decision_offsets_.copy(),
    }
    X, bags, props, set_params, error, match = _invalid(case)
    est.set_params(**set_params)
    spy.trainings = 0
    spy.armed = case == "callback_raises_at_epoch_end"
    with pytest.raises(error, match=match):
        est.fit(X, bags, props)
    spy.armed = False
    if is_llp(name) and case != "callback_raises_at_epoch_end":
        assert spy.trainings == 0, "invalid input must be refused before training"
    try:
        proba = est.predict_proba(p.X)
    except NotFittedError:
        with pytest.raises(NotFittedError):
            est.predict(p.X)
        return
    np.testing.assert_array_equal(est.classes_, before["classes_"])
    np.testing.assert_array_equal(proba, before["proba"])
    np.testing.assert_array_equal(est.predict(p.X), before["predict"])
    np.testing.assert_array_equal(est.decision_offsets_, before["decision_offsets_"])


# ----------------------------------------------------------------------
# 9. seeded fits are reproducible and independent
# ----------------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ALL)
def test_seeded_fits_are_reproducible(name, n_classes):
    p = problem(n_classes)
    est = make(name)
    first = est.fit(p.X, p.codes, p.aligned).predict_proba(p.X)
    again = est.fit(p.X, p.codes, p.aligned).predict_proba(p.X)  # warm_start=False
    other = make(name).fit(p.X, p.codes, p.aligned).predict_proba(p.X)
    np.testing.assert_array_equal(again, first)
    np.testing.assert_array_equal(other, first)


def _instance_params():
    return {k: v for k, v in LLP_PARAMS.items() if not k.startswith("module__")}


@pytest.mark.parametrize("name", LLP)
def test_refitting_a_module_instance_starts_afresh(name):
    p = problem(2)
    module = MLP(n_features=p.X.shape[1], n_classes=2, hidden_sizes=(8,))
    est = make(name, module=module, **_instance_params())
    assert not est.warm_start
    first = est.fit(p.X, p.codes, p.aligned).predict_proba(p.X)
    again = est.fit(p.X, p.codes, p.aligned).predict_proba(p.X)
    np.testing.assert_array_equal(again, first)


@pytest.mark.parametrize("name", LLP)
def test_estimators_sharing_a_module_instance_are_independent(name):
    p = problem(2)
    module = MLP(n_features=p.X.shape[1], n_classes=2, hidden_sizes=(8,))
    one = make(name, module=module, **_instance_params())
    two = make(name, module=module, **{**_instance_params(), "random_state": 1})
    one.fit(p.X, p.codes, p.aligned)
    before = one.predict_proba(p.X)
    two.fit(p.X, p.codes, p.aligned)
    np.testing.assert_array_equal(one.predict_proba(p.X), before)


@pytest.mark.parametrize("name", LLP)
def test_a_seeded_fit_leaves_the_global_torch_rng_untouched(name):
    # README: "random_state: an int makes a CPU fit bit-for-bit reproducible
    # [...] (the global torch RNG is left untouched)"
    p = problem(2)
    state = torch.get_rng_state()
    make(name).fit(p.X, p.codes, p.aligned)
    assert torch.equal(torch.get_rng_state(), state)


@pytest.mark.parametrize("name", LLP)
def test_predicting_leaves_the_global_torch_rng_untouched(name):
    # a user's seeded pipeline draws the same numbers whether or not it
    # predicted in between (skorch's DataLoader draws a base seed)
    p = problem(2)
    est = make(name).fit(p.X, p.codes, p.aligned)
    state = torch.get_rng_state()
    est.predict(p.X)
    if hasattr(est, "predict_proba"):
        est.predict_proba(p.X)
    assert torch.equal(torch.get_rng_state(), state)


# ----------------------------------------------------------------------
# 10. the supervised path is singleton bags
# ----------------------------------------------------------------------
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", ALL)
def test_fit_on_labels_equals_fit_on_singleton_bags_with_one_hot_props(name, n_classes):
    # README: "With props=None, y holds class labels and every row is its own
    # bag"; MeanMapClassifier: "Bags of one row with one-hot proportions give
    # the same statistics up to the ridge" (mean_alpha=0: no ridge).
    p = problem(n_classes)
    params = {} if is_llp(name) else dict(mean_alpha=0.0, **TIGHT)
    labels = make(name, **params).fit(p.X, p.y)
    singletons = make(name, **params).fit(p.X, np.arange(N), onehot(p.y, n_classes))
    np.testing.assert_array_equal(labels.classes_, singletons.classes_)
    if is_llp(name):
        np.testing.assert_array_equal(
            labels.predict_proba(p.X), singletons.predict_proba(p.X)
        )
    else:
        assert_same_state(
            fitted_state(labels), fitted_state(singletons), rtol=1e-6, atol=1e-9
        )


# ----------------------------------------------------------------------
# distinct ids stay distinct bags
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "ids",
    [
        [2**63 + 5, 2**63 + 6],
        [5, 2**63 + 5, 2**63 + 6],
        [2**64 - 2, 2**64 - 1, 3],
        ["a", "a\x00"],
        [("x", 2**63 + 5), ("x", 2**63 + 6)],
    ],
    ids=[
        "uint64_neighbours",
        "list_spanning_2**63",
        "near_2**64",
        "trailing_nul",
        "tuple_keys",
    ],
)
def test_distinct_ids_stay_distinct_bags(ids):
    bags = [i for i in ids for _ in range(2)]
    props = {i: [1.0, 0.0] for i in ids}  # identical props: a merge raises nothing
    validated = check_bags(bags, props)
    assert validated.n_bags == len(ids)
    assert sorted(validated.ids.tolist()) == sorted(ids)
    assert validated.sizes.tolist() == [2] * len(ids)


# ----------------------------------------------------------------------
# 11. Hypothesis: forms, class orders, ties
# ----------------------------------------------------------------------
HYPOTHESIS = settings(
    max_examples=20,
    deadline=None,
    derandomize=True,
    database=None,
    # shrink failures to a minimal example, but skip the costly "explain"
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
#: For the model fits (L-BFGS takes ~20-30 ms even on a handful of rows):
#: fewer examples, no shrinking (the validation-level tests above shrink the
#: same inputs to minimal examples).
HYPOTHESIS_FITS = settings(
    HYPOTHESIS, max_examples=12, phases=[Phase.explicit, Phase.generate]
)

# id kinds: a strategy of distinct values (sorted afterwards)
ID_VALUES = {
    "int": st.integers(0, 2**62),
    "uint64": st.integers(2**63, 2**64 - 1),
    "near_2**63": st.integers(2**63 - 4, 2**63 + 4),
    "any_uint": st.integers(0, 2**64 - 1),
    "str": st.text(
        st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=4
    ),
    "tuple": st.tuples(st.integers(0, 3), st.text("xyz", max_size=2)),
}


def _array_of(ids):
    """``ids`` as the numpy array a user would build."""
    if isinstance(ids[0], tuple):
        out = np.empty(len(ids), dtype=object)
        out[:] = ids
        return out
    if isinstance(ids[0], str):
        return np.array(ids)
    return np.array(ids, dtype=np.uint64 if max(ids) >= 2**63 else np.int64)


ID_FORMS = ["list", "array", "series", "one_column_list", "key_frame", "bags_object"]
MEMBERSHIP_FORMS = ["csc_membership", "row_index_lists"]
BAG_FORM_NAMES = [*ID_FORMS, *MEMBERSHIP_FORMS]
PROPS_KINDS = ["aligned", "aligned_frame", "dict", "frame"]


@st.composite
def bag_problems(draw, max_classes=3, permute_columns=True):
    """Rows in 2-5 bags of 1-4 rows (interleaved), labels, distinct ids of
    one kind, class labels and ``classes=`` in a random order, and the
    order of the table's class columns (that of ``classes`` unless
    ``permute_columns``)."""
    n_bags = draw(st.integers(2, 5))
    sizes = draw(st.lists(st.integers(1, 4), min_size=n_bags, max_size=n_bags))
    # more rows than bags: a per-bag table with one row per sample is
    # ambiguous and documented as an error
    sizes[0] = max(sizes[0], 2)
    n = sum(sizes)
    n_classes = draw(st.integers(2, max_classes))
    order = np.array(draw(st.permutations(range(n))))
    codes = np.repeat(np.arange(n_bags), sizes)[order]
    y = np.array(draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n)))
    kind = draw(st.sampled_from(sorted(ID_VALUES)))
    ids = sorted(
        draw(st.lists(ID_VALUES[kind], min_size=n_bags, max_size=n_bags, unique=True))
    )
    names = draw(st.sampled_from(["int", "str"]))
    labels = (
        list(range(n_classes)) if names == "int" else ["no", "maybe", "yes"][:n_classes]
    )
    classes = list(draw(st.permutations(labels)))
    columns = list(draw(st.permutations(labels))) if permute_columns else classes
    counts = np.zeros((n_bags, n_classes))
    np.add.at(counts, (codes, y), 1.0)
    return SimpleNamespace(
        n=n,
        codes=codes,
        y=y,
        ids=ids,
        row_ids=[ids[c] for c in codes],
        labels=labels,
        classes=classes,
        columns=columns,
        bag_props=counts / counts.sum(axis=1, keepdims=True),  # columns: labels
        sizes=np.asarray(sizes),
    )


def _bags_form(b, form, kind="aligned"):
    """(bags, props) of ``b`` in one form of the bags and one kind of props."""
    if form == "bags_object":
        ids = _array_of(b.row_ids)
        return check_bags(ids, _props_form(b, False, kind), classes=b.classes), None
    membership = form in MEMBERSHIP_FORMS
    props = _props_form(b, membership, kind)
    if form == "list":
        return b.row_ids, props
    if form == "array":
        return _array_of(b.row_ids), props
    if form == "series":
        return pd.Series(_array_of(b.row_ids)), props
    if form == "one_column_list":
        return [[i] for i in b.row_ids], props
    if form == "key_frame":  # composite keys as key columns, else one column
        if isinstance(b.row_ids[0], tuple):
            return pd.DataFrame(b.row_ids, columns=["k0", "k1"]), props
        return pd.DataFrame({"bag": _array_of(b.row_ids)}), props
    if form == "csc_membership":
        return membership_csc(b.codes, len(b.ids)), props
    if form == "row_index_lists":
        return row_lists(b.codes, len(b.ids)), props
    raise AssertionError(form)


def _props_form(b, membership, kind):
    """The proportions: unnamed columns in the order of ``b.classes``, named
    columns in the order of ``b.columns``; one row per bag for membership
    forms (keys 0..n_bags-1), else per row or keyed by bag id."""
    in_classes_order = b.bag_props[:, [b.labels.index(c) for c in b.classes]]
    named = pd.DataFrame(b.bag_props, columns=b.labels)[b.columns]
    keys = list(range(len(b.ids))) if membership else b.ids
    if kind == "aligned":
        return in_classes_order if membership else in_classes_order[b.codes]
    if kind == "aligned_frame":  # default index: rows by position, named columns
        return named if membership else named.iloc[b.codes].reset_index(drop=True)
    if kind == "dict":
        return dict(zip(keys, in_classes_order, strict=True))
    if kind == "frame":
        return named.set_axis(per_bag_index(keys), axis=0)
    raise AssertionError(kind)


def _expected_props(b):
    """Bag proportions in sorted-id order, columns in the order of classes."""
    return b.bag_props[:, [b.labels.index(c) for c in b.classes]]


def _truth(b):
    """The one-hot true labels as "probabilities", columns as classes."""
    return np.eye(len(b.classes))[[b.classes.index(b.labels[k]) for k in b.y]]


def _assert_validated(b, validated, case):
    assert validated.classes.tolist() == b.classes, case
    assert validated.sizes.tolist() == b.sizes.tolist(), case
    np.testing.assert_array_equal(validated.codes, b.codes, err_msg=str(case))
    np.testing.assert_array_equal(
        validated.props, _expected_props(b), err_msg=str(case)
    )


@pytest.mark.parametrize("form", BAG_FORM_NAMES)
@HYPOTHESIS
@given(b=bag_problems(permute_columns=False))
def test_every_form_of_the_same_bags_validates_to_the_same_bags(form, b):
    for kind in PROPS_KINDS:
        bags, props = _bags_form(b, form, kind)
        validated = check_bags(bags, props, n_samples=b.n, classes=b.classes)
        _assert_validated(b, validated, (form, kind))
        if form not in MEMBERSHIP_FORMS:  # the user's ids, as given
            assert validated.ids.tolist() == b.ids, (form, kind)


@pytest.mark.parametrize("form", BAG_FORM_NAMES)
@HYPOTHESIS
@given(b=bag_problems(permute_columns=False))
def test_true_labels_have_zero_hard_l1_error_in_every_form(form, b):
    for kind in PROPS_KINDS:
        bags, props = _bags_form(b, form, kind)
        error = hard_l1_error(bags, props, _truth(b), classes=b.classes)
        assert error == pytest.approx(0.0, abs=1e-12), (form, kind)


@HYPOTHESIS
@given(b=bag_problems(permute_columns=True))
def test_class_columns_are_matched_to_classes_by_name_in_any_order(b):
    for kind in ("aligned_frame", "frame"):  # the named-column forms
        bags, props = _bags_form(b, "array", kind)
        validated = check_bags(bags, props, n_samples=b.n, classes=b.classes)
        _assert_validated(b, validated, kind)
        error = hard_l1_error(bags, props, _truth(b), classes=b.classes)
        assert error == pytest.approx(0.0, abs=1e-12), kind


def _mean_map_problem(seed, n_classes, discrete=False):
    rng = np.random.RandomState(seed)
    n_bags = 6
    codes = rng.permutation(np.repeat(np.arange(n_bags), 8))
    mixes = rng.dirichlet(np.full(n_classes, 0.6), size=n_bags)
    y = np.array([rng.choice(n_classes, p=mixes[c]) for c in codes])
    y[:n_classes] = np.arange(n_classes)
    if discrete:  # 8 distinct rows: tied probabilities
        X = rng.randint(0, 2, size=(len(codes), 3)).astype(float)
    else:
        X = rng.normal(size=(len(codes), 3)) + np.eye(n_classes, 3)[y]
    counts = np.zeros((n_bags, n_classes))
    np.add.at(counts, (codes, y), 1.0)
    return X, codes, y, counts / counts.sum(axis=1, keepdims=True)


@HYPOTHESIS_FITS
@given(
    seed=st.integers(0, 2**16),
    n_classes=st.integers(2, 3),
    names=st.sampled_from(["int", "str"]),
    class_order=st.permutations(range(3)),
    column_order=st.permutations(range(3)),
)
# the default int columns 0..K-1 with classes= in another order
@example(
    seed=0, n_classes=2, names="int", class_order=[1, 0, 2], column_order=[0, 1, 2]
)
@example(
    seed=1, n_classes=3, names="int", class_order=[2, 0, 1], column_order=[0, 1, 2]
)
def test_permuting_classes_and_columns_permutes_predict_proba(
    seed, n_classes, names, class_order, column_order
):
    X, codes, _, bag_props = _mean_map_problem(seed, n_classes)
    labels = list(range(n_classes)) if names == "int" else ["u", "v", "w"][:n_classes]
    classes = [labels[i] for i in class_order if i < n_classes]
    columns = [labels[i] for i in column_order if i < n_classes]
    table = pd.DataFrame(bag_props, index=per_bag_index(range(6)), columns=labels)
    # mean_alpha=0: the ridge alone makes a binary fit depend on which class
    # is first (see test_mean_map_binary_model_does_not_depend_on_the_class_order)
    params = dict(mean_alpha=0.0, **TIGHT)
    reference = MeanMapClassifier(classes=labels, **params).fit(X, codes, table)
    permuted = MeanMapClassifier(classes=classes, **params).fit(
        X, codes, table[columns]
    )
    assert permuted.classes_.tolist() == list(classes)
    position = [labels.index(c) for c in classes]
    np.testing.assert_allclose(
        permuted.predict_proba(X),
        reference.predict_proba(X)[:, position],
        rtol=1e-6,
        atol=1e-9,
    )


def test_mean_map_binary_model_does_not_depend_on_the_class_order():
    """Swapping the two classes (names, columns and ``classes=`` together)
    must swap the columns of ``predict_proba``, with the default ridge too:
    the class order is a naming convention, not data. (A visible ridge and
    a weak penalty make any dependence visible: with the defaults it is
    about 1e-6.)"""
    p = problem(2)
    table = pd.DataFrame(
        p.bag_props, index=per_bag_index(range(len(SIZES))), columns=["a", "b"]
    )
    params = dict(mean_alpha=0.1, C=1.0, **TIGHT)
    first = MeanMapClassifier(classes=["a", "b"], **params).fit(p.X, p.codes, table)
    swapped = MeanMapClassifier(classes=["b", "a"], **params).fit(
        p.X, p.codes, table[["b", "a"]]
    )
    np.testing.assert_allclose(
        swapped.predict_proba(p.X),
        first.predict_proba(p.X)[:, ::-1],
        rtol=1e-6,
        atol=1e-9,
    )


@HYPOTHESIS_FITS
@given(
    seed=st.integers(0, 2**16),
    n_classes=st.integers(2, 3),
    threshold=st.sampled_from(["auto", "prior", "argmax", 0.3, 0.5, 0.7]),
    fit_intercept=st.booleans(),
)
def test_mean_map_predict_follows_the_documented_rule_on_tied_probabilities(
    seed, n_classes, threshold, fit_intercept
):
    if n_classes == 3 and not isinstance(threshold, str):
        threshold = "prior"
    X, codes, _, bag_props = _mean_map_problem(seed, n_classes, discrete=True)
    est = MeanMapClassifier(threshold=threshold, fit_intercept=fit_intercept)
    est.fit(X, codes, bag_props[codes])
    X_eval = np.vstack(
        [X, np.zeros((1, X.shape[1]))]
    )  # ties, and 0.5 without intercept
    proba = est.predict_proba(X_eval)
    np.testing.assert_array_equal(
        est.predict(X_eval), documented_prediction(est, proba)
    )
    if threshold == "prior" or (threshold == "auto" and n_classes == 2):
        prior = np.bincount(codes) @ bag_props / len(codes)
        pred = np.searchsorted(est.classes_, est.predict(X))
        rates = np.bincount(pred, minlength=n_classes) / len(codes)
        _, ties = np.unique(est.predict_proba(X), axis=0, return_counts=True)
        assert np.abs(rates - prior).max() <= ties.max() / len(codes) + 1e-12


@pytest.mark.parametrize("form", BAG_FORM_NAMES)
@HYPOTHESIS_FITS
@given(b=bag_problems(max_classes=2, permute_columns=False))
def test_mean_map_fits_the_same_model_from_every_form_of_the_bags(form, b):
    props_by_code = _expected_props(b)
    if np.count_nonzero(props_by_code.sum(axis=0)) < 2:
        return  # one class in all the data: nothing to fit
    X = np.random.RandomState(b.n).normal(size=(b.n, 3)) + b.y[:, None]
    reference = MeanMapClassifier(classes=b.classes).fit(
        X, b.codes, props_by_code[b.codes]
    )
    bags, props = _bags_form(b, form, "dict")
    est = MeanMapClassifier(classes=b.classes).fit(X, bags, props)
    np.testing.assert_array_equal(est.predict_proba(X), reference.predict_proba(X))
