"""Hostile input: properties of the bag data model, and malformed inputs.

Part 1 draws random bag layouts (bag sizes 1..k, 2..8 bags, 2..5 classes,
int or string ids, per-bag tables or sample-aligned props, shuffled rows,
overlapping bags) and checks what must not depend on how the same data is
written down. Part 2 is a catalogue of malformed inputs a new user could
plausibly pass; every one must raise a ValueError/TypeError whose message
names the offending argument. ``docs/make_malformed_inputs_table.py``
renders the catalogue, with the error each input gets, as
``docs/malformed_inputs.md``.

What is invariant, and why:

* The *validated structure* -- the set of bags as (member rows,
  proportions), from :func:`~sklearn_llp.utils.check_bags` -- is
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

import functools
import math
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.model_selection import cross_val_predict as sk_cross_val_predict
from skorch.callbacks import EpochScoring, ProgressBar

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import (
    FeatureBagGenerator,
    KMeansBagGenerator,
    UniformBagGenerator,
)
from sklearn_llp.metrics import (
    BAG_METRICS,
    KL_EPS,
    BagScorer,
    bag_errors,
    hard_l1_error,
    hard_l1_scorer,
    make_bag_scorer,
    soft_l1_error,
)
from sklearn_llp.model_selection import BagKFold, BagShuffleSplit, subset_membership
from sklearn_llp.utils import check_bags

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
# Part 1: properties over random bag layouts.
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
# Part 2: a catalogue of malformed inputs.
# ==========================================================================
# Each row: where the input goes, what is wrong, the code (evaluated in
# NAMESPACE below), the exception it must raise and a regex its message must
# match -- naming the offending argument. ``xfail`` gives the reason when the
# library does not yet do so; those rows are strict xfails, so they turn into
# failures (and the mark must go) once fixed.
@dataclass(frozen=True)
class Malformed:
    where: str
    description: str
    code: str
    exception: type
    match: str
    xfail: str | None = None

    @property
    def id(self):
        return re.sub(r"[^a-z0-9]+", "-", f"{self.where} {self.description}".lower())


_rng = np.random.RandomState(0)
X = _rng.normal(size=(8, 3))
Xdf = pd.DataFrame(X, columns=["a", "b", "c"])
bags = np.array([0, 0, 1, 1, 2, 2, 3, 3])
props = np.array(
    [[0.5, 0.5], [0.5, 0.5], [1, 0], [1, 0], [0, 1], [0, 1], [0.5, 0.5], [0.5, 0.5]]
)
table = pd.DataFrame(props[::2], index=[0, 1, 2, 3], columns=["no", "yes"])
lists = [np.array([0, 1, 2]), np.array([2, 3, 4]), np.array([5, 6, 7])]
per_bag = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
proba = np.tile([0.7, 0.3], (8, 1))


def LLP(**params):
    """A tiny classifier; malformed input must fail before any training."""
    defaults = dict(module__hidden_sizes=(4,), max_epochs=1, verbose=0, random_state=0)
    return LLPClassifier(**{**defaults, **params})


@functools.cache
def fitted():
    return LLP().fit(X, bags, props)


@functools.cache
def fitted_df():
    return LLP().fit(Xdf, bags, props)


NAMESPACE = {
    "np": np,
    "pd": pd,
    "sp": sp,
    "X": X,
    "Xdf": Xdf,
    "bags": bags,
    "props": props,
    "table": table,
    "lists": lists,
    "per_bag": per_bag,
    "proba": proba,
    "LLP": LLP,
    "fitted": fitted,
    "EpochScoring": EpochScoring,
    "ProgressBar": ProgressBar,
    "sk_cross_val_predict": sk_cross_val_predict,
    "fitted_df": fitted_df,
    "hard_l1_error": hard_l1_error,
    "soft_l1_error": soft_l1_error,
    "bag_errors": bag_errors,
    "BagScorer": BagScorer,
    "make_bag_scorer": make_bag_scorer,
    "hard_l1_scorer": hard_l1_scorer,
    "BagKFold": BagKFold,
    "BagShuffleSplit": BagShuffleSplit,
    "subset_membership": subset_membership,
    "UniformBagGenerator": UniformBagGenerator,
    "KMeansBagGenerator": KMeansBagGenerator,
    "FeatureBagGenerator": FeatureBagGenerator,
}

CATALOGUE = [
    # ---------------------------------------------------------------- fit: X
    Malformed(
        "fit",
        "X with NaN",
        "LLP().fit(np.where(X > 1, np.nan, X), bags, props)",
        ValueError,
        r"Input X contains NaN",
    ),
    Malformed(
        "fit",
        "X with infinity",
        "LLP().fit(np.where(X > 1, np.inf, X), bags, props)",
        ValueError,
        r"Input X contains infinity",
    ),
    Malformed(
        "fit",
        "X of strings (categorical, not encoded)",
        "LLP().fit(np.full((8, 3), 'a'), bags, props)",
        ValueError,
        r"\bX\b.*could not convert string to float",
    ),
    Malformed(
        "fit",
        "X 1-D",
        "LLP().fit(X[:, 0], bags, props)",
        ValueError,
        r"\bX\b.*Expected 2D array",
    ),
    Malformed(
        "fit",
        "X empty (0 rows), bags and props empty",
        "LLP().fit(np.zeros((0, 3)), [], np.zeros((0, 2)))",
        ValueError,
        r"\bX\b.*0 sample",
    ),
    Malformed(
        "fit",
        "3-D X with the default MLP",
        "LLP().fit(np.zeros((8, 3, 2)), bags, props)",
        ValueError,
        r"default MLP takes 2-D X",
    ),
    # ------------------------------------------------------------- fit: bags
    Malformed(
        "fit",
        "bags shorter than X",
        "LLP().fit(X, bags[:7], props)",
        ValueError,
        r"bags has 7 entries but X has 8 rows",
    ),
    Malformed(
        "fit",
        "bags 2-D",
        "LLP().fit(X, bags.reshape(4, 2), props)",
        ValueError,
        r"bags must be 1-D",
    ),
    Malformed(
        "fit",
        "bags with NaN",
        "LLP().fit(X, np.where(bags == 3, np.nan, bags), props)",
        ValueError,
        r"bags contains NaN",
    ),
    Malformed(
        "fit",
        "bags with None",
        "LLP().fit(X, np.array(['a', 'a', 'b', 'b', None, None, 'c', 'c'], "
        "dtype=object), props)",
        ValueError,
        r"bags contains missing ids",
    ),
    Malformed(
        "fit",
        "bags of non-integer floats",
        "LLP().fit(X, bags + 0.5, props)",
        ValueError,
        r"bags holds non-integer floats",
    ),
    Malformed(
        "fit",
        "bags of mixed ints and strings (object array)",
        "LLP().fit(X, np.array([0, 0, 1, 1, 'b', 'b', 'c', 'c'], dtype=object), props)",
        TypeError,
        r"bags mixes id types",
    ),
    Malformed(
        "fit",
        "bags as a Python list mixing 0 and '0'",
        "LLP().fit(X, [0, 0, '0', '0', 1, 1, 2, 2], "
        "np.array([[0.5, 0.5]] * 4 + [[1, 0]] * 2 + [[0, 1]] * 2))",
        TypeError,
        r"bags mixes id types",
    ),
    Malformed(
        "fit",
        "bags=None with props given",
        "LLP().fit(X, None, props)",
        TypeError,
        r"bags is None",
    ),
    Malformed(
        "fit",
        "a single bag",
        "LLP().fit(X, np.zeros(8), np.tile([0.5, 0.5], (8, 1)))",
        ValueError,
        r"bags holds 1 bag\(s\); LLP needs at least 2",
    ),
    # ------------------------------------------------------------ fit: props
    Malformed(
        "fit",
        "props=None and bag ids that are one class (supervised)",
        "LLP().fit(X, np.zeros(8))",
        ValueError,
        r"y holds a single class",
    ),
    Malformed(
        "fit",
        "props shorter than X",
        "LLP().fit(X, bags, props[:7])",
        ValueError,
        r"props has 7 rows but X has 8",
    ),
    Malformed(
        "fit",
        "props with NaN",
        "LLP().fit(X, bags, np.where(props == 1, np.nan, props))",
        ValueError,
        r"props contains NaN",
    ),
    Malformed(
        "fit",
        "props negative",
        "LLP().fit(X, bags, props - 0.25)",
        ValueError,
        r"props contains negative",
    ),
    Malformed(
        "fit",
        "props rows not summing to 1",
        "LLP().fit(X, bags, props * 0.9)",
        ValueError,
        r"props rows must sum to 1",
    ),
    Malformed(
        "fit",
        "props as percentages",
        "LLP().fit(X, bags, props * 100)",
        ValueError,
        r"props rows must sum to 1",
    ),
    Malformed(
        "fit",
        "positive fraction above 1",
        "LLP().fit(X, bags, np.full(8, 1.5))",
        ValueError,
        r"props contains negative",
    ),
    Malformed(
        "fit",
        "props 3-D",
        "LLP().fit(X, bags, props[:, :, None])",
        ValueError,
        r"props must be 1-D or 2-D",
    ),
    Malformed(
        "fit",
        "props as a string",
        "LLP().fit(X, bags, '0.5')",
        ValueError,
        r"props must be 1-D or 2-D",
    ),
    Malformed(
        "fit",
        "props of non-numeric strings",
        "LLP().fit(X, bags, np.full((8, 2), 'x'))",
        TypeError,
        r"props must hold numbers",
    ),
    Malformed(
        "fit",
        "props ragged list",
        "LLP().fit(X, bags, [[0.5, 0.5]] * 7 + [[1.0]])",
        TypeError,
        r"props must hold numbers",
    ),
    Malformed(
        "fit",
        "props with one class column",
        "LLP().fit(X, bags, np.ones((8, 1)))",
        ValueError,
        r"props has 1 class column",
    ),
    Malformed(
        "fit",
        "props that differ within a bag",
        "LLP().fit(X, bags, np.vstack([props[:1], [[0.2, 0.8]], props[2:]]))",
        ValueError,
        r"props differ between rows of the same bag",
    ),
    Malformed(
        "fit",
        "props one row per bag as a plain array",
        "LLP().fit(X, bags, props[::2])",
        ValueError,
        r"props has 4 rows but X has 8.*per-bag table",
    ),
    Malformed(
        "fit",
        "per-bag table missing a bag",
        "LLP().fit(X, bags, table.iloc[:3])",
        ValueError,
        r"props \(a per-bag table\) has no row for 1 bag",
    ),
    Malformed(
        "fit",
        "per-bag table with a duplicated id",
        "LLP().fit(X, bags, pd.concat([table, table.iloc[[3]]]))",
        ValueError,
        r"props \(a per-bag table\) repeats a bag id",
    ),
    Malformed(
        "fit",
        "per-bag table keyed by strings, bags are ints",
        "LLP().fit(X, bags, {str(b): [0.5, 0.5] for b in range(4)})",
        ValueError,
        r"props \(a per-bag table\) has no row for 4 bag",
    ),
    Malformed(
        "fit",
        "per-bag dict of vectors of different lengths",
        "LLP().fit(X, bags, {0: [0.5, 0.5], 1: [1, 0], 2: [0, 1], 3: [1, 0, 0]})",
        ValueError,
        r"props dict must map every bag id",
    ),
    Malformed(
        "fit",
        "classes param not matching the table columns",
        "LLP(classes=['x', 'y']).fit(X, bags, table)",
        ValueError,
        r"props columns \['no', 'yes'\] do not match classes",
    ),
    Malformed(
        "fit",
        "classes param of the wrong length",
        "LLP(classes=['a', 'b', 'c']).fit(X, bags, props)",
        ValueError,
        r"props has 2 classes .* classes has 3",
    ),
    Malformed(
        "fit",
        "classes param with a duplicated label",
        "LLP(classes=['a', 'a']).fit(X, bags, props)",
        ValueError,
        r"classes",
    ),
    # -------------------------------------------------- fit: overlapping bags
    Malformed(
        "fit",
        "index lists with an out-of-range row",
        "LLP().fit(X, [np.array([0, 1]), np.array([7, 8])], per_bag[:2])",
        ValueError,
        r"bags holds row indices outside \[0, 8\)",
    ),
    Malformed(
        "fit",
        "index lists with a negative row",
        "LLP().fit(X, [np.array([-1, 1]), np.array([2, 3])], per_bag[:2])",
        ValueError,
        r"bags holds row indices outside",
    ),
    Malformed(
        "fit",
        "index lists with an empty bag",
        "LLP().fit(X, [np.array([0, 1]), np.array([], dtype=int)], per_bag[:2])",
        ValueError,
        r"bags has 1 empty bag",
    ),
    Malformed(
        "fit",
        "index lists of float indices",
        "LLP().fit(X, [np.array([0, 1]), np.array([2.0, 3.5])], per_bag[:2])",
        TypeError,
        r"bags\[1\] must be a 1-D array of integer row indices",
    ),
    Malformed(
        "fit",
        "index lists of 2-D arrays",
        "LLP().fit(X, [np.array([[0, 1]]), np.array([2, 3])], per_bag[:2])",
        TypeError,
        r"bags\[0\] must be a 1-D array of integer row indices",
    ),
    Malformed(
        "fit",
        "index lists with sample-aligned props",
        "LLP().fit(X, lists, props)",
        ValueError,
        r"props must be \(n_bags, n_classes\) = \(3, n_classes\)",
    ),
    Malformed(
        "fit",
        "membership matrix of the wrong shape",
        "LLP().fit(X, sp.eye(6, 3, format='csr'), per_bag)",
        ValueError,
        r"bags \(a membership matrix\) has 6 rows but X has 8",
    ),
    Malformed(
        "fit",
        "membership matrix with an empty column",
        "LLP().fit(X, sp.csr_matrix(np.eye(8, 4)[:, [0, 1, 2]] * [1, 1, 0]), per_bag)",
        ValueError,
        r"bags has 1 empty bag",
    ),
    # ------------------------------------------------------- fit: parameters
    Malformed(
        "fit",
        "validation_fraction with all bags connected",
        "LLP(validation_fraction=0.5).fit(X, [np.arange(5), np.arange(4, 8)], "
        "per_bag[:2])",
        ValueError,
        r"validation_fraction=0.5: BagShuffleSplit needs at least 2 bags",
    ),
    Malformed(
        "fit",
        "negative max_epochs",
        "LLP(max_epochs=-1).fit(X, bags, props)",
        ValueError,
        r"'max_epochs' parameter",
    ),
    Malformed(
        "fit",
        "unknown method",
        "LLP(method='vta').fit(X, bags, props)",
        ValueError,
        r"method='vta' is not a known method",
    ),
    Malformed(
        "partial_fit",
        "classes that differ from classes_",
        "fitted().partial_fit(X, bags, props, classes=[0, 1, 2])",
        ValueError,
        r"classes must match classes_",
    ),
    # ------------------------------------- fit: silent wrong results (#13)
    Malformed(
        "fit",
        "bags with the reserved id -1 (rows in no bag)",
        "LLP().fit(X, np.array([0, 0, 1, 1, 2, 2, -1, -1]), props)",
        ValueError,
        r"bags holds the id -1, which marks rows in no bag",
    ),
    Malformed(
        "fit",
        "bags with a missing timestamp (NaT)",
        "LLP().fit(X, pd.to_datetime(['2020'] * 4 + ['2021'] * 3 + [None]), props)",
        ValueError,
        r"bags contains missing ids \(NaT\)",
    ),
    Malformed(
        "fit",
        "bags of frozensets",
        "LLP().fit(X, pd.Series([frozenset({b}) for b in bags]), props)",
        TypeError,
        r"bags holds ids of type frozenset",
    ),
    Malformed(
        "fit",
        "composite keys of different lengths",
        "LLP().fit(X, [(0, 'a')] * 4 + [(1,)] * 4, props)",
        TypeError,
        r"bags mixes composite keys \(tuples\) of different lengths",
    ),
    Malformed(
        "fit",
        "sample-aligned props DataFrame not subset with X",
        "LLP().fit(X[:6], bags[:6], pd.DataFrame(props))",
        ValueError,
        r"props has 8 rows but X has 6",
    ),
    Malformed(
        "fit",
        "props with duplicate class columns",
        "LLP().fit(X, bags, pd.DataFrame(props, columns=['yes', 'yes']))",
        ValueError,
        r"props has duplicate class columns",
    ),
    Malformed(
        "fit",
        "a method hyperparameter the method does not take",
        "LLP(method='dllp', method__alpha=0.1).fit(X, bags, props)",
        ValueError,
        r"\['method__alpha'\] are not hyperparameters of DLLP",
    ),
    Malformed(
        "fit",
        "a method hyperparameter out of range",
        "LLP(method='vat', method__alpha=float('nan')).fit(X, bags, props)",
        ValueError,
        r"'method__alpha' parameter of VAT",
    ),
    Malformed(
        "fit",
        "a fixed threshold with three classes",
        "LLP(threshold=0.3).fit(X, bags, np.tile([0.2, 0.3, 0.5], (8, 1)))",
        ValueError,
        r"threshold=0.3 is a probability threshold of the second class",
    ),
    Malformed(
        "fit",
        "sample_weight zero everywhere",
        "LLP().fit(X, bags, props, sample_weight=np.zeros(8))",
        ValueError,
        r"sample_weight is zero for every row",
    ),
    Malformed(
        "fit",
        "EpochScoring callback (scores against labels)",
        "LLP(callbacks=[EpochScoring('accuracy')]).fit(X, bags, props)",
        TypeError,
        r"callbacks: EpochScoring .* validation_fraction",
    ),
    Malformed(
        "fit",
        "ProgressBar counting batches of rows",
        "LLP(callbacks=[ProgressBar()]).fit(X, bags, props)",
        TypeError,
        r"ProgressBar\(batches_per_epoch='auto'\).*ProgressBar\('count'\)",
    ),
    Malformed(
        "fit",
        "scikit-learn's cross_val_predict with predict_proba",
        "sk_cross_val_predict(LLP(), X, bags, cv=BagKFold(2), "
        "params={'props': props}, method='predict_proba')",
        TypeError,
        r"sklearn_llp.model_selection.cross_val_predict",
    ),
    Malformed(
        "fit",
        "initialize() of a model never fitted, without sizes",
        "LLP().initialize()",
        ValueError,
        r"module__n_features=<number of columns of X>",
    ),
    # ------------------------------------------------------------- predict
    Malformed(
        "predict",
        "wrong number of features",
        "fitted().predict(X[:, :2])",
        ValueError,
        r"X has 2 features, but LLPClassifier is expecting 3",
    ),
    Malformed(
        "predict",
        "DataFrame with an unseen column",
        "fitted_df().predict(Xdf.rename(columns={'c': 'd'}))",
        ValueError,
        r"feature names should match.*unseen at fit time:\n- d",
    ),
    Malformed(
        "predict",
        "X with NaN",
        "fitted().predict(np.full((2, 3), np.nan))",
        ValueError,
        r"Input X contains NaN",
    ),
    Malformed(
        "predict",
        "one row as a 1-D array",
        "fitted().predict(X[0])",
        ValueError,
        r"\bX\b.*Expected 2D array",
    ),
    Malformed(
        "predict",
        "3-D X for a model fitted on 2-D X",
        "fitted().predict(np.zeros((2, 3, 2)))",
        ValueError,
        r"\bX\b",
    ),
    Malformed(
        "predict", "before fit", "LLP().predict(X)", ValueError, r"not fitted yet"
    ),
    # --------------------------------------------------------------- score
    Malformed(
        "score",
        "bags shorter than X",
        "fitted().score(X, bags[:7], props)",
        ValueError,
        r"bags has 7 entries but (X|y_proba) has 8 rows",
    ),
    Malformed(
        "score",
        "props of another number of classes",
        "fitted().score(X, bags, np.column_stack([props, np.zeros(8)]))",
        ValueError,
        r"props has 3 classes",
    ),
    Malformed(
        "score",
        "no props for a model fitted on bags",
        "fitted().score(X, bags)",
        ValueError,
        r"score\(X, y\) got no props, but the model was fitted on bags",
    ),
    Malformed(
        "score",
        "sample_weight of the wrong length",
        "fitted().score(X, bags, props, sample_weight=np.ones(7))",
        ValueError,
        r"sample_weight has shape \(7,\) but X has 8 rows",
    ),
    # ------------------------------------------------------------- metrics
    Malformed(
        "metrics",
        "y_proba with the wrong number of rows",
        "hard_l1_error(bags, props, proba[:7])",
        ValueError,
        r"bags has 8 entries but y_proba has 7 rows",
    ),
    Malformed(
        "metrics",
        "y_proba with the wrong number of columns",
        "hard_l1_error(bags, props, np.full((8, 3), 1 / 3))",
        ValueError,
        r"y_proba has 3 columns but props has 2 classes",
    ),
    Malformed(
        "metrics",
        "decision scores instead of probabilities",
        "soft_l1_error(bags, props, proba - 0.5)",
        ValueError,
        r"y_proba contains negative values",
    ),
    Malformed(
        "metrics",
        "y_proba of strings",
        "hard_l1_error(bags, props, np.full((8, 2), 'x'))",
        TypeError,
        r"y_proba must hold numbers",
    ),
    Malformed(
        "metrics",
        "props shorter than bags",
        "hard_l1_error(bags, props[:7], proba)",
        ValueError,
        r"props has 7 rows",
    ),
    Malformed(
        "metrics",
        "unknown metric name",
        "bag_errors(bags, props, proba, metrics=['accuracy'])",
        ValueError,
        r"metrics must be among",
    ),
    Malformed(
        "metrics",
        "index lists with an out-of-range row",
        "hard_l1_error([np.array([0, 9])], [[1.0, 0.0]], proba)",
        ValueError,
        r"bags holds row indices outside \[0, 8\)",
    ),
    Malformed(
        "metrics",
        "membership matrix of the wrong shape",
        "hard_l1_error(sp.eye(6, 3, format='csr'), per_bag, proba)",
        ValueError,
        r"bags \(a membership matrix\) has 6 rows but y_proba has 8",
    ),
    # ------------------------------------------------------------- scorers
    Malformed(
        "scorers",
        "unknown metric",
        "BagScorer('accuracy')",
        ValueError,
        r"metric must be one of",
    ),
    Malformed(
        "scorers",
        "props_table as a sample-aligned array",
        "make_bag_scorer('hard_l1', props_table=props)",
        TypeError,
        r"props_table must be a per-bag table",
    ),
    Malformed(
        "scorers",
        "bags without props",
        "make_bag_scorer('hard_l1', bags=bags)",
        ValueError,
        r"Pass both bags and props",
    ),
    Malformed(
        "scorers",
        "called without y",
        "hard_l1_scorer(fitted(), X)",
        ValueError,
        r"needs y, the bag id of every row of X",
    ),
    Malformed(
        "scorers",
        "called without props (routing off)",
        "hard_l1_scorer(fitted(), X, bags)",
        ValueError,
        r"received no label proportions",
    ),
    # ----------------------------------------------------------- splitters
    Malformed(
        "splitters",
        "more folds than bags",
        "next(BagKFold(5).split(X, bags))",
        ValueError,
        r"BagKFold needs at least 5 bags .* in y form 4",
    ),
    Malformed(
        "splitters",
        "no bags given",
        "next(BagKFold(2).split(X))",
        ValueError,
        r"needs the bag id of every sample",
    ),
    Malformed(
        "splitters",
        "groups shorter than X",
        "next(BagKFold(2).split(X, groups=bags[:7]))",
        ValueError,
        r"groups has 7 entries but X has 8 rows",
    ),
    Malformed(
        "splitters",
        "2-D groups",
        "next(BagShuffleSplit(2).split(X, groups=np.eye(8)))",
        ValueError,
        r"groups must be 1-D with one bag id per row of X; got shape \(8, 8\)",
    ),
    Malformed(
        "splitters",
        "overlapping bags all connected, 2 folds",
        "next(BagKFold(2).split(X, groups=[np.arange(5), np.arange(4, 8)]))",
        ValueError,
        r"bags in groups form 1:",
    ),
    Malformed(
        "splitters",
        "membership matrix of the wrong shape",
        "next(BagKFold(2).split(X, groups=sp.eye(6, 3, format='csr')))",
        ValueError,
        r"groups \(a membership matrix\) has 6 rows but X has 8",
    ),
    Malformed(
        "splitters",
        "subset_membership of bag ids",
        "subset_membership(bags, np.arange(4))",
        TypeError,
        r"bags must be overlapping bags",
    ),
    Malformed(
        "splitters",
        "subset_membership with repeated rows",
        "subset_membership(lists, np.array([0, 0, 1]))",
        ValueError,
        r"rows holds repeated indices",
    ),
    # ----------------------------------------------------- bag generators
    Malformed(
        "generators",
        "bag_size 0",
        "UniformBagGenerator(0).fit(X)",
        ValueError,
        r"'bag_size' parameter",
    ),
    Malformed(
        "generators",
        "bag_size larger than the data",
        "UniformBagGenerator(20).fit(X)",
        ValueError,
        r"bag_size=20 exceeds the number of samples",
    ),
    Malformed(
        "generators",
        "more clusters than rows",
        "KMeansBagGenerator(20, random_state=0).fit(X)",
        ValueError,
        r"n_clusters=20",
    ),
    Malformed(
        "generators",
        "unknown grouping column",
        "FeatureBagGenerator(['z']).fit(Xdf)",
        ValueError,
        r"Unknown column 'z'",
    ),
    Malformed(
        "generators",
        "make_bags with y of another length",
        "UniformBagGenerator(2, random_state=0).make_bags(X, [0, 1] * 3)",
        ValueError,
        r"\by\b.*(8|6)",
    ),
    Malformed(
        "generators",
        "make_bags with y containing NaN",
        "UniformBagGenerator(2, random_state=0)"
        ".make_bags(X, np.r_[0, 1, np.nan, 1, 0, 1, 0, 1])",
        ValueError,
        r"y contains missing labels",
    ),
    Malformed(
        "generators",
        "make_bags with 2-D y",
        "UniformBagGenerator(2, random_state=0).make_bags(X, np.zeros((8, 2)))",
        ValueError,
        r"y must be 1-D",
    ),
]


def run_case(case):
    """Evaluate the code of a catalogue row."""
    return eval(case.code, dict(NAMESPACE))  # noqa: S307 -- our own strings


def _params():
    for case in CATALOGUE:
        marks = (
            [pytest.mark.xfail(strict=True, reason=case.xfail)] if case.xfail else []
        )
        yield pytest.param(case, id=case.id, marks=marks)


def test_catalogue_is_broad_and_unique():
    assert len(CATALOGUE) >= 25
    assert len({case.id for case in CATALOGUE}) == len(CATALOGUE)
    assert len({case.code for case in CATALOGUE}) == len(CATALOGUE)
    wheres = {case.where for case in CATALOGUE}
    expected = {"fit", "predict", "score", "metrics", "scorers", "splitters"}
    assert wheres >= expected | {"generators"}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", _params())
def test_malformed_input_gets_a_clear_error(case):
    assert issubclass(case.exception, (ValueError, TypeError))
    with pytest.raises((ValueError, TypeError)) as info:
        run_case(case)
    assert isinstance(info.value, case.exception), repr(info.value)
    assert re.search(case.match, str(info.value), flags=re.S), str(info.value)
