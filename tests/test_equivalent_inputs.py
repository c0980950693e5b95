"""Equivalent inputs: what must not depend on how the same data is written down.

Properties of the bag data model over random bag layouts (bag sizes 1..k,
2..8 bags, 2..5 classes, int or string ids, per-bag tables or sample-aligned
props, shuffled rows, overlapping bags), then the accepted forms of ``props``
on one small example. Malformed inputs, which must be refused, are in
``tests/test_input_validation.py``.

What is invariant, and why:

* The *validated structure* -- the set of bags as (member rows,
  proportions), from :func:`~sklearn_llp.core.check_bags` -- is
  invariant under any relabelling of the bag ids (ints to strings, permuted
  ids), any row order (members mapped through the permutation) and any form
  of ``props`` (sample-aligned, DataFrame, dict). Only the *order* of the
  bags follows the sorted ids, so the structures are compared as sets.
* A *fitted model* depends on that order: the batch sampler shuffles bag
  indices ``0..n_bags-1`` and ``validation_fraction`` holds out bag indices,
  so a relabelling that reorders the sorted ids gives the same random draws
  to other bags -- an equally valid but different fit -- and a row shuffle
  changes the order of instances too. A relabelling that *preserves the
  sorted order* of the ids (``k -> 10k + 3``, ``k -> "bag-%04d" % k``), and
  the choice between a per-bag table and sample-aligned props, leave the
  validated arrays bit-identical, hence the fit bit-identical on the CPU.
  That is what is tested for fits.
* Bag metrics are invariant under everything above up to float rounding
  (the members of a bag are summed in another order), so they are compared
  within 1e-12.
"""

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.metrics import BAG_METRICS, KL_EPS, bag_errors, hard_l1_error
from sklearn_llp.model_selection import (
    BagKFold,
    BagShuffleSplit,
    cross_val_predict,
    subset_membership,
)

SETTINGS = dict(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def _tiny(**params):
    defaults = dict(
        module__hidden_sizes=(16,),
        max_epochs=2,
        batch_size=16,
        verbose=0,
        random_state=0,
        device="cpu",
    )
    return LLPClassifier(**{**defaults, **params})


# ==========================================================================
# Properties over random bag layouts.
# ==========================================================================
@dataclass
class Layout:
    codes: np.ndarray  # bag index 0..n_bags-1 of every row
    bag_props: np.ndarray  # (n_bags, n_classes), rows sum to 1
    X: np.ndarray
    rng: np.random.Generator

    @property
    def n_bags(self):
        return len(self.bag_props)

    @property
    def props(self):
        """Sample-aligned proportions."""
        return self.bag_props[self.codes]


@st.composite
def layouts(draw, max_size=5, max_bags=8):
    """Random disjoint bags: sizes 1..max_size, 2..max_bags bags, 2..5 classes."""
    sizes = draw(st.lists(st.integers(1, max_size), min_size=2, max_size=max_bags))
    n_classes = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(len(sizes)), sizes)
    if draw(st.booleans()):
        codes = rng.permutation(codes)  # bags interleaved
    bag_props = rng.dirichlet(np.full(n_classes, 0.5), size=len(sizes))
    bag_props[rng.random(bag_props.shape) < 0.3] = 0.0  # some classes absent
    bag_props[bag_props.sum(axis=1) == 0, 0] = 1.0
    bag_props /= bag_props.sum(axis=1, keepdims=True)
    X = rng.normal(size=(len(codes), 3))
    return Layout(codes, bag_props, X, rng)


def _structure(indptr, members, bag_props, rows=None):
    """The bags as a set of (sorted member rows, proportions): order-free."""
    if rows is not None:
        members = rows[members]
    return {
        (tuple(sorted(members[start:stop])), tuple(bag_props[j]))
        for j, (start, stop) in enumerate(zip(indptr[:-1], indptr[1:]))
    }


def _validated(bags, props, n_samples, **kwargs):
    checked = check_bags(bags, props, n_samples=n_samples, **kwargs)
    return (
        _structure(checked.indptr, checked.members, checked.props),
        checked.ids,
        checked.classes,
    )


def _table_forms(ids, bag_props, n_samples):
    """Per-bag tables of ``ids`` (unique, one per bag) and ``bag_props``."""
    forms = {"dict": dict(zip(ids.tolist(), bag_props))}
    if len(ids) != n_samples:  # else a DataFrame reads as sample-aligned
        forms["frame"] = pd.DataFrame(bag_props, index=ids)
    return forms


@settings(max_examples=60, **SETTINGS)
@given(layouts(), st.booleans())
def test_validated_structure_ignores_ids_row_order_and_props_form(layout, strings):
    codes, bag_props, n = layout.codes, layout.bag_props, len(layout.codes)
    expected, _, classes = _validated(codes, layout.props, n)
    assert len(expected) <= layout.n_bags  # equal bags may coincide in the set
    assert classes.tolist() == list(range(bag_props.shape[1]))

    # Relabel: permuted ids, as ints or as strings.
    ids = layout.rng.permutation(layout.n_bags) * 7 + 11
    if strings:
        ids = np.array([f"bag {i}" for i in ids])
    relabelled, bag_ids, _ = _validated(ids[codes], layout.props, n)
    assert relabelled == expected
    assert sorted(bag_ids.tolist()) == bag_ids.tolist()
    for form, table in _table_forms(ids, bag_props, n).items():
        assert _validated(ids[codes], table, n)[0] == expected, form

    # Shuffle the rows: the same bags, with members renumbered.
    order = layout.rng.permutation(n)
    shuffled = check_bags(ids[codes][order], layout.props[order], n_samples=n)
    assert (
        _structure(shuffled.indptr, shuffled.members, shuffled.props, rows=order)
        == expected
    )

    # The same bags as lists of rows or as a membership matrix.
    lists = [np.flatnonzero(codes == j) for j in range(layout.n_bags)]
    matrix = sp.csr_matrix((np.ones(n), (np.arange(n), codes)))
    assert _validated(lists, bag_props, n)[0] == expected
    assert _validated(matrix, bag_props, n)[0] == expected


@settings(max_examples=12, **SETTINGS)
@given(layouts(max_bags=6), st.sampled_from(["dllp", "vat", "pi", "rot"]))
def test_order_preserving_relabelling_and_props_form_give_the_same_fit(layout, method):
    X, codes, n = layout.X, layout.codes, len(layout.codes)
    reference = _tiny(method=method).fit(X, codes, layout.props).predict_proba(X)
    # Order-preserving relabellings keep the validated arrays identical.
    monotone = codes * 10 + 3
    padded = np.array([f"bag-{c:04d}" for c in codes])
    per_bag = pd.DataFrame(
        layout.bag_props, index=[f"bag-{j:04d}" for j in range(layout.n_bags)]
    )
    per_bag_form = per_bag
    if layout.n_bags == n:  # a DataFrame would read as sample-aligned
        per_bag_form = dict(zip(per_bag.index, per_bag.to_numpy()))
    for bags, props in [
        (monotone, layout.props),
        (padded, layout.props),
        (padded, per_bag_form),
        (monotone, dict(zip(range(3, 10 * layout.n_bags, 10), layout.bag_props))),
    ]:
        proba = _tiny(method=method).fit(X, bags, props).predict_proba(X)
        assert np.array_equal(proba, reference)


@settings(max_examples=12, **SETTINGS)
@given(
    st.integers(4, 30),
    st.integers(2, 5),
    st.booleans(),
    st.sampled_from(["dllp", "vat", "pi", "rot"]),
    st.sampled_from([None, 0.25]),
    st.integers(0, 2**32 - 1),
)
def test_singleton_bags_reproduce_supervised_learning_bit_for_bit(
    n, n_classes, strings, method, validation_fraction, seed
):
    rng = np.random.default_rng(seed)
    y = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, n)])
    rng.shuffle(y)
    X = rng.normal(size=(len(y), 3)) + np.eye(n_classes, 3)[y]
    classes = np.arange(n_classes)
    if strings:
        classes = np.array([f"class {k}" for k in range(n_classes)])
    labels = classes[y]
    onehot = pd.DataFrame(np.eye(n_classes)[y], columns=classes)
    params = dict(method=method, validation_fraction=validation_fraction)
    supervised = _tiny(**params).fit(X, labels)
    singletons = _tiny(**params).fit(X, np.arange(len(y)), onehot)
    assert supervised.classes_.tolist() == singletons.classes_.tolist()
    assert np.array_equal(supervised.predict_proba(X), singletons.predict_proba(X))
    assert supervised.history[:, "train_loss"] == singletons.history[:, "train_loss"]


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


@settings(max_examples=60, **SETTINGS)
@given(layouts(max_size=6))
def test_disjoint_bags_as_lists_score_bit_identically(layout):
    n_classes = layout.bag_props.shape[1]
    proba = layout.rng.dirichlet(np.ones(n_classes), size=len(layout.codes))
    lists = [np.flatnonzero(layout.codes == j) for j in range(layout.n_bags)]
    by_ids = bag_errors(layout.codes, layout.props, proba)
    assert bag_errors(lists, layout.bag_props, proba) == by_ids
    for metric in BAG_METRICS:
        upper = 2.0 if metric.endswith("l1") else -math.log(KL_EPS) + 1
        assert 0.0 <= by_ids[metric] <= upper


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
        clf = _tiny(method="dllp", max_epochs=3).fit(
            X[train], train_bags, props[train_kept]
        )
        error = hard_l1_error(test_bags, props[test_kept], clf.predict_proba(X[test]))
        assert 0.0 <= error <= 2.0


# ==========================================================================
# Accepted forms of props on one small example.
# ==========================================================================
@pytest.fixture
def data():
    X = np.random.RandomState(0).normal(size=(8, 3))
    bags = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    props = np.array(
        [[0.5, 0.5], [0.5, 0.5], [1, 0], [1, 0], [0, 1], [0, 1], [0.5, 0.5], [0.5, 0.5]]
    )
    return X, bags, props


def test_rounded_rows_are_accepted_and_renormalised(data):
    X, bags, props = data
    bag_props = check_bags(bags, props * 1.005, n_samples=len(X)).props
    np.testing.assert_allclose(bag_props.sum(1), 1.0)


def test_props_forms_agree(data):
    X, bags, props = data
    reference = check_bags(bags, props, n_samples=8).props
    table = pd.DataFrame(props[[0, 2, 4, 6]], index=[0, 1, 2, 3])
    as_dict = {b: props[2 * b] for b in range(4)}
    fraction = props[:, 1]
    series = pd.Series(props[[0, 2, 4, 6], 1], index=[0, 1, 2, 3])
    for form in (
        table,
        as_dict,
        fraction,
        series,
        {b: props[2 * b, 1] for b in range(4)},
    ):
        np.testing.assert_allclose(check_bags(bags, form, n_samples=8).props, reference)


def test_classes_come_from_table_columns_not_bag_ids(data):
    X, bags, props = data
    str_bags = np.array([f"bag{b}" for b in bags])
    table = pd.DataFrame(
        props[[0, 2, 4, 6]],
        index=["bag0", "bag1", "bag2", "bag3"],
        columns=["no", "yes"],
    )
    clf = LLPClassifier(max_epochs=2, verbose=0).fit(X, str_bags, table)
    assert clf.classes_.tolist() == ["no", "yes"]
    assert set(clf.predict(X)) <= {"no", "yes"}


def test_classes_parameter_reorders_table_columns(data):
    X, bags, props = data
    table = pd.DataFrame(
        props[[0, 2, 4, 6]], columns=["no", "yes"], index=pd.Index(range(4), name="bag")
    )
    checked = check_bags(bags, table, n_samples=8, classes=["yes", "no"])
    bag_props, classes = checked.props, checked.classes
    assert classes.tolist() == ["yes", "no"]
    np.testing.assert_allclose(bag_props, props[[0, 2, 4, 6]][:, ::-1])


def test_sample_aligned_dataframe_is_not_mistaken_for_a_table():
    # Its RangeIndex holds every bag id, yet it has one row per sample.
    props = pd.DataFrame([[0.5, 0.5], [0.5, 0.5], [1, 0], [1, 0]])
    bag_props = check_bags([0, 0, 1, 1], props, n_samples=4).props
    np.testing.assert_allclose(bag_props, [[0.5, 0.5], [1, 0]])


def test_dict_of_dicts_names_the_classes(data):
    X, bags, props = data
    table = pd.DataFrame(props[[0, 2, 4, 6]], columns=["no", "yes"])
    checked = check_bags(bags, table.to_dict("index"), n_samples=8)
    bag_props, classes = checked.props, checked.classes
    assert classes.tolist() == ["no", "yes"]
    np.testing.assert_allclose(bag_props, props[[0, 2, 4, 6]])


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
