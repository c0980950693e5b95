"""Conformance: every estimator of ``ESTIMATORS``, for both tasks, gives the same
answer to the same question the docs promise; the last section holds the cases of
issue 32. Fits are tiny and seeded (CPU, one thread, bags of powers of two, so
proportions are exact) and "the same model" is checked bit for bit.
"""

import functools
import pickle
import threading
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
import torch
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning, NotFittedError
from sklearn.model_selection import KFold, cross_validate
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier, LLPRegressor
from sklearn_llp.bags import check_identifiability, label_proportions
from sklearn_llp.core import check_bags, check_fit_inputs
from sklearn_llp.core._partitions import is_per_row
from sklearn_llp.exceptions import BagLeakageWarning, IdentifiabilityWarning
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.methods import MixBag, available_methods, method_params
from sklearn_llp.metrics import (
    BagScorer,
    bag_errors,
    bag_mean_absolute_error,
    bag_mean_squared_error,
    bag_r2_score,
    make_bag_scorer,
)
from sklearn_llp.model_selection import BagKFold
from sklearn_llp.modules import MLP

pytestmark = [
    pytest.mark.filterwarnings("ignore", category=IdentifiabilityWarning),
    pytest.mark.filterwarnings("ignore", category=ConvergenceWarning),
]

C, R = "classification", "regression"

# --- the estimators
#: Tiny, deterministic network fits.
NET = dict(device="cpu", verbose=0, max_epochs=2, random_state=0, n_threads=1)
NET["module__hidden_sizes"] = (8,)
#: Extra parameters a registered method needs to fit at all (none so far).
METHOD_PARAMS = {}
_MIXBAG = MixBag(confidence=0.01)
#: Mean Map converged tightly, where a fit is compared with a fit on other,
#: equivalent data: L-BFGS's stopping point is then not the noise.
TIGHT = dict(tol=1e-10, max_iter=10_000)


def _net(cls, method):
    def make(**params):
        return cls(method=method, **{**NET, **METHOD_PARAMS.get(method, {}), **params})

    return make


#: name -> (task, factory(**params)). One line per estimator.
ESTIMATORS = {
    f"LLPClassifier-{m}": (C, _net(LLPClassifier, m)) for m in available_methods()
}
#: MixBag's mixed bags on (:ref:`mixbag`), under a plain and a consistency
#: loss; a narrow interval, so that tiny mixed bags leave it and count.
MIXBAG = {f"LLPClassifier-{m}-mixbag": m for m in ("dllp", "vat")}
ESTIMATORS |= {
    name: (C, functools.partial(_net(LLPClassifier, m), mixbag=_MIXBAG))
    for name, m in MIXBAG.items()
}
ESTIMATORS["MeanMapClassifier"] = (C, MeanMapClassifier)
ESTIMATORS |= {
    f"LLPRegressor-{m}": (R, _net(LLPRegressor, m)) for m in available_methods(R)
}
ALL = sorted(ESTIMATORS)
NETS = [name for name in ALL if name.startswith("LLP")]
CLASSIFIERS = [name for name in ALL if ESTIMATORS[name][0] == C]
REGRESSORS = [name for name in ALL if ESTIMATORS[name][0] == R]
#: The problems every estimator of a task is checked on: two and three
#: classes; 8 bags (early stopping off) and 50 small bags (on, 5 held out).
VARIANTS = {C: (2, 3), R: ("few", "many")}
CASES = [(name, v) for name in ALL for v in VARIANTS[ESTIMATORS[name][0]]]


def task(name):
    return ESTIMATORS[name][0]


def make(name, **params):
    return ESTIMATORS[name][1](**params)


def output(est, X):
    """What the estimator predicts with: probabilities, or predictions."""
    return est.predict_proba(X) if hasattr(est, "predict_proba") else est.predict(X)


def fitted_state(est):
    """The numbers a fitted model predicts with."""
    if hasattr(est, "module_"):
        state = {k: v.detach().numpy() for k, v in est.module_.state_dict().items()}
        for name in ("target_mean_", "target_scale_"):
            if hasattr(est, name):
                state[name] = np.array(getattr(est, name))
        return state
    return {"coef_": est.coef_.copy(), "intercept_": est.intercept_.copy()}


def assert_same_model(a, b, rtol=1e-5, atol=1e-6):
    first, second = fitted_state(a), fitted_state(b)
    assert first.keys() == second.keys()
    for key in first:
        np.testing.assert_allclose(first[key], second[key], rtol=rtol, atol=atol)


# --- the data
#: Powers of two, so that every proportion k/size is exact; unequal, so that
#: size weighting matters.
SIZES = (8, 8, 8, 4, 16, 8, 4, 8)
MANY = tuple(np.tile([1, 2, 3, 2], 13)[:50])


@functools.cache
def problem(kind, variant):
    """Rows in interleaved bags of different mixes.

    ``codes``: the bag of every row (numbered in sorted-id order); ``y``:
    labels or instance targets; ``per_bag``: the bags' values, ``(n_bags,
    n_classes)`` proportions or ``(n_bags,)`` means; ``aligned``: every row
    its bag's values. Never mutate these arrays.
    """
    sizes = MANY if variant == "many" else SIZES
    n_bags, n = len(sizes), sum(sizes)
    if kind == C:
        rng = np.random.RandomState(10 * variant)
        codes = rng.permutation(np.repeat(np.arange(n_bags), sizes))
        mixes = rng.dirichlet(np.full(variant, 0.7), size=n_bags)
        y = np.array([rng.choice(variant, p=mixes[c]) for c in codes])
        y[:variant] = np.arange(variant)  # every class occurs
        X = rng.normal(size=(n, 4)) + 1.5 * np.eye(variant, 4)[y]
        per_bag = label_proportions(codes, y).to_numpy()
    else:
        rng = np.random.RandomState(n_bags)
        codes = rng.permutation(np.repeat(np.arange(n_bags), sizes))
        X = rng.normal(size=(n, 4)) + 0.5 * rng.normal(size=(n_bags, 4))[codes]
        y = X @ [1.0, -2.0, 0.5, 0.0] + np.sin(X[:, 3]) + 0.1 * rng.normal(size=n)
        per_bag = np.bincount(codes, weights=y) / np.bincount(codes)
    aligned = per_bag[codes]
    for array in (X, y, codes, per_bag, aligned):
        array.flags.writeable = False
    p = SimpleNamespace(X=X, y=y, codes=codes, per_bag=per_bag, aligned=aligned)
    p.n_bags, p.n, p.sizes = n_bags, n, np.asarray(sizes)
    return p


def data(name, variant=None):
    kind = task(name)
    return problem(kind, VARIANTS[kind][0] if variant is None else variant)


@functools.cache
def reference(name, variant):
    """The output of the reference form: int ids, sample-aligned values."""
    p = data(name, variant)
    out = output(make(name).fit(p.X, p.codes, p.aligned), p.X)
    out.flags.writeable = False
    return out


def membership(codes, n_bags):
    return sp.csc_matrix(
        (np.ones(len(codes)), (np.arange(len(codes)), codes)),
        shape=(len(codes), n_bags),
    )


def row_lists(codes, n_bags):
    return [np.flatnonzero(codes == j) for j in range(n_bags)]


def str_ids(codes):
    return [f"bag{c:02d}" for c in codes]  # sorts like the ints


def keyed(values, keys):
    """A per-bag table indexed by ``keys`` (a named index: never row numbers)."""
    index = pd.Index(list(keys), name="bag", tupleize_cols=False)
    if values.ndim == 1:
        return pd.Series(values, index=index)
    return pd.DataFrame(values, index=index)


#: Big ids (64-bit hashes) that sort like the codes, on both sides of 2**63.
HASHES = [7, 2**40, 2**63 - 1, 2**63, 2**63 + 5, 2**63 + 6, 2**64 - 2, 2**64 - 1]


def _key(p):
    return "targets" if p.per_bag.ndim == 1 else "props"


def _columns(p):
    return [f"c{k}" for k in range(p.per_bag.shape[1])]


# fmt: off
#: name -> (problem -> (bags, values[, params])): one form of the bags at a
#: time, the values sample-aligned (or per bag where the form needs it).
BAG_FORMS = {
    "str_ids": lambda p: (str_ids(p.codes), p.aligned),
    "one_column_list": lambda p: ([[int(c)] for c in p.codes], p.aligned),
    "series": lambda p: (pd.Series(p.codes), p.aligned),
    "one_column_frame": lambda p: (pd.DataFrame({"bag": p.codes}), p.aligned),
    "bags_object": lambda p: (check_bags(p.codes, **{_key(p): p.aligned}), None),
    "csc_membership": lambda p: (membership(p.codes, p.n_bags), p.per_bag),
    "csr_membership": lambda p: (membership(p.codes, p.n_bags).tocsr(), p.per_bag),
    "row_index_lists": lambda p: (row_lists(p.codes, p.n_bags), p.per_bag),
    "membership_with_dict": lambda p: (
        membership(p.codes, p.n_bags), dict(enumerate(p.per_bag))),
    "tuple_keys": lambda p: ([(int(c) // 3, f"k{c:02d}") for c in p.codes], p.aligned),
    "uint64_hash_array": lambda p: (
        np.array((HASHES * 7)[: p.n_bags], dtype=object)[p.codes].astype(np.uint64)
        if p.n_bags <= len(HASHES) else p.codes.astype(np.uint64) + np.uint64(2**63),
        p.aligned),
    "interval_keys": lambda p: (  # pd.cut bands in a composite key
        pd.DataFrame({"band": pd.interval_range(0, p.n_bags)[p.codes], "sex": "F"}),
        p.aligned),
    "str_ids_with_str_keyed_table": lambda p: (
        str_ids(p.codes), keyed(p.per_bag, str_ids(range(p.n_bags)))),
}
#: The forms of the values of each task (the bags as int ids).
VALUE_FORMS = {
    C: {
        "positive_fraction": lambda p: (p.aligned[:, 1],),
        "dict_of_vectors": lambda p: (dict(enumerate(p.per_bag)),),
        "dict_of_fractions": lambda p: (
            {j: float(v[1]) for j, v in enumerate(p.per_bag)},),
        "series_of_fractions": lambda p: (keyed(p.per_bag[:, 1], range(p.n_bags)),),
        "frame_int_columns": lambda p: (keyed(p.per_bag, range(p.n_bags)),),
        "frame_str_columns": lambda p: (
            keyed(p.per_bag, range(p.n_bags)).set_axis(_columns(p), axis=1),
            {"classes": _columns(p)}),
        "label_proportions_table": lambda p: (label_proportions(p.codes, p.y),),
    },
    R: {
        "aligned_list": lambda p: (p.aligned.tolist(),),
        "aligned_series": lambda p: (pd.Series(p.aligned),),
        "aligned_column": lambda p: (p.aligned[:, None],),
        "per_bag_dict": lambda p: (dict(enumerate(p.per_bag)),),
        "per_bag_dict_reversed": lambda p: (
            {j: p.per_bag[j] for j in reversed(range(p.n_bags))},),
        "per_bag_series_reversed": lambda p: (
            keyed(p.per_bag, range(p.n_bags)).iloc[::-1],),
        "per_bag_mean_frame": lambda p: (
            keyed(p.per_bag, range(p.n_bags)).to_frame("mean"),),
        "per_bag_sum_size_frame": lambda p: (pd.DataFrame(
            {"sum": p.per_bag * p.sizes, "size": p.sizes},
            index=pd.Index(range(p.n_bags), name="bag")),),
    },
}
# fmt: on
BINARY_ONLY = {"positive_fraction", "dict_of_fractions", "series_of_fractions"}
FORM_CASES = [
    (name, variant, form)
    for name, variant in CASES
    for form in [*BAG_FORMS, *VALUE_FORMS[task(name)]]
    if not (variant == 3 and form in BINARY_ONLY)
]


def form_of(name, variant, form, p=None):
    """``(bags, values, params)``; a value form gives the bags as int ids."""
    p = data(name, variant) if p is None else p
    if form in BAG_FORMS:
        return (*BAG_FORMS[form](p), {})[:3]
    return (p.codes, *VALUE_FORMS[task(name)][form](p), {})[:3]


# --- 1. the same bags and values in any form
@pytest.mark.parametrize(("name", "variant", "form"), FORM_CASES)
def test_the_same_bags_in_any_form_give_the_identical_model(name, variant, form):
    p = data(name, variant)
    bags, values, params = form_of(name, variant, form)
    est = make(name, **params).fit(p.X, bags, values)
    if task(name) == C:
        assert est.classes_.tolist() == params.get("classes", list(range(variant)))
    np.testing.assert_array_equal(output(est, p.X), reference(name, variant))


@pytest.mark.parametrize(
    ("name", "variant", "form"),
    [
        case
        for case in FORM_CASES
        if case[0] in ("MeanMapClassifier", "LLPRegressor-bag")
    ],
)
def test_every_form_reads_to_the_same_bags_and_metrics(name, variant, form):
    p = data(name, variant)
    bags, values, params = form_of(name, variant, form)
    key = _key(p)
    read = check_bags(bags, **{key: values}, n_samples=p.n, **params)
    np.testing.assert_array_equal(read.sizes, p.sizes)
    np.testing.assert_array_equal(read.values.reshape(p.per_bag.shape), p.per_bag)
    rng = np.random.RandomState(0)
    if key == "props":
        out = rng.dirichlet(np.ones(variant), size=p.n)
        metrics = lambda b, v, **kw: bag_errors(b, v, out, **kw)  # noqa: E731
    else:
        out = rng.normal(size=p.n)
        metrics = lambda b, v, **kw: [  # noqa: E731
            f(b, v, out, **kw)
            for f in (bag_mean_squared_error, bag_mean_absolute_error, bag_r2_score)
        ]
    kwargs = {} if key == "targets" else {"classes": params.get("classes")}
    assert metrics(bags, values, **kwargs) == metrics(p.codes, p.aligned)


# --- 2. weights: constant ones are none, zero removes, integers duplicate
def integer_weights(n, seed=0):
    w = np.random.RandomState(seed).randint(1, 4, n).astype(float)
    w[:2] = [1.0, 3.0]  # never constant
    return w


@pytest.mark.parametrize("weights", ["ones", "constant", "integers"])
@pytest.mark.parametrize("given", ["with_ids", "with_a_bags_object", "in_bags"])
@pytest.mark.parametrize("name", ALL)
def test_weights_fit_alike_however_given_and_constant_ones_are_none(
    name, given, weights
):
    p = data(name)
    w = {"ones": 1.0, "constant": 2.5, "integers": integer_weights(p.n)}[weights]
    w, values = np.broadcast_to(w, p.n), {_key(p): p.aligned}
    if given == "with_ids":
        est = make(name).fit(p.X, p.codes, p.aligned, sample_weight=w)
    elif given == "with_a_bags_object":
        est = make(name).fit(p.X, check_bags(p.codes, **values), sample_weight=w)
    else:
        est = make(name).fit(p.X, check_bags(p.codes, **values, sample_weight=w))
    unweighted = reference(name, VARIANTS[task(name)][0])
    if weights != "integers":
        np.testing.assert_array_equal(output(est, p.X), unweighted)
    elif given == "with_ids":  # the weights matter
        assert not np.array_equal(output(est, p.X), unweighted)
    else:
        by_ids = make(name).fit(p.X, p.codes, p.aligned, sample_weight=w)
        np.testing.assert_array_equal(output(est, p.X), output(by_ids, p.X))


@pytest.mark.parametrize("zeros", ["some_rows", "a_whole_bag"])
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_a_zero_weight_removes_the_row(name, variant, zeros):
    p = data(name, variant)
    w = np.ones(p.n)
    if zeros == "some_rows":  # half the rows of every third bag
        for bag in range(0, p.n_bags, 3):
            rows = np.flatnonzero(p.codes == bag)
            w[rows[: len(rows) // 2]] = 0.0
    else:
        w[p.codes == 2] = 0.0
    kept = w > 0
    params = {} if name.startswith("LLP") else TIGHT
    zero = make(name, **params).fit(p.X, p.codes, p.aligned, sample_weight=w)
    # a per-bag table keeps the removed bag: extra bags are ignored
    table = keyed(p.per_bag, range(p.n_bags))
    removed = make(name, **params).fit(p.X[kept], p.codes[kept], table)
    assert_same_model(zero, removed)
    assert not np.array_equal(output(zero, p.X), reference(name, variant))


def one_step(name, **params):
    """One full-batch SGD step of a network (a function of the loss's
    gradient at the seeded initial weights only), or a tight Mean Map."""
    if not name.startswith("LLP"):
        return make(name, **TIGHT, **params)
    step = dict(max_epochs=1, batch_size=10**6, optimizer=torch.optim.SGD, lr=0.1)
    return make(name, early_stopping=False, **step, **params)


#: One estimator of each loss family whose weights are row copies.
WEIGHTED = ["LLPClassifier-dllp", "MeanMapClassifier", *REGRESSORS]


@pytest.mark.parametrize("name", WEIGHTED)
def test_integer_weights_fit_like_duplicated_rows(name):
    # every loss sums w_i * (...) over rows: weight k is k copies of the row in
    # its bag, up to the order of float additions (rtol 1e-5)
    p = data(name, VARIANTS[task(name)][-1] if task(name) == C else "few")
    w = integer_weights(p.n)
    weighted = one_step(name).fit(p.X, p.codes, p.aligned, sample_weight=w)
    rows = np.repeat(np.arange(p.n), w.astype(int))
    duplicated = one_step(name).fit(p.X[rows], p.codes[rows], p.aligned[rows])
    unweighted = one_step(name).fit(p.X, p.codes, p.aligned)
    with pytest.raises(AssertionError):
        assert_same_model(unweighted, duplicated)
    assert_same_model(weighted, duplicated)


# --- 3. instance labels or targets are bags of one row
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_instance_labels_equal_bags_of_one_row(name, variant):
    """``fit(X, y)`` is ``fit(X, arange(n), one_hot(y))`` (or ``y`` as one
    mean per row): the same model and the same predictions, whichever form
    the labels came in."""
    p = data(name, variant)
    params = {} if name.startswith("LLP") else dict(mean_alpha=0.0, **TIGHT)
    values = np.eye(variant)[p.y] if task(name) == C else p.y
    labels = make(name, **params).fit(p.X, p.y)
    singletons = make(name, **params).fit(p.X, np.arange(p.n), values)
    if name.startswith("LLP"):
        np.testing.assert_array_equal(output(labels, p.X), output(singletons, p.X))
    else:
        assert_same_model(labels, singletons, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(labels.predict(p.X), singletons.predict(p.X))


# --- 4. seeds, instances of modules, the global RNG
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_seeded_fits_are_reproducible(name, variant):
    p = data(name, variant)
    est = make(name)
    first = output(est.fit(p.X, p.codes, p.aligned), p.X)
    est.fit(p.X, p.codes, 2 * p.aligned if task(name) == R else p.aligned)
    again = output(est.fit(p.X, p.codes, p.aligned), p.X)  # a refit is afresh
    np.testing.assert_array_equal(first, reference(name, variant))
    np.testing.assert_array_equal(again, first)


def _module(name, p):
    n_outputs = p.per_bag.shape[1] if p.per_bag.ndim == 2 else 1
    return MLP(n_features=p.X.shape[1], n_classes=n_outputs, hidden_sizes=(8,))


@pytest.mark.parametrize("name", NETS)
def test_module_instances_are_templates(name):
    """A refit of an instance starts afresh; estimators sharing one are
    independent."""
    p = data(name)
    module = _module(name, p)
    params = {k: v for k, v in NET.items() if not k.startswith("module__")}
    one = make(name, module=module, **params)
    first = output(one.fit(p.X, p.codes, p.aligned), p.X)
    np.testing.assert_array_equal(output(one.fit(p.X, p.codes, p.aligned), p.X), first)
    make(name, module=module, **{**params, "random_state": 1}).fit(
        p.X, p.codes, p.aligned
    )
    np.testing.assert_array_equal(output(one, p.X), first)


@pytest.mark.parametrize("name", NETS)
def test_fitting_and_predicting_leave_the_global_torch_rng_untouched(name):
    p = data(name)
    state = torch.get_rng_state()
    est = make(name).fit(p.X, p.codes, p.aligned)
    output(est, p.X)
    est.predict(p.X)
    assert torch.equal(torch.get_rng_state(), state)


# --- 5. clone, get_params/set_params and pickle
#: A hyperparameter value per method, distinct from the default.
HYPERPARAMETERS = {
    "vat": {"method__alpha": 0.123, "method__eps": 0.456},
    "pi": {"method__alpha": 0.123, "method__noise_std": 0.456},
    "rot": {"method__rot_alpha": 0.123},
    "llpfc": {"method__regroup_every": 3},
    "easyllp": {"method__loss": "log"},
    "noisy": {
        "method__scale": 0.123,
        "method__weighting": "reliability",
        "method__loss": "shares",
    },
    "interpolating": {"method__lam": 0.25},
    "dllp-mixbag": {"mixbag": 0.5},
    "vat-mixbag": {"mixbag": 0.5, "method__xi": 0.123},
}


def hyperparameters(name):
    if not name.startswith("LLP"):
        return {"C": 0.123, "mean_alpha": 0.456}
    method = name.split("-", 1)[1]
    if method in HYPERPARAMETERS:
        return HYPERPARAMETERS[method]
    for key, value in method_params(method, task=task(name)).items():
        if isinstance(value, float):  # a method registered later
            return {f"method__{key}": 0.123}
    return {}


@pytest.mark.parametrize("name", ALL)
def test_clone_set_params_and_pickle_keep_the_model_and_its_hyperparameters(name):
    p = data(name)
    params = hyperparameters(name)
    fitted = make(name, **params).fit(p.X, p.codes, p.aligned)
    later = make(name).set_params(**params)
    for est in (clone(fitted), pickle.loads(pickle.dumps(fitted)), later, clone(later)):
        got = est.get_params()
        assert {k: got[k] for k in params} == params
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(output(restored, p.X), output(fitted, p.X))
    np.testing.assert_array_equal(restored.predict(p.X), fitted.predict(p.X))
    refitted = later.fit(p.X, p.codes, p.aligned)  # and the fit uses them
    np.testing.assert_array_equal(output(refitted, p.X), output(fitted, p.X))
    for key, value in params.items():
        owner = fitted.method_ if key.startswith("method__") else fitted
        assert getattr(owner, key.removeprefix("method__")) == value


# --- 6. malformed input: refused as by the reader; a refused fit changes nothing
def _lists(p, last):
    """The bags as row-index lists, the last one replaced by ``last``."""
    return [*row_lists(p.codes, p.n_bags)[:-1], np.asarray(last)]


def _mixed(codes):
    return [str(c) if i % 2 else int(c) for i, c in enumerate(codes)]


def _other_task(p):
    """Case 5: the bags carrying values of the other task (means, or props)."""
    if p.per_bag.ndim == 2:
        return check_bags(p.codes, targets=p.aligned[:, 1])
    return check_bags(p.codes, props=1.0 * (p.aligned > 0))


# fmt: off
#: name -> (problem -> (y, values[, sample_weight[, classes]])).
MALFORMED = {
    "bags_shorter_than_X": lambda p: (p.codes[:-1], p.aligned),
    "no_bags": lambda p: (None, p.aligned),
    "bags_with_none": lambda p: (np.where(p.codes == 0, None, p.codes), p.aligned),
    "bags_with_nat": lambda p: (
        pd.to_datetime(p.codes, unit="D").where(p.codes > 0), p.aligned),
    "float_ids_with_nan": lambda p: (
        np.where(p.codes == 0, np.nan, p.codes), p.aligned),
    "ids_mixing_types_in_a_list": lambda p: (_mixed(p.codes), p.aligned),
    "ids_mixing_types_in_an_array": lambda p: (
        np.array(_mixed(p.codes), dtype=object), p.aligned),
    "frozenset_ids": lambda p: (
        pd.Series([frozenset({c}) for c in p.codes]), p.aligned),
    "rows_in_no_bag": lambda p: (np.where(p.codes == 0, -1, p.codes), p.aligned),
    "composite_keys_of_two_lengths": lambda p: (
        [(c,) * (1 + c % 2) for c in p.codes], p.aligned),
    "a_single_bag": lambda p: (np.zeros(p.n, int), p.aligned[np.zeros(p.n, int)]),
    "values_shorter_than_X": lambda p: (p.codes, p.aligned[:-1]),
    "values_with_nan": lambda p: (
        p.codes, np.where(p.codes == 3, np.nan, p.aligned.T).T),
    "values_differing_within_a_bag": lambda p: (
        p.codes, p.per_bag[np.where(p.codes == 1, np.arange(p.n) % 2, p.codes)]),
    "a_table_missing_a_bag": lambda p: (p.codes, dict(enumerate(p.per_bag[:-1]))),
    "props_rows_not_summing_to_1": lambda p: (p.codes, p.aligned * 0.9),
    "a_fraction_outside_0_1": lambda p: (p.codes, p.aligned[:, 1] - 1),
    "duplicate_class_columns": lambda p: (
        p.codes, pd.DataFrame(p.aligned, columns=["a", "a"])),
    "duplicated_class": lambda p: (p.codes, p.aligned, None, [0, 0]),
    "lists_with_a_row_out_of_range": lambda p: (_lists(p, [0, p.n]), p.per_bag),
    "lists_with_an_empty_bag": lambda p: (_lists(p, np.array([], int)), p.per_bag),
    "lists_of_float_indices": lambda p: (_lists(p, [0.5, 1.0]), p.per_bag),
    "lists_with_sample_aligned_values": lambda p: (_lists(p, [0, 1]), p.aligned),
    "membership_of_the_wrong_shape": lambda p: (
        membership(p.codes, p.n_bags)[:-1], p.per_bag),
    "membership_with_an_empty_bag": lambda p: (
        membership(np.maximum(p.codes, 1), p.n_bags), p.per_bag),
    "sample_weight_of_the_wrong_length": lambda p: (
        p.codes, p.aligned, np.ones(p.n - 1)),
    "negative_sample_weight": lambda p: (p.codes, p.aligned, -np.ones(p.n)),
    "weights_leaving_one_bag": lambda p: (p.codes, p.aligned, 1.0 * (p.codes == 0)),
    "bags_of_the_other_task": lambda p: (_other_task(p), None),
    "weights_leaving_one_bag_of_a_bags_object": lambda p: (
        check_bags(p.codes, **{_key(p): p.aligned}), None, 1.0 * (p.codes == 0)),
    "no_y": lambda p: (None, None),
    "labels_shorter_than_X": lambda p: (p.y[:-1], None),
    "labels_of_a_single_class": lambda p: (np.zeros(p.n, int), None),
    "classes_missing_a_label": lambda p: (p.y, None, None, [0, 5]),
    "duplicated_class_with_labels": lambda p: (p.y, None, None, [0, 1, 0]),
}
#: Classification's own inputs; those only fit reads (labels, two bags at least).
PROPS_ONLY = {"props_rows_not_summing_to_1", "a_fraction_outside_0_1",
              "duplicate_class_columns", "duplicated_class",
              "labels_of_a_single_class", "classes_missing_a_label",
              "duplicated_class_with_labels"}
FIT_ONLY = {"a_single_bag", "weights_leaving_one_bag",
            "weights_leaving_one_bag_of_a_bags_object", "no_y",
            "labels_shorter_than_X", "labels_of_a_single_class",
            "classes_missing_a_label", "duplicated_class_with_labels"}
#: Read otherwise: a scorer asks for y itself; score and scorers take no classes.
OTHERWISE = {("scorer", "no_bags"), ("score", "duplicated_class"),
             ("scorer", "duplicated_class")}
# fmt: on
ENTRY_POINTS = {C: [*CLASSIFIERS, "score", "scorer", "metric", "identifiability"]}
ENTRY_POINTS[R] = [*REGRESSORS, "score", "scorer", "metric"]
READ_CASES = [
    (kind, entry, case)
    for kind in (C, R)
    for entry in ENTRY_POINTS[kind]
    for case in MALFORMED
    if (kind == C or case not in PROPS_ONLY)
    and (entry in ESTIMATORS or case not in FIT_ONLY)
    and (entry, case) not in OTHERWISE
]


@functools.cache
def _fitted(kind):
    p = problem(kind, VARIANTS[kind][0])
    name = {C: "LLPClassifier-dllp", R: "LLPRegressor-bag"}[kind]
    return make(name).fit(p.X, p.codes, p.aligned)


def _read(kind, entry, p, y, values, w, classes):
    """The one reader on the input, as ``entry`` reads it."""
    kw = dict(n_samples=p.n, sample_weight=w, classes=classes, task=kind)
    if entry in ESTIMATORS:
        return check_fit_inputs(y, values, **kw)
    rows = {C: "y_proba", R: "y_pred"}[kind] if entry == "metric" else "X"
    return check_bags(y, **{_key(p): values}, rows_of=rows, **kw)


def _enter(kind, entry, p, y, values, w, classes):
    if entry in ESTIMATORS:
        params = {} if classes is None else {"classes": classes}
        return make(entry, **params).fit(p.X, y, values, sample_weight=w)
    if entry in ("score", "scorer"):
        est = _fitted(kind)
        scorer = BagScorer(SCORE_METRIC[kind])
        score = est.score if entry == "score" else functools.partial(scorer, est)
        return score(p.X, y, values, sample_weight=w)
    if entry == "identifiability":
        return check_identifiability(p.X, y, values, sample_weight=w, classes=classes)
    if kind == R:
        return bag_mean_squared_error(y, values, np.zeros(p.n), sample_weight=w)
    out = np.full((p.n, 2), 0.5)
    return bag_errors(y, values, out, sample_weight=w, classes=classes)


@pytest.mark.parametrize(("kind", "entry", "case"), READ_CASES)
def test_every_entry_point_refuses_malformed_input_as_the_reader_does(
    kind, entry, case
):
    """Cases 5 and 7: the reader is one function; every estimator, score,
    scorer, metric and check_identifiability refuses a malformed input with
    the exception and message it gives."""
    p = problem(kind, VARIANTS[kind][0])
    args = (*MALFORMED[case](p), None, None)[:4]
    with pytest.raises((ValueError, TypeError)) as expected:
        _read(kind, entry, p, *args)
    with pytest.raises(Exception) as got:
        _enter(kind, entry, p, *args)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


class CallbackFailure(RuntimeError):
    pass


class TrainingSpy(Callback):
    """Counts the starts of training; raises at an epoch's end when armed."""

    def __init__(self):
        self.trainings, self.armed = 0, False

    def on_train_begin(self, net, **kwargs):
        self.trainings += 1

    def on_epoch_end(self, net, **kwargs):
        if self.armed:
            raise CallbackFailure("raised by the test's callback")


def _refit(name, case):
    """(X, bags, values, set_params, error, message) of a refused or failed refit."""
    p = data(name)
    if case in MALFORMED:
        return (p.X, *MALFORMED[case](p), {}, ValueError, "")
    if case == "nan_in_X":
        X = np.where(np.arange(p.n)[:, None] == 5, np.nan, p.X)
        return X, p.codes, p.aligned, {}, ValueError, "Input X contains NaN"
    if case == "float_threshold_with_three_classes":
        p3 = problem(C, 3)
        return p3.X, p3.codes, p3.aligned, {"threshold": 0.3}, ValueError, "threshold"
    return p.X, p.codes, p.aligned, {}, CallbackFailure, "test's callback"


# fmt: off
FAILURES = ["values_with_nan", "values_differing_within_a_bag", "a_table_missing_a_bag",
            "bags_shorter_than_X", "nan_in_X", "float_threshold_with_three_classes",
            "callback_raises_at_epoch_end"]
# fmt: on
FAILURE_CASES = [
    (name, case)
    for name in ALL
    for case in FAILURES
    if not (case == "callback_raises_at_epoch_end" and name not in NETS)
    and not (case == "float_threshold_with_three_classes" and task(name) == R)
]


def _state(est, X):
    attributes = ("classes_", "decision_offsets_", "target_mean_", "target_scale_")
    state = {a: np.array(getattr(est, a)) for a in attributes if hasattr(est, a)}
    return {**state, "output": output(est, X), "predict": est.predict(X)}


@pytest.mark.parametrize(("name", "case"), FAILURE_CASES)
def test_a_failing_fit_leaves_the_model_as_it_was_or_unfitted(name, case):
    p = data(name)
    spy = TrainingSpy()
    params = {"threshold": 0.3} if task(name) == C else {}
    if name in NETS:
        params["callbacks"] = [("spy", spy)]
    est = make(name, **params).fit(p.X, p.codes, p.aligned)
    before = _state(est, p.X)
    X, bags, values, set_params, error, match = _refit(name, case)
    est.set_params(**set_params)
    spy.trainings, spy.armed = 0, case == "callback_raises_at_epoch_end"
    with pytest.raises(error, match=match):
        est.fit(X, bags, values)
    spy.armed = False
    if case != "callback_raises_at_epoch_end":
        assert spy.trainings == 0, "invalid input must be refused before training"
    try:
        after = _state(est, p.X)
    except NotFittedError:
        assert case == "callback_raises_at_epoch_end"
        return
    assert case != "callback_raises_at_epoch_end", "a half-trained model predicts"
    for key in before:
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


# --- 7. predict is the documented rule; prior matching matches the prior
def documented_prediction(est, proba):
    """``predict`` as documented: two classes ``classes_[proba[:, 1] >=
    threshold_]``; more ``classes_[argmax(log(proba) + decision_offsets_)]``."""
    if len(est.classes_) == 2:
        return est.classes_[(proba[:, 1] >= est.threshold_).astype(int)]
    with np.errstate(divide="ignore"):
        scores = np.log(proba.astype(np.float64)) + est.decision_offsets_
    return est.classes_[np.argmax(scores, axis=1)]


PREDICT_CASES = [
    (threshold, k)
    for k in (2, 3)
    for threshold in ("auto", "prior", "argmax", 0.3)
    if not (k == 3 and threshold == 0.3)
]


@pytest.mark.parametrize(("threshold", "n_classes"), PREDICT_CASES)
@pytest.mark.parametrize("name", [*CLASSIFIERS, "MeanMap-no-intercept"])
def test_predict_follows_the_documented_decision_rule(name, threshold, n_classes):
    p = problem(C, n_classes)
    if name == "MeanMap-no-intercept":  # predicts [0.5, 0.5] for a row of zeros
        est = MeanMapClassifier(fit_intercept=False, threshold=threshold)
    else:
        est = make(name, threshold=threshold)
    est.fit(p.X, p.codes, p.aligned)
    X = np.vstack([p.X, np.zeros((1, p.X.shape[1])), p.X[:8] + 0.5])
    proba = est.predict_proba(X)
    if n_classes == 2 and threshold in ("argmax", 0.3):
        assert est.threshold_ == {"argmax": 0.5, 0.3: pytest.approx(0.3)}[threshold]
    np.testing.assert_array_equal(est.predict(X), documented_prediction(est, proba))


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", CLASSIFIERS)
def test_prior_matching_predicts_the_class_rates_of_the_bags(name, n_classes):
    p = problem(C, n_classes)
    est = make(name, threshold="prior").fit(p.X, p.codes, p.aligned)
    prior = p.sizes @ p.per_bag / p.n  # size-weighted mean proportions
    codes = np.searchsorted(est.classes_, est.predict(p.X))
    rates = np.bincount(codes, minlength=n_classes) / p.n
    assert np.abs(rates - prior).max() <= 1.0 / p.n + 1e-12, (rates, prior)


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", NETS)
def test_half_precision_keeps_float32_weights_and_outputs(name, precision):
    p = data(name)
    est = make(name, precision=precision).fit(p.X, p.codes, p.aligned)
    assert all(w.dtype == torch.float32 for w in est.module_.parameters())
    assert np.isfinite(est.history[:, "train_loss"]).all()
    out = output(est, p.X)
    assert np.isfinite(out).all()
    if task(name) == C:
        assert out.dtype == np.float32
        np.testing.assert_array_equal(est.predict(p.X), documented_prediction(est, out))


# --- 8. scores, scorers and cross-validation agree
#: the metric each task's score is: 1 - hard L1 / 2, and bag R^2
SCORE_METRIC = {C: "hard_l1", R: "r2"}


def _metric(kind, est, bags, values, X, w=None):
    if kind == R:
        return bag_r2_score(bags, values, est.predict(X), sample_weight=w)
    onehot = np.eye(len(est.classes_))[np.searchsorted(est.classes_, est.predict(X))]
    error = bag_errors(bags, values, onehot, metrics=["hard_l1"], sample_weight=w)
    return 1 - error["hard_l1"] / 2


@pytest.mark.parametrize("name", ALL)
def test_score_is_the_bag_metric_of_predict_in_every_form(name):
    p = data(name)
    est = make(name).fit(p.X, p.codes, p.aligned)
    w = integer_weights(p.n)
    expected = _metric(task(name), est, p.codes, p.aligned, p.X)
    expected_w = _metric(task(name), est, p.codes, p.aligned, p.X, w)
    for form in (
        "str_ids",
        "bags_object",
        "row_index_lists",
        "str_ids_with_str_keyed_table",
    ):
        bags, values = BAG_FORMS[form](p)
        assert est.score(p.X, bags, values) == pytest.approx(expected, abs=1e-12), form
        if form != "bags_object":
            weighted = est.score(p.X, bags, values, sample_weight=w)
            assert weighted == pytest.approx(expected_w, abs=1e-12), form
    with pytest.raises(ValueError, match="props|targets"):
        est.score(p.X, p.codes)  # bag ids are no instance labels


@pytest.mark.parametrize("name", ["LLPClassifier-dllp", "LLPRegressor-bag"])
def test_scorers_agree_with_the_score_and_with_each_other(name):
    p = data(name)
    est = make(name).fit(p.X, p.codes, p.aligned)
    metric, key = SCORE_METRIC[task(name)], _key(p)
    routed = BagScorer(metric)(est, p.X, p.codes, **{key: p.aligned})
    table = make_bag_scorer(metric, bags=p.codes, **{key: p.aligned})(est, p.X, p.codes)
    carried = BagScorer(metric)(est, p.X, check_bags(p.codes, **{key: p.aligned}))
    expected = est.score(p.X, p.codes, p.aligned)
    if task(name) == C:
        expected = -2 * (1 - expected)
    assert routed == table == carried == pytest.approx(expected, abs=1e-12)
    # a table scorer reads its table by bag id, whatever the fold's length
    rows = np.flatnonzero(np.isin(p.codes, [0, 1, 2]))[: p.n_bags]
    by_table = make_bag_scorer(metric, bags=p.codes, **{key: p.aligned})
    assert by_table(est, p.X[rows], p.codes[rows]) == BagScorer(metric)(
        est, p.X[rows], p.codes[rows], p.aligned[rows]
    )


@pytest.mark.parametrize("name", ["LLPClassifier-dllp", "LLPRegressor-bag"])
def test_cross_validation_scores_agree_with_routing_on_and_off(name):
    p = data(name, "many" if task(name) == R else 2)
    est, metric, key = make(name), SCORE_METRIC[task(name)], _key(p)
    cv = list(BagKFold(2).split(p.X, p.codes))
    scorer = make_bag_scorer(metric, bags=p.codes, **{key: p.aligned})
    kw = dict(cv=cv, params={key: p.aligned})
    off = cross_validate(est, p.X, p.codes, scoring=scorer, **kw)
    with sklearn.config_context(enable_metadata_routing=True):
        on = cross_validate(est, p.X, p.codes, scoring=BagScorer(metric), **kw)
    fit = lambda tr: clone(est).fit(p.X[tr], p.codes[tr], p.aligned[tr])  # noqa: E731
    by_hand = [scorer(fit(tr), p.X[te], p.codes[te]) for tr, te in cv]
    np.testing.assert_array_equal(off["test_score"], by_hand)
    np.testing.assert_array_equal(on["test_score"], by_hand)
    # forgetting the values would fit y (bag ids) as labels: refused in fit
    with pytest.raises(ValueError, match=f"fit got no {key}.*params="):
        cross_validate(est, p.X, p.codes, cv=cv, scoring=scorer, error_score="raise")


def test_lazy_predict_runs_blocks_safely_on_the_default_device_and_threads():
    # Dask's threads predict blocks of one estimator; device="auto" and
    # n_threads="auto" are swapped in and out while a block predicts
    dd = pytest.importorskip("dask.dataframe")
    p = data("LLPClassifier-dllp")
    est = make("LLPClassifier-dllp", device="auto", n_threads="auto")
    est.fit(p.X, p.codes, p.aligned)
    frame = dd.from_pandas(pd.DataFrame(p.X), npartitions=32)
    for _ in range(5):
        np.testing.assert_allclose(
            est.predict_proba(frame).compute(), est.predict_proba(p.X), rtol=1e-6
        )
    assert est.device == "auto"


def test_read_only_rows_are_copied_not_shared_with_torch():
    from sklearn_llp.neural._data import as_tensor

    X = np.ones((4, 2), dtype=np.float32)
    X.flags.writeable = False  # as pandas hands out float32 frames' values
    assert not np.shares_memory(as_tensor(X).numpy(), X)


def _sorted(p):
    """``p`` with its rows sorted by bag: a Dask fit reads bags whole."""
    order = np.argsort(p.codes, kind="stable")
    rows = {k: getattr(p, k)[order] for k in ("X", "y", "codes", "aligned")}
    return SimpleNamespace(**{**vars(p), **rows})


def _on_dask(p, bags, values, layout):
    """``(X, bags, values)`` of sorted ``p`` on Dask, split at bag starts with
    an empty partition: arrays, or columns of one DataFrame; a per-bag table
    stays as it is."""
    dask, da = pytest.importorskip("dask"), pytest.importorskip("dask.array")
    dd = pytest.importorskip("dask.dataframe")
    starts = np.flatnonzero(np.diff(p.codes, prepend=-1))[::3]  # a cut every 3 bags
    sizes = np.diff(np.r_[starts[:2], starts[1:], p.n]).tolist()  # the 2nd empty
    if layout == "arrays":

        def split(a):
            a = np.asarray(a)
            return da.from_array(a, chunks=(sizes, *a.shape[1:]))

        return split(p.X), split(bags), split(values) if is_per_row(values) else values
    x = pd.DataFrame(p.X, columns=[f"x{j}" for j in range(p.X.shape[1])])
    if isinstance(bags, (pd.Series, pd.DataFrame)):
        keys = pd.DataFrame(bags).reset_index(drop=True)
    else:
        keys = pd.DataFrame({"bag": list(bags)} if np.ndim(bags[0]) == 0 else bags)
    keys.columns = [f"key{j}" for j in range(keys.shape[1])]
    v = pd.DataFrame(values) if is_per_row(values) else pd.DataFrame(index=x.index)
    frame, ends = pd.concat([x, keys, v.add_prefix("v_")], axis=1), np.cumsum(sizes)
    parts = [dask.delayed(frame.iloc[e - n : e]) for n, e in zip(sizes, ends)]
    ddf = dd.from_delayed(parts, meta=frame.iloc[:0])
    one = lambda columns: ddf[columns[0]] if len(columns) == 1 else ddf[columns]  # noqa: E731
    y = one(list(keys.columns))
    if is_per_row(values):
        values = one(list(ddf.columns[-v.shape[1] :]))
        if values.ndim == 2:  # the class columns keep their names
            values = values.rename(columns=dict(zip(values.columns, v.columns)))
    return ddf[list(x.columns)], y, values


def _dask_fit_inputs(name, variant, layout, per_row=True):
    """Sorted ``p`` and its rows on Dask with per-row values or a table."""
    p = _sorted(data(name, variant))
    values = p.aligned if per_row else keyed(p.per_bag, range(p.n_bags))
    return p, *_on_dask(p, p.codes, values, layout)


@pytest.mark.parametrize("max_bag_size", [1024, 3])  # 3: bags in chunks
@pytest.mark.parametrize("form", ["arrays_and_a_table", "arrays", "frame"])
@pytest.mark.parametrize("name", NETS)
def test_dask_fit_streams_the_numpy_fit_bit_for_bit(name, form, max_bag_size):
    # fewer rows than a window: every epoch trains on the same bags and
    # batches as the NumPy fit, in any partition order (an empty one too)
    variant = "many" if task(name) == R else 2
    p, X, bags, values = _dask_fit_inputs(
        name, variant, form[:6], form != "arrays_and_a_table"
    )
    params = dict(
        early_stopping=True, n_iter_no_change=1, max_epochs=3, max_bag_size=max_bag_size
    )
    expected = make(name, **params).fit(p.X, p.codes, p.aligned)
    est = make(name, **params).fit(X, bags, values)
    assert_same_model(est, expected, rtol=0, atol=0)
    assert est.history[:, "valid_loss"] == expected.history[:, "valid_loss"]
    np.testing.assert_array_equal(est.predict(p.X), expected.predict(p.X))
    if form == "frame":
        assert list(est.feature_names_in_) == [f"x{j}" for j in range(4)]


def test_a_dask_fit_reads_a_release_as_memory_does():
    # a DP release's noise reaches the method through the one reader on Dask
    from sklearn_llp.privacy import dp_proportions

    p = _sorted(data("LLPClassifier-dllp", 2))
    table = dp_proportions(p.codes, p.y, epsilon=0.5, classes=[0, 1], random_state=0)
    X, bags, _ = _on_dask(p, p.codes, table, "arrays")
    fits = [
        make("LLPClassifier-noisy", max_epochs=2).fit(*xb, table)
        for xb in ((p.X, p.codes), (X, bags))
    ]
    variances = [fit.method_.count_variance_ for fit in fits]
    assert variances[0].min() > 0
    np.testing.assert_array_equal(*variances)
    np.testing.assert_array_equal(*(fit.predict_proba(p.X) for fit in fits))


def test_dask_fit_reads_through_malloc_and_restores_arrows_pool():
    # Arrow's own pool keeps what windows free; the fit switches, then restores
    pa = pytest.importorskip("pyarrow")
    _, X, bags, values = _dask_fit_inputs("LLPClassifier-dllp", 2, "frame")
    pools = []

    class Spy(Callback):
        def on_epoch_begin(self, net, **kwargs):
            pools.append(pa.default_memory_pool().backend_name)

    before = pa.default_memory_pool().backend_name
    make("LLPClassifier-dllp", max_epochs=1, callbacks=[Spy()]).fit(X, bags, values)
    assert pools == ["system"] and pa.default_memory_pool().backend_name == before


def test_dask_fit_reads_in_its_own_thread_unless_a_cluster_reads(
    monkeypatch, local_cluster
):
    # local reads one window at a time in the fit's thread (worker threads'
    # allocator arenas kept their buffers); a cluster's are prefetched
    from sklearn_llp.neural import _stream

    readers, window = [], _stream.StreamedBags.window

    def spy(self, partitions):
        readers.append(threading.get_ident() == here)
        return window(self, partitions)

    monkeypatch.setattr(_stream.StreamedBags, "window", spy)
    monkeypatch.setattr(_stream, "_WINDOW_ROWS", 16)  # several windows
    here = threading.get_ident()
    _, X, bags, values = _dask_fit_inputs("LLPClassifier-dllp", 3, "arrays")
    make("LLPClassifier-dllp", max_epochs=1).fit(X, bags, values)
    assert len(readers) > 2 and all(readers)
    readers.clear()
    with local_cluster():
        make("LLPClassifier-dllp", max_epochs=1).fit(X, bags, values)
    assert len(readers) > 2 and readers[0] and not any(readers[1:])


def test_dask_windows_train_every_bag_once_an_epoch(monkeypatch):
    from sklearn_llp.neural import _stream

    monkeypatch.setattr(_stream, "_WINDOW_ROWS", 16)  # about a block a window
    p, X, bags, values = _dask_fit_inputs("LLPClassifier-dllp", 3, "arrays")
    est = make("LLPClassifier-dllp", max_epochs=1, batch_size=8).fit(X, bags, values)
    source = est._dask_source(X, bags, values, None, None, False)
    epochs = est.get_iterator(est._streamed(source, SimpleNamespace(valid=None)), True)
    seen = [target["bag_index"].tolist() for _, target in epochs]
    windows = epochs.windows()
    assert len(windows) > 2 and sorted(np.concatenate(windows)) == list(range(3))
    flat = [b for batch in seen for b in batch]
    assert sorted(flat) == list(range(p.n_bags))  # each bag once, whole
    assert est.score(p.X, p.codes, p.aligned) > 0.5


def test_dask_fit_on_a_local_cluster_equals_the_default_scheduler(local_cluster):
    _, X, bags, values = _dask_fit_inputs("LLPRegressor-bag", "many", "frame")
    expected = make("LLPRegressor-bag").fit(X, bags, values)
    with local_cluster() as tasks:
        est = make("LLPRegressor-bag").fit(X, bags, values)
        lazy = est.predict(X)
        assert type(lazy).__name__ == "Array"
        predicted = lazy.compute()
    assert len(tasks.data) >= 3  # the partitions were read on the workers
    assert_same_model(est, expected, rtol=0, atol=0)
    # the same partitions predicted on either scheduler (float32 outputs
    # depend on the batch's rows, so not against one whole-array batch)
    np.testing.assert_array_equal(
        predicted, expected.predict(X).compute(scheduler="sync")
    )


# fmt: off
#: Value forms only a Dask case adds: ``classes=`` naming unnamed shares and
#: ordering named columns (issue 46, case 1).
DASK_VALUE_FORMS = {
    "series_of_fractions_named_by_classes": lambda p: (
        keyed(p.per_bag[:, 1], range(p.n_bags)), {"classes": ["no", "yes"]}),
    "positive_fraction_named_by_classes": lambda p: (
        p.aligned[:, 1], {"classes": ["no", "yes"]}),
    "frame_str_columns_in_the_other_order": lambda p: (
        keyed(p.per_bag, range(p.n_bags)).set_axis(_columns(p), axis=1),
        {"classes": _columns(p)[::-1]}),
}
#: Bag forms of one id per row (overlapping bags and Bags objects: refused).
DASK_BAG_FORMS = ["str_ids", "series", "one_column_frame", "tuple_keys",
                  "uint64_hash_array", "interval_keys", "str_ids_with_str_keyed_table"]
DASK_CASES = [
    *[("LLPClassifier-dllp", 2, f, "frame") for f in DASK_BAG_FORMS],
    *[("LLPClassifier-dllp", 2, f, "arrays") for f in ["str_ids", "uint64_hash_array"]],
    *[("LLPClassifier-dllp", 2, f, layout) for f in [*VALUE_FORMS[C], *DASK_VALUE_FORMS]
      for layout in ("arrays", "frame")],
    *[("LLPRegressor-bag", "few", f, layout) for f in VALUE_FORMS[R]
      for layout in ("arrays", "frame")],
    *[("MeanMapClassifier", 3, f, "frame") for f in ["frame_int_columns", "str_ids"]],
]
#: One case per path of the reader run by default (issue 46's first); the
#: rest with the slow tests (about 0.4 s each). A per-bag table stays in memory.
DASK_FAST = {*DASK_VALUE_FORMS, "tuple_keys", "aligned_series",
             "per_bag_sum_size_frame"}
DASK_CASES = [c if c[2] in DASK_FAST or c[0] == "MeanMapClassifier"
              else pytest.param(*c, marks=pytest.mark.slow) for c in DASK_CASES]
# fmt: on


@functools.cache
def _fit(name, variant):
    p = _sorted(data(name, variant))
    return make(name).fit(p.X, p.codes, p.aligned)


@pytest.mark.filterwarnings("ignore", category=BagLeakageWarning)
@pytest.mark.parametrize(("name", "variant", "form", "layout"), DASK_CASES)
def test_every_form_fits_predicts_and_scores_alike_on_dask(name, variant, form, layout):
    # the NumPy fit on the same rows is the Dask fit's promise (fewer rows than
    # a window); the partitions include an empty one (issue 46, case 4)
    p = _sorted(data(name, variant))
    if form in DASK_VALUE_FORMS:
        bags, (values, params) = p.codes, DASK_VALUE_FORMS[form](p)
    else:
        bags, values, params = form_of(name, variant, form, p)
    # any form fits the model of ids and per-row values in memory (section 1)
    expected = (
        make(name, **params).fit(p.X, bags, values) if params else _fit(name, variant)
    )
    X, dask_bags, dask_values = _on_dask(p, bags, values, layout)
    est = make(name, **params).fit(X, dask_bags, dask_values)
    if task(name) == C:
        assert est.classes_.tolist() == expected.classes_.tolist()
    np.testing.assert_array_equal(output(est, p.X), output(expected, p.X))
    for method in ["predict", "predict_proba"][: 2 if task(name) == C else 1]:
        lazy = getattr(est, method)(X).compute()  # blocks of rows: float32 ulps
        in_memory = getattr(expected, method)(p.X)
        if lazy.dtype.kind == "f":
            np.testing.assert_allclose(lazy, in_memory, rtol=1e-6)
        else:
            np.testing.assert_array_equal(lazy, in_memory)
    score = BagScorer(SCORE_METRIC[task(name)])
    if name != "MeanMapClassifier":  # trained on these bags: warns (case 3)
        with pytest.warns(BagLeakageWarning):
            on_dask = score(est, X, dask_bags, dask_values)
        assert on_dask == pytest.approx(score(expected, p.X, bags, values), rel=1e-6)


# fmt: off
#: Malformed inputs a Dask reader must refuse as the in-memory one does (a
#: single bag cut by the partitions is refused as a split bag first).
DASK_MALFORMED = ["bags_with_none", "bags_with_nat", "float_ids_with_nan",
                  "ids_mixing_types_in_an_array", "rows_in_no_bag", "values_with_nan",
                  "values_differing_within_a_bag", "a_table_missing_a_bag",
                  "a_fraction_outside_0_1", "duplicated_class"]
DASK_ENTRIES = {C: ["LLPClassifier-dllp", "scorer", "metric"]}
DASK_ENTRIES[R] = ["LLPRegressor-bag", "scorer", "metric"]
# fmt: on


@pytest.mark.parametrize(
    ("kind", "entry", "case"),
    [c for c in READ_CASES if c[1] in DASK_ENTRIES[c[0]] and c[2] in DASK_MALFORMED],
)
def test_dask_input_is_refused_as_the_reader_refuses_it(kind, entry, case):
    p = _sorted(problem(kind, VARIANTS[kind][0]))
    y, values, w, classes = (*MALFORMED[case](p), None, None)[:4]
    with pytest.raises((ValueError, TypeError)) as expected:
        _read(kind, entry, p, y, values, w, classes)
    X, y, values = _on_dask(p, y, values, "arrays")
    with pytest.raises(Exception) as got:
        _enter(kind, entry, SimpleNamespace(X=X, n=p.n), y, values, w, classes)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


# fmt: off
@pytest.mark.parametrize(("change", "error", "match"), [
    ("split_bag", ValueError, "bag 0 has rows in partitions \\[0, 1\\].*shuffle"),
    ("sample_weight", TypeError, "sample_weight is not supported with Dask"),
    ("labels_only", ValueError, "needs bags and their values"),
    ("numpy_bags_of_frame", TypeError, "bags: with a Dask DataFrame X"),
    ("short_bags", ValueError, "bags has 60 rows but X has 64"),
    ("membership", TypeError, "bags: with Dask X, pass one bag id per row"),
    ("masked_X", ValueError, "X has unknown chunk sizes.*X.compute_chunk_sizes"),
    ("masked_bags", ValueError, "bags = bags.compute_chunk_sizes\\(\\)"),
    ("metric_of_a_bag_across_partitions", ValueError, "props differ .* \\(bag 0"),
])
# fmt: on
def test_dask_input_refuses_what_it_cannot_read(change, error, match):
    # issue 46, cases 2 and 5: never NaN compared with !=, never a row dropped
    da = pytest.importorskip("dask.array")
    p = _sorted(problem(C, 2))
    X, bags, values = _on_dask(p, p.codes, dict(enumerate(p.per_bag)), "arrays")
    kwargs = {"sample_weight": np.ones(p.n)} if change == "sample_weight" else {}
    mask = da.from_array(np.arange(p.n) % 7 > 0, chunks=X.chunks[0])
    last = np.r_[p.aligned[:-1], p.aligned[-1:, ::-1]]  # bag 0's, 3 partitions on
    spanning = _on_dask(p, np.r_[p.codes[:-1], 0], last, "arrays")
    frame_X = _on_dask(p, p.codes, values, "frame")[0]
    X, bags, values = {
        "split_bag": (X.rechunk(4), bags.rechunk(4), values),
        "labels_only": (X, bags, None),
        "numpy_bags_of_frame": (frame_X, p.codes, values),
        "short_bags": (X, da.from_array(p.codes[:60]), values),
        "membership": (X, membership(p.codes, p.n_bags), p.per_bag),
        "masked_X": (X[mask], bags, values),
        "masked_bags": (X, bags[mask], values),
        "metric_of_a_bag_across_partitions": spanning,
    }.get(change, (X, bags, values))  # fmt: skip
    est = make("LLPClassifier-dllp")
    with pytest.raises(error, match=match):
        if change == "metric_of_a_bag_across_partitions":
            bag_errors(bags, values, da.ones_like(values) / 2)
        else:
            est.fit(X, bags, values, **kwargs)
    assert not hasattr(est, "classes_")


# --- 9. regression: the units of the targets do not matter
@pytest.mark.parametrize(("a", "b"), [(3.0, -7.0), (1e-3, 250.0), (1e4, 0.0)])
@pytest.mark.parametrize("variant", VARIANTS[R])
@pytest.mark.parametrize("name", REGRESSORS)
def test_affine_targets_give_affine_predictions(name, variant, a, b):
    # the targets are standardised, so the network sees the same numbers up to
    # rounding: a relative 1e-5 of the targets' spread
    p = data(name, variant)
    est = make(name).fit(p.X, p.codes, a * p.aligned + b)
    spread = a * np.ptp(p.per_bag)
    base = reference(name, variant)
    np.testing.assert_allclose(
        est.predict(p.X), a * base + b, rtol=1e-5, atol=1e-5 * spread
    )


# --- 10. the cases of issue 32 that once gave a wrong answer
def _continued(name, how):
    p = data(name, "many" if task(name) == R else 2)
    stop = dict(early_stopping=True, n_iter_no_change=2, max_epochs=6)
    first = make(name, warm_start=how == "warm_start", **stop)
    first.fit(p.X, p.codes, p.aligned)
    n_first = len(first.history)
    if how == "partial_fit":
        first.partial_fit(p.X, p.codes, p.aligned)
    else:
        first.fit(p.X, p.codes, p.aligned)
    return first, n_first


@pytest.mark.parametrize("how", ["partial_fit", "warm_start"])
@pytest.mark.parametrize("name", ["LLPClassifier-dllp", "LLPRegressor-bag"])
def test_a_continued_fit_stops_on_its_own_best_epoch(name, how):
    """Case 1: each epoch of a continued fit is judged against that fit's
    epochs, and the fit keeps its best one (not the last)."""
    est, n_first = _continued(name, how)
    metric = f"valid_{est._stopping_metric}"
    own = est.history[n_first:]
    assert est.best_epoch_ is not None and est.best_epoch_ > n_first
    assert own[0][f"{metric}_best"]  # its first epoch is its best so far
    best = [row for row in own if row["epoch"] == est.best_epoch_][0]
    p = data(name, "many" if task(name) == R else 2)
    held = ~np.isin(p.codes, est.train_bag_ids_)
    X, codes, values = p.X[held], p.codes[held], p.aligned[held]
    if metric == "valid_mse":
        expected = bag_mean_squared_error(codes, values, est.predict(X))
    else:
        kw = dict(metrics=["hard_l1"], decision="prior")
        expected = bag_errors(codes, values, est.predict_proba(X), **kw)["hard_l1"]
    # the log's rows ran through float32 GEMM in bag order, predict's in row
    # order, and a row's position picks the BLAS kernel: 1 float32 ulp an
    # output (measured: 5.8e-8 unscaled, the MSE 1.2e-8 relative); hard_l1 is
    # exact unless a decision flips. rel=1e-6: 8 ulps (as the Dask blocks')
    assert expected == pytest.approx(best[metric], rel=1e-6)


@pytest.mark.parametrize("name", ["LLPClassifier-dllp", "LLPRegressor-bag"])
def test_row_splitting_cross_validation_warns_for_both_tasks(name):
    """Case 4: a scorer of either task warns when KFold cut the bags."""
    p = data(name)
    metric, key = SCORE_METRIC[task(name)], _key(p)
    scorer = make_bag_scorer(metric, bags=p.codes, **{key: p.aligned})
    cv = KFold(2, shuffle=True, random_state=0)
    with pytest.warns(BagLeakageWarning, match="BagKFold"):
        cross_validate(
            make(name), p.X, p.codes, cv=cv, scoring=scorer, params={key: p.aligned}
        )


def test_held_out_errors_are_the_metrics_on_overlapping_bags():
    """Case 6: the logged ``valid_hard_l1`` is ``hard_l1_error`` with the
    model's decision, over distinct rows, also when bags overlap."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(640, 5)).astype(np.float32)
    y = (X[:, 0] + 0.5 * rng.normal(size=640) > 0.3).astype(int)
    lists = [
        32 * b + rng.choice(32, 12, replace=False) for b in range(20) for _ in "ab"
    ]
    props = np.array([np.bincount(y[r], minlength=2) / 12 for r in lists])
    for seed in range(3):
        params = dict(max_epochs=3, verbose=0, validation_fraction=0.3, n_threads=1)
        clf = LLPClassifier(method="dllp", random_state=seed, **params)
        clf.fit(X, lists, props)
        held = [j for j in range(len(lists)) if j not in set(clf.train_bag_ids_)]
        rows, proba = [lists[j] for j in held], clf.predict_proba(X)
        kw = dict(metrics=["hard_l1"], decision="prior")
        errors = bag_errors(rows, props[held], proba, **kw)
        assert errors["hard_l1"] == clf.history[-1, "valid_hard_l1"]
