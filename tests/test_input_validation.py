"""Every malformed input gets a clear ValueError/TypeError naming the argument."""

import numpy as np
import pandas as pd
import pytest

from sklearn_llp import LLPClassifier
from sklearn_llp.utils import check_bags


@pytest.fixture
def data():
    X = np.random.RandomState(0).normal(size=(8, 3))
    bags = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    props = np.array(
        [[0.5, 0.5], [0.5, 0.5], [1, 0], [1, 0], [0, 1], [0, 1], [0.5, 0.5], [0.5, 0.5]]
    )
    return X, bags, props


def _fit(X, bags, props, **params):
    LLPClassifier(max_epochs=1, verbose=0, **params).fit(X, bags, props)


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.nan, "props contains NaN or infinite"),
        (np.inf, "props contains NaN or infinite"),
        (-0.5, "props contains negative"),
    ],
)
def test_bad_values_in_props(data, bad, match):
    X, bags, props = data
    props = props.copy()
    props[0, 0] = bad
    with pytest.raises(ValueError, match=match):
        _fit(X, bags, props)


def test_rows_not_summing_to_one_state_the_tolerance(data):
    X, bags, props = data
    with pytest.raises(
        ValueError, match=r"props rows must sum to 1 \(tolerance 0.01\)"
    ):
        _fit(X, bags, props * 0.9)


def test_rounded_rows_are_accepted_and_renormalised(data):
    X, bags, props = data
    bag_props = check_bags(bags, props * 1.005, n_samples=len(X)).props
    np.testing.assert_allclose(bag_props.sum(1), 1.0)


def test_props_that_differ_within_a_bag(data):
    X, bags, props = data
    props = props.copy()
    props[1] = [0.25, 0.75]
    with pytest.raises(ValueError, match="props differ between rows of the same bag"):
        _fit(X, bags, props)


def test_wrong_number_of_classes(data):
    X, bags, props = data
    with pytest.raises(ValueError, match="props has 2 classes .* classes has 3"):
        _fit(X, bags, props, classes=["a", "b", "c"])
    clf = LLPClassifier(max_epochs=1, verbose=0).fit(X, bags, props)
    three = np.column_stack([props, np.zeros(len(X))])
    with pytest.raises(ValueError, match="props has 3 classes .* classes has 2"):
        clf.partial_fit(X, bags, three)


@pytest.mark.parametrize(
    "which, match",
    [
        ("bags", "bags has 7 entries but X has 8 rows"),
        ("props", "props has 7 rows but X has 8"),
    ],
)
def test_lengths_that_do_not_match_X(data, which, match):
    X, bags, props = data
    if which == "bags":
        bags = bags[:7]
    else:
        props = props[:7]
    with pytest.raises(ValueError, match=match):
        _fit(X, bags, props)


def test_per_bag_table_missing_a_bag(data):
    X, bags, _ = data
    table = pd.DataFrame({0: [0.5, 1, 0], 1: [0.5, 0, 1]}, index=[0, 1, 2])
    with pytest.raises(ValueError, match=r"no row for 1 bag id\(s\).*\[3\]"):
        _fit(X, bags, table)


def test_X_with_nan(data):
    X, bags, props = data
    X = X.copy()
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        _fit(X, bags, props)


def test_unknown_method_lists_known_ones(data):
    X, bags, props = data
    with pytest.raises(ValueError, match=r"method='vta' is not a known method.*'vat'"):
        _fit(X, bags, props, method="vta")


def test_a_single_bag(data):
    X, _, _ = data
    with pytest.raises(ValueError, match="single bag"):
        _fit(X, np.zeros(8), np.tile([0.5, 0.5], (8, 1)))


def test_missing_bags_or_props():
    X = np.zeros((4, 2))
    with pytest.raises(ValueError, match="requires y to be passed"):
        LLPClassifier(verbose=0).fit(X)
    with pytest.raises(TypeError, match="bags is None"):
        check_bags(None, np.ones((4, 2)) / 2, n_samples=4)


def test_two_dimensional_bags(data):
    X, bags, props = data
    with pytest.raises(ValueError, match="bags must be 1-D"):
        _fit(X, bags.reshape(4, 2), props)


def test_bags_with_missing_ids(data):
    X, bags, props = data
    ids = np.array(["a", "a", "b", "b", None, None, "c", "c"], dtype=object)
    with pytest.raises(ValueError, match="bags contains missing ids"):
        _fit(X, ids, props)


def test_non_numeric_props(data):
    X, bags, _ = data
    with pytest.raises(TypeError, match="props must hold numbers"):
        _fit(X, bags, np.full((8, 2), "x"))


def test_bad_hyperparameter_names_the_parameter(data):
    X, bags, props = data
    with pytest.raises(ValueError, match="'max_bag_size' parameter"):
        _fit(X, bags, props, max_bag_size=0)
    with pytest.raises(ValueError, match="'method__eps' parameter"):
        _fit(X, bags, props, method__eps=-1.0)


def test_module_with_wrong_output_size(data):
    import torch

    X, bags, props = data
    shape = r"module returned a tensor of shape \(\d+, 5\).*\(n_rows, 2\)"
    with pytest.raises(ValueError, match=shape):
        _fit(X, bags, props, module=torch.nn.Linear(3, 5))


def test_categorical_X_needs_encoding(data):
    _, bags, props = data
    X = pd.DataFrame({"a": list("xyxyxyxy"), "b": range(8)})
    with pytest.raises(ValueError, match="could not convert string to float"):
        _fit(X, bags, props)


# --- accepted forms of props give the same bags -----------------------------


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


def test_one_row_per_sample_indexed_by_shuffled_bag_ids_is_ambiguous():
    table = pd.DataFrame([[1, 0], [0, 1], [0.0, 1.0]], index=["c", "a", "b"])
    with pytest.raises(ValueError, match="reads both as sample-aligned"):
        check_bags(["a", "b", "c"], table, n_samples=3)


def test_dict_of_dicts_names_the_classes(data):
    X, bags, props = data
    table = pd.DataFrame(props[[0, 2, 4, 6]], columns=["no", "yes"])
    checked = check_bags(bags, table.to_dict("index"), n_samples=8)
    bag_props, classes = checked.props, checked.classes
    assert classes.tolist() == ["no", "yes"]
    np.testing.assert_allclose(bag_props, props[[0, 2, 4, 6]])


@pytest.mark.parametrize("estimator", ["llp", "meanmap"])
def test_labels_path_is_checked_once_for_both_estimators(estimator):
    """``fit(X, y)`` (instance labels) goes through one validator
    (``check_labels``) in LLPClassifier and MeanMapClassifier alike: wrong
    length, a label outside ``classes`` and a duplicated class are errors."""
    from sklearn_llp.linear import MeanMapClassifier

    X = np.random.RandomState(0).normal(size=(8, 3))
    y = np.array(["a", "b"] * 4)
    make = {
        "llp": lambda **kw: LLPClassifier(max_epochs=1, device="cpu", **kw),
        "meanmap": lambda **kw: MeanMapClassifier(**kw),
    }[estimator]
    with pytest.raises(ValueError, match="one class label per row"):
        make().fit(X, y[:5])
    with pytest.raises(ValueError, match="not in classes"):
        make(classes=["a", "c"]).fit(X, y)
    with pytest.raises(ValueError, match="duplicate labels"):
        make(classes=["a", "b", "a"]).fit(X, y)
    fitted = make(classes=["b", "a"]).fit(X, y)
    assert fitted.classes_.tolist() == ["b", "a"]
