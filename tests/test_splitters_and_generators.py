"""Silent wrong results of a hostile review, refused or fixed:

- BagShuffleSplit sizes that ask for more than there is (as scikit-learn's
  GroupShuffleSplit refuses them), and a way to require N training bags;
- FeatureBagGenerator on a list of rows of mixed types (read column by
  column, as a DataFrame), and booleans kept apart from the numbers 0 and 1;
- check_identifiability refusing NaN or infinite values in X.
"""

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GroupShuffleSplit

from sklearn_llp.bags import FeatureBagGenerator, check_identifiability
from sklearn_llp.model_selection import BagShuffleSplit
from sklearn_llp.model_selection._split import shuffle_split_groups
from sklearn_llp.utils import check_bags


# ---------------------------------------------------------------------------
# BagShuffleSplit: sizes
# ---------------------------------------------------------------------------
def equal_bags(n_bags=10, size=3):
    bags = np.repeat(np.arange(n_bags), size)
    return np.zeros((len(bags), 1)), bags


@pytest.mark.parametrize(
    "test_size, train_size",
    [(0.3, 0.9), (0.5, 0.6), (0.99, 0.02), (6, 5), (9, 2)],
)
def test_sizes_summing_past_everything_are_refused_like_sklearn(test_size, train_size):
    X, bags = equal_bags()
    # scikit-learn refuses them (10 groups)
    with pytest.raises(ValueError, match="sum of"):
        next(
            GroupShuffleSplit(
                1, test_size=test_size, train_size=train_size, random_state=0
            ).split(X, groups=bags)
        )
    with pytest.raises(ValueError, match="sum of .*Reduce test_size and/or train_size"):
        next(
            BagShuffleSplit(
                1, test_size=test_size, train_size=train_size, random_state=0
            ).split(X, bags)
        )
    with pytest.raises(ValueError, match="sum of"):
        next(
            BagShuffleSplit(1, test_size=test_size, train_size=train_size).split_bags(
                check_bags(bags)
            )
        )


def test_the_reported_case_trains_on_what_it_asks_or_refuses():
    """test_size=0.3, train_size=0.9 trained on 0.67 of the rows; now an
    error, and valid combinations train on what they ask for."""
    X, bags = equal_bags(20, 5)
    with pytest.raises(ValueError, match="test_size and train_size = 1.2"):
        next(BagShuffleSplit(1, test_size=0.3, train_size=0.9).split(X, bags))
    for test_size, train_size in [(0.3, 0.7), (0.2, 0.5), (0.1, 0.9), (4, 16), (2, 3)]:
        for train, test in BagShuffleSplit(
            5, test_size=test_size, train_size=train_size, random_state=0
        ).split(X, bags):
            assert not set(bags[train]) & set(bags[test])
            if isinstance(train_size, float):
                assert len(train) == pytest.approx(train_size * len(bags), abs=2.5)
            else:
                assert len(np.unique(bags[train])) == train_size
            if isinstance(test_size, float):
                assert len(test) == pytest.approx(test_size * len(bags), abs=2.5)
            else:
                assert len(np.unique(bags[test])) == test_size


@pytest.mark.parametrize(
    "test_size, train_size, ok",
    [
        (0.5, 5, True),  # 5 of 10 equal bags held out, 5 left
        (0.5, 6, False),  # 6 bags asked, 5 left
        (5, 0.5, True),  # half the rows left after 5 bags
        (5, 0.6, False),  # 0.6 of the rows asked, 0.5 left
        (1, 0.9, True),
        (2, 0.9, False),
    ],
)
def test_mixed_int_and_float_sizes(test_size, train_size, ok):
    X, bags = equal_bags()
    splitter = BagShuffleSplit(
        3, test_size=test_size, train_size=train_size, random_state=0
    )
    if ok:
        for train, test in splitter.split(X, bags):
            assert len(train) and len(test)
    else:
        with pytest.raises(ValueError, match="do not fit together.*Reduce"):
            next(splitter.split(X, bags))


@pytest.mark.parametrize(
    "test_size, train_size",
    [(0.0, None), (1.0, None), (None, 1.5), (0, None), (10, None), (True, None)],
)
def test_each_size_alone_is_still_validated(test_size, train_size):
    X, bags = equal_bags()
    with pytest.raises(ValueError, match="test_size|train_size"):
        next(
            BagShuffleSplit(1, test_size=test_size, train_size=train_size).split(
                X, bags
            )
        )


def test_shuffle_split_groups_never_leaves_a_side_empty():
    rng = np.random.RandomState(0)
    for _ in range(200):
        n = rng.randint(2, 6)
        rows = rng.randint(1, 50, n).astype(float)
        test_size = rng.choice([0.05, 0.1, 0.5, 0.9])
        try:
            train, test = shuffle_split_groups(rows, test_size, None, rng)
        except ValueError as exc:
            assert "no bag on one side" in str(exc)
            continue
        assert train.any() and test.any() and not (train & test).any()


# ---------------------------------------------------------------------------
# BagShuffleSplit: at least N training bags
# ---------------------------------------------------------------------------
def test_min_train_bags_refuses_a_single_training_bag():
    """validation_fraction=0.1 with 2 bags: the smaller bag is held out and
    one bag is left to train on; a caller that needs 2 says so."""
    bags = check_bags(np.repeat([0, 1], [30, 10]))
    splitter = BagShuffleSplit(1, test_size=0.1, random_state=0)
    train, test = next(splitter.split_bags(bags))
    assert train.sum() == 1 and test.sum() == 1  # allowed by default
    with pytest.raises(ValueError, match="leaves 1 of the 2 bags to train on.*2"):
        next(splitter.split_bags(bags, min_train_bags=2))
    # enough bags: the same splits as without the requirement
    many = check_bags(np.repeat(np.arange(12), 5))
    plain = list(BagShuffleSplit(3, test_size=0.25, random_state=1).split_bags(many))
    required = list(
        BagShuffleSplit(3, test_size=0.25, random_state=1).split_bags(
            many, min_train_bags=9
        )
    )
    for (a, b), (c, d) in zip(plain, required):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, d)
        assert c.sum() == 9
    with pytest.raises(ValueError, match="fewer than the 10 required"):
        list(
            BagShuffleSplit(3, test_size=0.25, random_state=1).split_bags(
                many, min_train_bags=10
            )
        )


def test_min_train_bags_counts_bags_of_overlapping_groups():
    # bags 0-1 share a row (one group of 2 bags), bag 2 alone
    lists = [np.array([0, 1, 2]), np.array([2, 3]), np.array([4, 5])]
    bags = check_bags(lists, n_samples=6)
    seen = set()
    for seed in range(20):
        splitter = BagShuffleSplit(1, test_size=1, random_state=seed)
        train, _ = next(splitter.split_bags(bags))
        seen.add(int(train.sum()))
        if train.sum() == 2:
            next(splitter.split_bags(bags, min_train_bags=2))
        else:
            with pytest.raises(ValueError, match="min|required"):
                next(splitter.split_bags(bags, min_train_bags=2))
    assert seen == {1, 2}


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, None])
def test_min_train_bags_is_validated(bad):
    bags = check_bags(np.repeat(np.arange(4), 3))
    with pytest.raises(ValueError, match="min_train_bags"):
        next(BagShuffleSplit(1).split_bags(bags, min_train_bags=bad))


# ---------------------------------------------------------------------------
# FeatureBagGenerator: lists of mixed rows
# ---------------------------------------------------------------------------
MIXED_ROWS = [
    [18, "N"],
    [40, "Y"],
    [25, "N"],
    [60, "Y"],
    [33, "N"],
    [51, "Y"],
]


def test_a_list_of_mixed_rows_is_read_column_by_column():
    from_list = FeatureBagGenerator([0, 1], n_bins=2).fit(MIXED_ROWS)
    from_frame = FeatureBagGenerator([0, 1], n_bins=2).fit(pd.DataFrame(MIXED_ROWS))
    assert from_list.n_bags_ == from_frame.n_bags_ == 2
    np.testing.assert_array_equal(from_list.labels_, from_frame.labels_)
    np.testing.assert_array_equal(from_list.labels_, [0, 1, 0, 1, 0, 1])
    pd.testing.assert_frame_equal(from_list.bag_labels_, from_frame.bag_labels_)
    np.testing.assert_array_equal(from_list.bin_edges_[0], [18, 36.5, 60])
    # transform reads lists the same way (a number, not the string "45")
    np.testing.assert_array_equal(
        from_list.transform([[45, "Y"], [20, "N"], [45, "N"]]), [1, 0, -1]
    )
    # tuples of rows too; numbers are sorted as numbers, not as strings
    rows = [(100, "a"), (9, "a"), (20, "a")]
    gen = FeatureBagGenerator(0).fit(rows)
    np.testing.assert_array_equal(gen.labels_, [2, 0, 1])
    assert list(gen.bag_labels_[0]) == [9, 20, 100]


def test_lists_keep_missing_values_and_refuse_ragged_rows():
    rows = [[1.5, None], [2.5, "x"], [None, "x"]]
    gen = FeatureBagGenerator([0, 1]).fit(rows)
    frame = FeatureBagGenerator([0, 1]).fit(pd.DataFrame(rows))
    np.testing.assert_array_equal(gen.labels_, frame.labels_)
    with pytest.raises(ValueError, match="2-D"):
        FeatureBagGenerator(0).fit([[1, 2], [3]])
    with pytest.raises(ValueError, match="2-D"):
        FeatureBagGenerator(0).fit([1, 2, 3])


def test_arrays_are_unchanged():
    X = np.array([[1.0, 5.0], [2.0, 5.0], [1.0, 6.0]])
    gen = FeatureBagGenerator([0, 1]).fit(X)
    np.testing.assert_array_equal(gen.labels_, [0, 2, 1])
    np.testing.assert_array_equal(
        gen.labels_, FeatureBagGenerator([0, 1]).fit(X.tolist()).labels_
    )


# ---------------------------------------------------------------------------
# FeatureBagGenerator: True is not 1
# ---------------------------------------------------------------------------
def test_booleans_and_numbers_in_one_column_are_distinct_groups():
    column = pd.Series([True, 1, 0, False, 1.0, True, None], dtype=object)
    gen = FeatureBagGenerator("a").fit(pd.DataFrame({"a": column}))
    assert gen.n_bags_ == 5  # False, 0, True, 1 (1.0 is 1), missing
    assert [type(v) for v in gen.bag_labels_["a"][:4]] == [bool, int, bool, int]
    assert list(gen.bag_labels_["a"][:4]) == [False, 0, True, 1]
    np.testing.assert_array_equal(gen.labels_, [2, 3, 1, 0, 3, 2, 4])
    np.testing.assert_array_equal(
        gen.transform(pd.DataFrame({"a": [1, True, False, 0, 2]})), [3, 2, 0, 1, -1]
    )
    # the same from a list of rows
    rows = [[v] for v in column]
    np.testing.assert_array_equal(FeatureBagGenerator(0).fit(rows).labels_, gen.labels_)


def test_a_boolean_column_does_not_match_numbers_and_back():
    gen = FeatureBagGenerator("a").fit(pd.DataFrame({"a": [True, False, True]}))
    np.testing.assert_array_equal(gen.labels_, [1, 0, 1])
    np.testing.assert_array_equal(
        gen.transform(pd.DataFrame({"a": [1, 0, True, 1.0]})), [-1, -1, 1, -1]
    )
    gen = FeatureBagGenerator("a").fit(pd.DataFrame({"a": [1, 0, 1]}))
    np.testing.assert_array_equal(
        gen.transform(pd.DataFrame({"a": [True, False, 1, np.int64(0)]})),
        [-1, -1, 1, 0],
    )
    # nullable booleans and categoricals of booleans
    nullable = pd.DataFrame({"a": pd.array([True, None, False], dtype="boolean")})
    gen = FeatureBagGenerator("a").fit(nullable)
    np.testing.assert_array_equal(gen.labels_, [1, 2, 0])
    np.testing.assert_array_equal(gen.transform(pd.DataFrame({"a": [1, 0]})), [-1, -1])
    cat = pd.DataFrame({"a": pd.Categorical([True, False, True])})
    gen = FeatureBagGenerator("a").fit(cat)
    np.testing.assert_array_equal(gen.labels_, [1, 0, 1])
    np.testing.assert_array_equal(gen.transform(pd.DataFrame({"a": [1]})), [-1])


def test_plain_columns_keep_their_order():
    # categories keep their order; strings and numbers sort as before
    X = pd.DataFrame(
        {
            "edu": pd.Categorical(["hs", "phd", "ba", "hs"], ["hs", "ba", "phd"]),
            "n": [3, 1, 2, 3],
        }
    )
    gen = FeatureBagGenerator(["edu", "n"]).fit(X)
    assert list(gen.bag_labels_["edu"]) == ["hs", "ba", "phd"]
    np.testing.assert_array_equal(gen.labels_, [0, 2, 1, 0])


# ---------------------------------------------------------------------------
# check_identifiability: X must be finite
# ---------------------------------------------------------------------------
def identifiable_bags(n_bags=40, size=20, seed=0):
    rng = np.random.RandomState(seed)
    bags = np.repeat(np.arange(n_bags), size)
    props = rng.uniform(0.1, 0.9, n_bags)[bags]
    X = rng.normal(size=(len(bags), 3))
    return bags, props, X


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_identifiability_refuses_non_finite_X(bad):
    bags, props, X = identifiable_bags()
    X[5, 1] = bad
    for form in (X, X.tolist(), sp.csr_matrix(X), X.astype(np.float32)):
        with pytest.raises(ValueError, match="X"):
            check_identifiability(bags, props, form)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    with pytest.raises(ValueError, match="X has NaN or infinite values in column 'b'"):
        check_identifiability(bags, props, frame)


def test_identifiability_accepts_finite_X_and_missing_categories():
    bags, props, X = identifiable_bags()
    report = check_identifiability(bags, props, X)
    assert report.effective_dimension == pytest.approx(3, abs=0.3)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["group"] = pd.Categorical(np.where(np.arange(len(X)) % 7 == 0, None, "x"))
    frame["flag"] = np.arange(len(X)) % 2 == 0
    again = check_identifiability(bags, props, frame)
    assert math.isfinite(again.effective_dimension)
    ints = np.random.RandomState(1).randint(0, 5, (len(bags), 2))
    assert check_identifiability(bags, props, ints).n_features == 2
