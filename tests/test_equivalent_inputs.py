"""Equivalent inputs: what must not depend on how the same data is written down.

Fits from every form are in ``test_conformance.py``, malformed inputs in
``test_input_validation.py``.
"""

import math
import pickle
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from test_conformance import TIGHT, membership, row_lists

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.metrics import BAG_METRICS, KL_EPS, bag_errors, hard_l1_error
from sklearn_llp.model_selection import (
    BagKFold,
    BagShuffleSplit,
    cross_val_predict,
    subset_membership,
)

SETTINGS = dict(
    deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)


# --- Properties over random overlapping bags
@st.composite
def overlapping_layouts(draw):
    """Bags as random subsets of the rows; some rows may be in no bag."""
    n = draw(st.integers(3, 25))
    n_bags = draw(st.integers(1, 8))
    n_classes = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lists = [
        np.sort(rng.choice(n, rng.integers(1, min(n, 6) + 1), replace=False))
        for _ in range(n_bags)
    ]
    bag_props = rng.dirichlet(np.full(n_classes, 0.5), size=n_bags)
    proba = rng.dirichlet(np.full(n_classes, 0.5), size=n)
    return lists, bag_props, proba, rng


def _loop_reference(lists, bag_props, proba):
    """The four errors bag by bag, with Python loops."""
    hard = np.eye(proba.shape[1])[proba.argmax(axis=1)]
    out = {}
    for name, per_row in (("hard", hard), ("soft", proba)):
        q = np.array([per_row[rows].mean(axis=0) for rows in lists])
        out[f"{name}_l1"] = np.abs(bag_props - q).sum(axis=1).mean()
        q = np.where(bag_props > 0, np.maximum(q, KL_EPS), q)
        q /= q.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(bag_props > 0, bag_props * np.log(bag_props / q), 0.0)
        out[f"{name}_kl"] = np.maximum(terms.sum(axis=1), 0).mean()
    return out


@settings(max_examples=60, **SETTINGS)
@given(overlapping_layouts())
def test_overlapping_bag_metrics_are_bag_means_and_stay_in_bounds(problem):
    lists, bag_props, proba, rng = problem
    n, n_classes = proba.shape
    errors = bag_errors(lists, bag_props, proba)
    reference = _loop_reference(lists, bag_props, proba)
    kl_max = math.log((1 + n_classes * KL_EPS) / KL_EPS)
    for metric in BAG_METRICS:
        assert errors[metric] == pytest.approx(reference[metric], abs=1e-12)
        upper = 2.0 if metric.endswith("l1") else kl_max
        assert -1e-12 <= errors[metric] <= upper + 1e-12
    # The same bags as a membership matrix, with shuffled bag order and
    # shuffled rows: the same errors.
    matrix = sp.lil_matrix((n, len(lists)))
    for j, rows in enumerate(lists):
        matrix[rows, j] = 1
    assert bag_errors(matrix.tocsc(), bag_props, proba) == errors
    order = rng.permutation(n)
    position = np.argsort(order)
    bag_order = rng.permutation(len(lists))
    moved = [position[lists[j]] for j in bag_order]
    shuffled = bag_errors(moved, bag_props[bag_order], proba[order])
    for metric in BAG_METRICS:
        assert shuffled[metric] == pytest.approx(errors[metric], abs=1e-12)


@settings(max_examples=50, **SETTINGS)
@given(overlapping_layouts(), st.integers(2, 4), st.booleans())
def test_overlapping_splits_put_no_instance_and_no_bag_on_both_sides(
    problem, n_splits, as_matrix
):
    lists, bag_props, _, rng = problem
    n = len(problem[2])
    bags = lists
    if as_matrix:
        bags = sp.lil_matrix((n, len(lists)))
        for j, rows in enumerate(lists):
            bags[rows, j] = 1
        bags = bags.tocsr()
    bagged = np.unique(np.concatenate(lists))
    X = np.zeros((n, 2))
    splitters = [
        BagKFold(n_splits),
        BagKFold(n_splits, shuffle=True, random_state=0),
        BagShuffleSplit(3, test_size=0.3, random_state=0),
    ]
    for splitter in splitters:
        try:
            splits = list(splitter.split(X, groups=bags))
        except ValueError as exc:  # too few groups of connected bags
            assert "groups of connected bags" in str(exc)
            continue
        tested = []
        for train, test in splits:
            assert len(train) and len(test)
            assert not set(train) & set(test)
            assert set(train) | set(test) == set(bagged)
            train_bags, train_kept = subset_membership(bags, train)
            test_bags, test_kept = subset_membership(bags, test)
            # every bag lies wholly on one side
            assert sorted([*train_kept, *test_kept]) == list(range(len(lists)))
            for side_rows, side_bags, kept in (
                (train, train_bags, train_kept),
                (test, test_bags, test_kept),
            ):
                if sp.issparse(side_bags):
                    assert side_bags.shape == (len(side_rows), len(kept))
                    side_lists = [
                        np.flatnonzero(side_bags[:, j].toarray())
                        for j in range(len(kept))
                    ]
                else:
                    side_lists = side_bags
                for j, rows in zip(kept, side_lists):
                    np.testing.assert_array_equal(side_rows[rows], lists[j])
            tested.append(test)
        if isinstance(splitter, BagKFold) and tested:
            np.testing.assert_array_equal(np.sort(np.concatenate(tested)), bagged)


def test_overlapping_cross_validation_loop():
    """The documented loop: split, subset, fit, score on the held-out bags."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 90)
    X = rng.normal(size=(90, 3)) + 2 * y[:, None]
    # 30 disjoint chains of 3 rows, each chain covered by 2 overlapping bags
    lists = []
    for start in range(0, 90, 3):
        lists += [np.arange(start, start + 2), np.arange(start + 1, start + 3)]
    props = np.stack([np.bincount(y[rows], minlength=2) / len(rows) for rows in lists])
    for train, test in BagKFold(3).split(X, groups=lists):
        train_bags, train_kept = subset_membership(lists, train)
        test_bags, test_kept = subset_membership(lists, test)
        assert len(train_kept) + len(test_kept) == len(lists)
        params = dict(max_epochs=3, batch_size=16, verbose=0, random_state=0)
        clf = LLPClassifier(
            method="dllp", module__hidden_sizes=(16,), device="cpu", **params
        ).fit(X[train], train_bags, props[train_kept])
        error = hard_l1_error(test_bags, props[test_kept], clf.predict_proba(X[test]))
        assert 0.0 <= error <= 2.0


# --- One small example each
def test_sample_aligned_dataframe_is_not_mistaken_for_a_table():
    # Its RangeIndex holds every bag id, yet it has one row per sample.
    props = pd.DataFrame([[0.5, 0.5], [0.5, 0.5], [1, 0], [1, 0]])
    bag_props = check_bags([0, 0, 1, 1], props, n_samples=4).props
    np.testing.assert_allclose(bag_props, [[0.5, 0.5], [1, 0]])


def test_dict_of_dicts_names_the_classes():
    bags = [0, 0, 1, 1, 2, 2, 3, 3]
    props = np.array([[0.5, 0.5], [1, 0], [0, 1], [0.5, 0.5]])
    table = pd.DataFrame(props, columns=["no", "yes"])
    checked = check_bags(bags, table.to_dict("index"), n_samples=8)
    bag_props, classes = checked.props, checked.classes
    assert classes.tolist() == ["no", "yes"]
    np.testing.assert_allclose(bag_props, props)


def test_a_series_of_shares_is_named_by_classes():
    """A fraction names no class: ``classes_`` is 0, 1 unless ``classes`` names
    them, and then it is the named table's reading."""
    bags = [0, 0, 1, 1, 2, 2, 3, 3]
    shares = pd.Series([0.5, 0.0, 1.0, 0.5], name=">50K").rename_axis("group")
    table = pd.DataFrame({"<=50K": 1 - shares, ">50K": shares})
    assert check_bags(bags, shares, n_samples=8).classes.tolist() == [0, 1]
    named = check_bags(bags, shares, n_samples=8, classes=["<=50K", ">50K"])
    assert named.classes.tolist() == ["<=50K", ">50K"]
    np.testing.assert_array_equal(named.props, check_bags(bags, table).props)


def test_cv_int_is_bag_k_fold():
    """``cross_val_predict(cv=3)`` means ``BagKFold(3)``, as an int means
    ``KFold`` in scikit-learn: the same predictions, bit for bit."""
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 90)
    X = rng.normal(size=(90, 3)) + y[:, None]
    bags = rng.permutation(90) // 6
    props = np.bincount(bags, weights=y)[bags] / 6
    clf = LLPClassifier(
        method="dllp", max_epochs=2, verbose=0, random_state=0, device="cpu"
    )
    by_int = cross_val_predict(clf, X, bags, props, cv=3, method="predict_proba")
    by_splitter = cross_val_predict(
        clf, X, bags, props, cv=BagKFold(3), method="predict_proba"
    )
    np.testing.assert_array_equal(by_int, by_splitter)


# --- Forms and class orders over random bags (classification)


def per_bag_index(ids):
    """A named index of bag ids (a named index is never row numbers)."""
    return pd.Index(list(ids), name="bag", tupleize_cols=False)


DISTINCT_IDS = {
    "uint64_neighbours": [2**63 + 5, 2**63 + 6],
    "list_spanning_2**63": [5, 2**63 + 5, 2**63 + 6],
    "near_2**64": [2**64 - 2, 2**64 - 1, 3],
    "trailing_nul": ["a", "a\x00"],
    "tuple_keys": [("x", 2**63 + 5), ("x", 2**63 + 6)],
    "timestamps": list(np.array(["2026-01-02", "2026-01-01"], "datetime64[D]")),
}


@pytest.mark.parametrize("ids", DISTINCT_IDS.values(), ids=DISTINCT_IDS)
def test_distinct_ids_stay_distinct_bags(ids):
    bags = [i for i in ids for _ in range(2)]
    props = {i: [1.0, 0.0] for i in ids}  # identical props: a merge raises nothing
    validated = check_bags(bags, props)
    assert validated.n_bags == len(ids)
    assert sorted(validated.ids.tolist()) == sorted(ids)
    assert validated.sizes.tolist() == [2] * len(ids)


# shrink failures to a minimal example, but skip the costly "explain"
PHASES = [Phase.explicit, Phase.generate, Phase.shrink]
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]
HYPOTHESIS = settings(max_examples=20, deadline=None, derandomize=True, database=None)
HYPOTHESIS = settings(HYPOTHESIS, phases=PHASES, suppress_health_check=HEALTH)
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
    props = _props_form(b, form in MEMBERSHIP_FORMS, kind)
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
        return membership(b.codes, len(b.ids)), props
    if form == "row_index_lists":
        return row_lists(b.codes, len(b.ids)), props
    raise AssertionError(form)


def _props_form(b, per_bag, kind):
    """The proportions: unnamed columns in the order of ``b.classes``, named
    columns in the order of ``b.columns``; one row per bag for membership
    forms (keys 0..n_bags-1), else per row or keyed by bag id."""
    in_classes_order = b.bag_props[:, [b.labels.index(c) for c in b.classes]]
    named = pd.DataFrame(b.bag_props, columns=b.labels)[b.columns]
    keys = list(range(len(b.ids))) if per_bag else b.ids
    if kind == "aligned":
        return in_classes_order if per_bag else in_classes_order[b.codes]
    if kind == "aligned_frame":  # default index: rows by position, named columns
        return named if per_bag else named.iloc[b.codes].reset_index(drop=True)
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
@pytest.mark.slow
def test_every_form_of_the_same_bags_validates_to_the_same_bags(form, b):
    for kind in PROPS_KINDS:
        bags, props = _bags_form(b, form, kind)
        validated = check_bags(bags, props, n_samples=b.n, classes=b.classes)
        _assert_validated(b, validated, (form, kind))
        if form not in MEMBERSHIP_FORMS:  # the user's ids, as given
            assert validated.ids.tolist() == b.ids, (form, kind)


@HYPOTHESIS
@given(b=bag_problems(permute_columns=True))
def test_class_columns_are_matched_to_classes_by_name_in_any_order(b):
    for kind in ("aligned_frame", "frame"):  # the named-column forms
        bags, props = _bags_form(b, "array", kind)
        validated = check_bags(bags, props, n_samples=b.n, classes=b.classes)
        _assert_validated(b, validated, kind)
        error = hard_l1_error(bags, props, _truth(b), classes=b.classes)
        assert error == pytest.approx(0.0, abs=1e-12), kind


def _mean_map_problem(seed, n_classes):
    rng = np.random.RandomState(seed)
    n_bags = 6
    codes = rng.permutation(np.repeat(np.arange(n_bags), 8))
    mixes = rng.dirichlet(np.full(n_classes, 0.6), size=n_bags)
    y = np.array([rng.choice(n_classes, p=mixes[c]) for c in codes])
    y[:n_classes] = np.arange(n_classes)
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
@pytest.mark.slow
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
    X, codes, _, bag_props = _mean_map_problem(0, 2)
    table = pd.DataFrame(bag_props, index=per_bag_index(range(6)), columns=["a", "b"])
    params = dict(mean_alpha=0.1, C=1.0, **TIGHT)
    first = MeanMapClassifier(classes=["a", "b"], **params).fit(X, codes, table)
    swapped = MeanMapClassifier(classes=["b", "a"], **params).fit(
        X, codes, table[["b", "a"]]
    )
    np.testing.assert_allclose(
        swapped.predict_proba(X), first.predict_proba(X)[:, ::-1], rtol=1e-6, atol=1e-9
    )


# --- The scale of X: the default MLP standardises it (issue 48)
def _scale_fit(X, bags, props, **params):
    if "module" not in params:
        params["module__hidden_sizes"] = (8,)
    params = dict(max_epochs=3, verbose=0, random_state=0, device="cpu", **params)
    return LLPClassifier(**params).fit(X, bags, props)


@pytest.mark.parametrize("method", ["vat", "pi", "dllp"])
def test_x_over_255_and_255_x_train_the_same_model(method, small_bags):
    X, bags, props, _ = small_bags
    X = np.c_[X + 3, np.full(len(X), 0.5)].astype(np.float32)  # + a constant
    fits = [_scale_fit(X * c, bags, props, method=method) for c in (1, 1 / 255, 255)]
    expected = fits[0].predict_proba(X)
    for c, clf in zip((1, 1 / 255, 255), fits):
        np.testing.assert_allclose(clf.predict_proba(X * c), expected, atol=2e-5)
    module = fits[2].module_
    np.testing.assert_allclose(module.input_mean.numpy(), 255 * X.mean(0), rtol=1e-5)
    np.testing.assert_allclose(
        module.input_scale.numpy()[:4], 255 * X[:, :4].std(0), rtol=1e-4
    )
    assert module.input_scale[4] == 1.0


def test_sparse_x_gives_the_dense_statistics_and_indicators_are_kept(small_bags):
    X, bags, props, _ = small_bags
    X = np.c_[255 * X[:, :3], X[:, 3] > 0, np.zeros(len(X))]  # a one-hot level
    for form in (X, sp.csr_matrix(X)):
        module = _scale_fit(form, bags, props, method="dllp").module_
        mean, scale = module.input_mean.numpy(), module.input_scale.numpy()
        np.testing.assert_allclose(mean[:3], X[:, :3].mean(0), rtol=1e-5)
        np.testing.assert_allclose(scale[:3], X[:, :3].std(0), rtol=1e-4)
        np.testing.assert_array_equal([mean[3], scale[3], scale[4]], [0, 1, 1])


def test_a_users_module_sees_x_as_given(small_bags):
    X, bags, props, _ = small_bags
    seen = []
    net = torch.nn.Linear(4, 3)
    net.register_forward_pre_hook(lambda m, args: seen.append(args[0].abs().max()))
    clf = _scale_fit(1000 * X, bags, props, module=net, method="pi")
    assert max(seen) == pytest.approx(1000 * np.abs(X).max(), abs=1)  # Pi noise
    plain = _scale_fit(1000 * X, bags, props, module__standardize=False)
    assert not hasattr(clf.module_, "input_scale")
    assert not hasattr(plain.module_, "input_scale")


def test_the_input_statistics_survive_pickle_and_save_params(tmp_path, small_bags):
    X, bags, props, _ = small_bags
    clf = _scale_fit(255 * X, bags, props, method="dllp")
    clf.save_params(f_params=tmp_path / "params.pt")
    loaded = LLPClassifier(
        module__hidden_sizes=(8,), module__n_features=4, classes=[0, 1, 2]
    ).initialize()
    loaded.load_params(f_params=tmp_path / "params.pt")
    assert clf.module_.input_scale[0] > 100  # 255 times a std near 1
    for again in (pickle.loads(pickle.dumps(clf)), loaded):
        assert torch.equal(again.module_.input_scale, clf.module_.input_scale)
        np.testing.assert_array_equal(
            again.predict_proba(255 * X), clf.predict_proba(255 * X)
        )
