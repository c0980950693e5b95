"""One input path: every form of bags, props, classes and sample weights is
read by the same code, and a validated ``Bags`` cannot be changed.

Each test asserts the right answer for an input that used to give a silent
wrong result (numbers in the names refer to the review's cases).
"""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from sklearn_llp.bags import label_proportions
from sklearn_llp.core import Bags, check_bags, check_fit_inputs
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.metrics import bag_table, soft_l1_error
from sklearn_llp.model_selection import cross_val_predict

FIELDS = [field.name for field in dataclasses.fields(Bags)]


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 2, 120)
    X = rng.normal(size=(120, 3)) + 1.5 * y[:, None]
    bags = np.repeat(np.arange(12), 10)
    # bags with different class mixes, so that Mean Map is well posed
    y[bags < 4] = (rng.uniform(size=40) < 0.2).astype(int)
    props = label_proportions(bags, y).to_numpy()[bags]
    w = rng.uniform(0.5, 2.0, 120)
    return X, y, bags, props, w


def assert_same_bags(a, b):
    for name in FIELDS:
        left, right = getattr(a, name), getattr(b, name)
        if isinstance(left, np.ndarray) or isinstance(right, np.ndarray):
            assert left is not None and right is not None, name
            assert left.dtype == right.dtype, name
            np.testing.assert_array_equal(left, right, err_msg=name)
        else:
            assert left == right, name


# --- an immutable Bags
def test_bags_cannot_be_changed(data):
    _, _, bags, props, w = data
    validated = check_bags(bags, props, sample_weight=w)
    with pytest.raises(dataclasses.FrozenInstanceError):
        validated.props = None
    with pytest.raises(AttributeError):
        validated.n_samples = 3
    arrays = ["indptr", "members", "ids", "props", "classes", "weights"]
    for name in arrays:
        with pytest.raises(ValueError, match="read-only"):
            getattr(validated, name)[0] = 0
    for name in ["pair_bags", "codes", "components"]:  # cached, shared too
        assert not getattr(validated, name).flags.writeable


def test_bags_hold_copies_of_the_callers_arrays():
    indptr, members, ids = np.array([0, 2, 4]), np.arange(4), np.array([7, 8])
    bags = Bags(indptr, members, ids, 4)
    members[0], ids[0] = 3, 9
    assert bags.members.tolist() == [0, 1, 2, 3]
    assert bags.ids.tolist() == [7, 8]


def test_with_props_and_with_weights_return_new_objects(data):
    _, _, bags, props, w = data
    plain = check_bags(bags)
    values = np.eye(2)[np.arange(12) % 2]
    with_props = plain.with_values(values, "classification", ["a", "b"])
    assert with_props is not plain and plain.props is None
    assert with_props.classes.tolist() == ["a", "b"]
    weighted = plain.with_weights(w)
    assert weighted is not plain and plain.weights is None
    np.testing.assert_array_equal(weighted.weights, w)
    restricted, kept = weighted.restrict(np.arange(60))
    assert restricted.n_samples == 60 and kept.tolist() == list(range(6))
    np.testing.assert_array_equal(restricted.weights, w[:60])
    assert weighted.n_samples == 120  # unchanged


# --- 1. a Bags together with sample_weight or classes
def test_weights_given_with_a_bags_object_are_used_by_the_metrics(data):
    # (by the estimators: tests/test_conformance.py)
    _, _, bags, props, w = data
    validated = check_bags(bags, props)
    proba = np.random.RandomState(1).dirichlet([1, 1], size=120)
    expected = soft_l1_error(bags, props, proba, sample_weight=w)
    assert soft_l1_error(validated, None, proba, sample_weight=w) == expected
    assert soft_l1_error(validated, None, proba) != expected


def test_wrong_weights_with_a_bags_object_are_refused(data):
    X, _, bags, props, w = data
    validated = check_bags(bags, props)
    with pytest.raises(ValueError, match=r"sample_weight has shape \(7,\)"):
        check_bags(validated, sample_weight=np.ones(7))
    with pytest.raises(ValueError, match=r"sample_weight has shape \(7,\)"):
        MeanMapClassifier().fit(X, validated, sample_weight=np.ones(7))
    weighted = check_bags(validated, sample_weight=w)
    assert check_bags(weighted, sample_weight=w) is weighted  # the same: fine
    with pytest.raises(ValueError, match="sample_weight differs"):
        check_bags(weighted, sample_weight=w[::-1])


def test_classes_given_with_a_bags_object_reorder_its_columns(data):
    _, y, bags, _, _ = data
    table = label_proportions(bags, np.where(y == 1, "yes", "no"))
    validated = check_bags(bags, table)
    assert validated.classes.tolist() == ["no", "yes"]
    swapped = check_bags(validated, classes=["yes", "no"])
    assert swapped.classes.tolist() == ["yes", "no"]
    np.testing.assert_array_equal(swapped.props, validated.props[:, ::-1])
    with pytest.raises(ValueError, match="are not the classes of bags"):
        check_bags(validated, classes=["yes", "maybe"])


@pytest.mark.parametrize(
    "props_form, classes",
    [("array", [1, 0]), ("array", ["a", "b"]), ("frame", ["yes", "no"])]
    + [("table", [1, 0])],
)
def test_validating_twice_equals_validating_once(data, props_form, classes):
    _, y, bags, props, w = data
    w = w.copy()
    w[:10] = 0.0  # bag 0 loses all its rows, bag 1 one of them
    w[10] = 0.0
    given = {
        "array": props,
        "frame": pd.DataFrame(props, columns=["no", "yes"]),
        "table": label_proportions(bags, y),
    }[props_form]
    once = check_bags(bags, given, sample_weight=w, classes=classes)
    twice = check_bags(check_bags(bags, given), sample_weight=w, classes=classes)
    assert_same_bags(twice, once)
    assert once.n_bags == 11 and 10 not in once.members


# --- 2. cross_val_predict with sample weights (used: tests/test_classifier.py)
class _CountingMeanMap(MeanMapClassifier):
    fits = []

    def fit(self, X, y=None, props=None, sample_weight=None):
        self.fits.append(len(X))
        return super().fit(X, y, props, sample_weight)


def test_cross_val_predict_refuses_wrong_weights_before_fitting(data):
    X, _, bags, props, _ = data
    _CountingMeanMap.fits.clear()
    short = {"sample_weight": np.ones(119)}
    with pytest.raises(ValueError, match=r"sample_weight has shape \(119,\)"):
        cross_val_predict(_CountingMeanMap(), X, bags, props, fit_params=short)
    assert _CountingMeanMap.fits == []


# --- 5. bag ids as one column: one-element lists
def test_one_element_lists_that_read_two_ways_are_refused():
    # ids 0..n-1 shuffled: row i in bag ids[i], or bag j holding row ids[j]
    with pytest.raises(ValueError, match="reads both as a column of bag ids"):
        check_bags([[1], [2], [0]])
    # of another length than X: bags of one row each (row indices)
    assert check_bags([[1], [2]], n_samples=3).members.tolist() == [1, 2]
    with pytest.raises(ValueError, match="read as a column of bag ids"):
        check_bags([["a"], ["b"]], n_samples=3)
    # arrays of one row index are row indices
    lists = [np.array([2]), np.array([0]), np.array([1])]
    assert check_bags(lists, n_samples=3).members.tolist() == [2, 0, 1]


# --- 6. integer class columns are names; a frame's default columns are positions
def test_default_columns_of_a_frame_are_read_in_order(data):
    _, _, bags, props, _ = data
    frame = pd.DataFrame(props)  # RangeIndex columns: numbers, not names
    validated = check_bags(bags, frame, classes=["a", "b"])
    assert validated.classes.tolist() == ["a", "b"]
    np.testing.assert_array_equal(validated.props, check_bags(bags, props).props)
    table = bag_table(bags, props)  # unnamed in, unnamed out
    assert isinstance(table.columns, pd.RangeIndex)
    assert check_bags(bags, table, classes=["a", "b"]).classes.tolist() == ["a", "b"]


# --- 8. integer ids of any size
def test_python_integer_ids_beyond_64_bits_stay_distinct():
    # (ids up to 2**64: tests/test_equivalent_inputs.py)
    huge = [2**70, 2**70 + 1, -(2**70), 2**70]
    assert check_bags(huge).sizes.tolist() == [1, 2, 1]
    with pytest.raises(ValueError, match="holds the id -1"):
        check_bags([2**70, -1])


def test_bool_ids_with_a_bool_indexed_table_are_looked_up_by_label():
    bags = np.array([False, False, True, True])
    table = pd.DataFrame({"no": [0.0, 1.0], "yes": [1.0, 0.0]}, index=[True, False])
    checked = check_bags(bags, table)
    assert checked.ids.tolist() == [False, True]
    np.testing.assert_array_equal(checked.props, [[1.0, 0.0], [0.0, 1.0]])


def test_float_rounding_negatives_are_zero_but_real_negatives_fail():
    tiny = 1 - 0.3 - 0.3 - 0.4  # -5.6e-17
    checked = check_bags([0, 1], [[0.3, 0.3, 0.4 + tiny], [tiny, 0.5, 0.5 - tiny]])
    assert (checked.props >= 0).all()
    with pytest.raises(ValueError, match="negative"):
        check_bags([0, 1], [[-0.001, 1.001], [0.5, 0.5]])


# --- check_fit_inputs
def test_fit_inputs_of_labels_are_bags_of_one_row(data):
    _, y, _, _, w = data
    w = w.copy()
    w[3] = 0.0
    bags, on_labels = check_fit_inputs(y, n_samples=120, sample_weight=w)
    assert on_labels
    rows = np.flatnonzero(w > 0)
    np.testing.assert_array_equal(bags.members, rows)
    np.testing.assert_array_equal(bags.ids, rows)
    np.testing.assert_array_equal(bags.props, np.eye(2)[y[rows]])
    np.testing.assert_array_equal(bags.bag_weights, w[rows])
    np.testing.assert_array_equal(bags.weights, w)
    plain, _ = check_fit_inputs(y, n_samples=120, classes=[0, 1, 2])
    assert plain.weights is None and plain.bag_weights is None
    assert plain.props.shape == (120, 3)


def test_fit_inputs_of_bags_go_through_check_bags(data):
    _, _, bags, props, w = data
    validated, on_labels = check_fit_inputs(bags, props, n_samples=120)
    assert not on_labels
    assert_same_bags(validated, check_bags(bags, props, min_bags=2))
    again, on_labels = check_fit_inputs(validated, n_samples=120, sample_weight=w)
    assert not on_labels
    assert_same_bags(again, check_bags(bags, props, sample_weight=w))
