"""Tests of the bag generators and the proportion helpers."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from sklearn_llp.bags import (
    FeatureBagGenerator,
    KMeansBagGenerator,
    UniformBagGenerator,
    expand_proportions,
    label_proportions,
)
from sklearn_llp.bags._kmeans import MINIBATCH_THRESHOLD
from sklearn_llp.core import check_bags


def same_partition(a, b):
    """Whether two label vectors split the rows into the same groups."""
    pairs = pd.DataFrame({"a": np.asarray(a), "b": np.asarray(b)}).drop_duplicates()
    return pairs["a"].is_unique and pairs["b"].is_unique


@pytest.fixture
def data():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(103, 3))
    y = rng.choice(["a", "b", "c"], size=103, p=[0.5, 0.3, 0.2])
    return X, y


def test_same_partition_helper_can_fail():
    assert same_partition([0, 0, 1], [5, 5, 2])
    assert not same_partition([0, 0, 1], [5, 2, 2])
    assert not same_partition([0, 1, 1], [5, 5, 5])


# ---------------------------------------------------------------- Uniform
@pytest.mark.parametrize(
    "bag_size, drop_last",
    [(1, True), (10, True), (25, True), (103, True), (10, False), (200, False)],
)
def test_uniform_bag_sizes(data, bag_size, drop_last):
    X, _ = data
    gen = UniformBagGenerator(bag_size, drop_last=drop_last, random_state=0)
    bags = gen.fit_transform(X)
    left = 103 % bag_size
    expected = [bag_size] * (103 // bag_size) + [left] * (left > 0 and not drop_last)
    assert bags.shape == (103,) and bags.dtype == np.int64
    assert gen.bag_sizes_.tolist() == expected and gen.n_bags_ == len(expected)
    np.testing.assert_array_equal(gen.bag_ids_, np.arange(len(expected)))
    assert (bags == -1).sum() == (left if drop_last else 0)
    np.testing.assert_array_equal(gen.sample_mask_, bags >= 0)
    np.testing.assert_array_equal(gen.labels_, bags)


def test_uniform_random_state_images_and_frames(data):
    # (the same draw under one seed, another under another: test_reproducibility)
    X, _ = data
    first = UniformBagGenerator(10, random_state=3).fit_transform(X)
    # shuffled, not consecutive chunks of rows
    assert not np.array_equal(first[:100], np.repeat(np.arange(10), 10))
    assert not hasattr(UniformBagGenerator(4), "transform")
    assert UniformBagGenerator(4).fit(np.zeros((12, 3, 4, 4))).n_bags_ == 3
    frame = pd.DataFrame({"s": list("abcdefghijkl"), "n": range(12)})
    gen = UniformBagGenerator(5, random_state=0).fit(frame)
    assert gen.n_bags_ == 2 and gen.feature_names_in_.tolist() == ["s", "n"]


def test_make_bags_gives_the_proportions_of_every_bag(data):
    X, y = data
    gen = UniformBagGenerator(10, random_state=0)
    bags, props = gen.make_bags(X, y)
    assert gen.classes_.tolist() == ["a", "b", "c"] and props.shape == (103, 3)
    dropped = bags == -1
    assert dropped.sum() == 3 and np.isnan(props[dropped]).all()
    for bag in np.unique(bags[~dropped]):
        rows = bags == bag
        expected = [np.mean(y[rows] == c) for c in ["a", "b", "c"]]
        np.testing.assert_allclose(props[rows], np.tile(expected, (rows.sum(), 1)))
    # the kept rows are valid LLP data; the full arrays are rejected loudly
    assert check_bags(bags[~dropped], props[~dropped], n_samples=100).n_bags == 10
    with pytest.raises(ValueError, match="bags holds the id -1"):
        check_bags(bags, props, n_samples=103)


# ---------------------------------------------------------------- clone & params
@pytest.mark.parametrize(
    "gen",
    [
        UniformBagGenerator(5, drop_last=False, random_state=1),
        KMeansBagGenerator(4, n_components=2, random_state=1),
        FeatureBagGenerator([0, 1], n_bins=3),
    ],
)
def test_clone_and_params(data, gen):
    X, y = data
    params = gen.get_params()
    twin = clone(gen)
    assert twin is not gen and twin.get_params() == params
    np.testing.assert_array_equal(twin.fit_transform(X), gen.fit_transform(X, y))
    assert not hasattr(clone(gen), "labels_")
    # class labels y set classes_ as make_bags does; a fit without drops them
    assert gen.classes_.tolist() == ["a", "b", "c"] and not hasattr(twin, "classes_")
    assert not hasattr(gen.fit(X), "classes_")
    with pytest.raises(ValueError, match="non-integral"):
        gen.fit(X, np.linspace(0, 1, len(y)))


def test_set_params_changes_result(data):
    gen = UniformBagGenerator(10, random_state=0)
    assert gen.set_params(bag_size=20, drop_last=False) is gen
    assert gen.fit(data[0]).n_bags_ == 6
    with pytest.raises(ValueError, match="Invalid parameter"):
        gen.set_params(n_clusters=3)


# ---------------------------------------------------------------- K-means
def test_kmeans_bags(data):
    X, y = data
    gen = KMeansBagGenerator(6, random_state=0)
    bags, props = gen.make_bags(X, y)
    assert bags.dtype == np.int64 and bags.min() >= 0 and bags.max() < 6
    assert gen.n_bags_ == len(np.unique(bags)) <= 6
    assert gen.bag_sizes_.sum() == 103 and len(np.unique(gen.bag_sizes_)) > 1
    assert gen.pca_ is None and type(gen.kmeans_).__name__ == "KMeans"
    assert props.shape == (103, 3) and not np.isnan(props).any()
    np.testing.assert_array_equal(gen.transform(X), bags)


def test_kmeans_groups_similar_rows():
    rng = np.random.RandomState(1)
    centres = np.array([[0, 0], [10, 0], [0, 10]])
    X = np.vstack([c + rng.normal(size=(20 * i, 2)) for i, c in enumerate(centres, 1)])
    bags = KMeansBagGenerator(3, random_state=0).fit_transform(X)
    assert same_partition(bags, np.repeat([0, 1, 2], [20, 40, 60]))
    # more clusters than distinct points: the empty clusters are no bags
    X = np.repeat([[0.0, 0.0], [5.0, 5.0]], 10, axis=0)
    with pytest.warns(Warning):
        gen = KMeansBagGenerator(5, random_state=0).fit(X)
    assert gen.n_bags_ <= 5 and same_partition(gen.labels_, np.repeat([0, 1], 10))


def test_kmeans_pca(data):
    X, _ = data
    gen = KMeansBagGenerator(5, n_components=2, random_state=0).fit(X)
    assert gen.pca_.n_components_ == 2
    assert gen.kmeans_.cluster_centers_.shape == (5, 2)
    frac = KMeansBagGenerator(5, n_components=0.5, random_state=0).fit(X)
    assert 1 <= frac.pca_.n_components_ <= 3


def test_kmeans_minibatch_choice(data, monkeypatch):
    X, _ = data
    gen = KMeansBagGenerator(3, minibatch=True, random_state=0).fit(X)
    assert type(gen.kmeans_).__name__ == "MiniBatchKMeans"
    monkeypatch.setattr("sklearn_llp.bags._kmeans.MINIBATCH_THRESHOLD", X.shape[0] - 1)
    gen = KMeansBagGenerator(3, random_state=0).fit(X)
    assert type(gen.kmeans_).__name__ == "MiniBatchKMeans"
    assert MINIBATCH_THRESHOLD == 10_000


# ---------------------------------------------------------------- Feature
@pytest.fixture
def census():
    rng = np.random.RandomState(0)
    n = 300
    return pd.DataFrame(
        {
            "region": rng.choice(["N", "S", "E", "W"], size=n),
            "age": rng.randint(18, 90, size=n),
            "sex": pd.Categorical(rng.choice(["F", "M"], size=n)),
            "owner": rng.rand(n) < 0.4,
            "income": rng.lognormal(10, 1, size=n),
        }
    )


@pytest.mark.parametrize(
    "columns, n_bins",
    [("region", None), (["region", "sex"], None), (["sex", "owner"], None)]
    + [(["region", "age"], n) for n in (2, 4, 7)],
)
def test_feature_matches_groupby_and_qcut(census, columns, n_bins):
    gen = FeatureBagGenerator(columns, n_bins=n_bins)
    bags = gen.fit_transform(census)
    keys = census[[columns] if isinstance(columns, str) else columns].copy()
    if n_bins is not None:
        keys["age"] = pd.qcut(census["age"], n_bins, duplicates="drop")
    grouped = keys.groupby(list(keys.columns), observed=True)
    np.testing.assert_array_equal(bags, grouped.ngroup().to_numpy())  # same ids
    np.testing.assert_array_equal(gen.bag_sizes_, grouped.size().to_numpy())
    assert gen.n_bags_ == grouped.ngroups
    if n_bins is not None:
        quantiles = np.quantile(census["age"], np.linspace(0, 1, n_bins + 1))
        np.testing.assert_allclose(gen.bin_edges_["age"], quantiles)
        intervals = gen.bag_labels_["age"]
        for bag in range(gen.n_bags_):
            assert all(age in intervals[bag] for age in census["age"][bags == bag])


def test_feature_bag_labels(census):
    gen = FeatureBagGenerator(["region", "sex"]).fit(census)
    labels = gen.bag_labels_
    assert labels.columns.tolist() == ["region", "sex"]
    assert labels.index.tolist() == list(range(gen.n_bags_))
    for bag in range(gen.n_bags_):
        rows = census[gen.labels_ == bag]
        assert (rows["region"] == labels.loc[bag, "region"]).all()
        assert (rows["sex"] == labels.loc[bag, "sex"]).all()
    assert labels.iloc[0].tolist() == ["E", "F"]


def test_feature_ndarray_input(census):
    array = census[["region", "age", "owner"]].to_numpy()  # object array
    bags = FeatureBagGenerator([0, 2]).fit_transform(array)
    assert same_partition(bags, census.groupby(["region", "owner"]).ngroup())
    gen = FeatureBagGenerator(1, n_bins=4).fit(array)  # numbers in an object array
    assert list(gen.bin_edges_) == [1] and gen.n_bags_ == 4
    # integer positions on a DataFrame too, as ColumnTransformer does
    by_position = FeatureBagGenerator([0, 3]).fit_transform(census)
    np.testing.assert_array_equal(by_position, bags)
    X = np.array([[1.0, 5.0], [2.0, 5.0], [1.0, 6.0]])  # arrays are unchanged
    gen = FeatureBagGenerator([0, 1]).fit(X)
    np.testing.assert_array_equal(gen.labels_, [0, 2, 1])
    from_rows = FeatureBagGenerator([0, 1]).fit(X.tolist())
    np.testing.assert_array_equal(gen.labels_, from_rows.labels_)


def test_feature_binning_skips_non_numeric_and_dict(census):
    gen = FeatureBagGenerator(["region", "owner", "income"], n_bins=3).fit(census)
    assert list(gen.bin_edges_) == ["income"]
    assert gen.n_bags_ == 4 * 2 * 3
    gen = FeatureBagGenerator(["age", "income"], n_bins={"income": 2}).fit(census)
    assert list(gen.bin_edges_) == ["income"]
    income = pd.qcut(census["income"], 2)
    assert gen.n_bags_ == census.groupby(["age", income], observed=True).ngroups
    # duplicate quantiles give fewer bins
    X = pd.DataFrame({"x": [0] * 80 + list(range(1, 21))})
    gen = FeatureBagGenerator("x", n_bins=10).fit(X)
    edges = gen.bin_edges_["x"]
    assert len(np.unique(edges)) == len(edges) < 11
    assert gen.n_bags_ == len(edges) - 1


def test_feature_missing_values_form_their_own_group():
    region = ["N", None, "S", "N", np.nan, "S"]
    X = pd.DataFrame({"region": region, "age": [20.0, 30.0, np.nan, 40.0, 50.0, 60.0]})
    gen = FeatureBagGenerator("region")
    bags = gen.fit_transform(X)
    assert bags.tolist() == [0, 2, 1, 0, 2, 1]  # missing last
    assert pd.isna(gen.bag_labels_.loc[2, "region"])
    expected = X.groupby("region", dropna=False).ngroup()
    np.testing.assert_array_equal(bags, expected.to_numpy())
    binned = FeatureBagGenerator("age", n_bins=2).fit(X)
    assert binned.n_bags_ == 3
    assert binned.labels_[2] == 2 and binned.bag_sizes_.tolist() == [3, 2, 1]
    np.testing.assert_array_equal(binned.transform(X), binned.labels_)
    # and from lists of rows
    rows = [[1.5, None], [2.5, "x"], [None, "x"]]
    gen = FeatureBagGenerator([0, 1]).fit(rows)
    frame = FeatureBagGenerator([0, 1]).fit(pd.DataFrame(rows))
    np.testing.assert_array_equal(gen.labels_, frame.labels_)


def test_feature_transform(census):
    gen = FeatureBagGenerator(["region", "sex", "age"], n_bins={"age": 3})
    bags = gen.fit_transform(census)
    np.testing.assert_array_equal(gen.transform(census), bags)
    np.testing.assert_array_equal(gen.transform(census.iloc[::-1]), bags[::-1])
    new = {"region": ["N", "X", "S", "S"], "sex": ["F", "F", None, "M"]}
    new = pd.DataFrame({**new, "age": [200, 30, 30, -5]})
    out = gen.transform(new)
    assert out[1] == -1  # unseen region
    assert out[2] == -1  # no missing sex in fit
    label = gen.bag_labels_.loc[out[0]]
    assert (label["region"], label["sex"]) == ("N", "F")
    assert label["age"].right == census["age"].max()  # clipped to the last bin
    assert gen.bag_labels_.loc[out[3], "age"].left == census["age"].min()
    # an unseen combination of seen values
    seen = pd.DataFrame({"a": ["x", "x", "y"], "b": [1, 2, 1]})
    gen = FeatureBagGenerator(["a", "b"]).fit(seen)
    unseen = gen.transform(pd.DataFrame({"a": ["y", "y"], "b": [1, 2]}))
    assert unseen.tolist() == [2, -1]


def test_feature_make_bags(census):
    y = np.where(census["income"] > census["income"].median(), "high", "low")
    gen = FeatureBagGenerator("region")
    bags, props = gen.make_bags(census, y)
    assert gen.classes_.tolist() == ["high", "low"]
    for bag, region in gen.bag_labels_["region"].items():
        rows = (census["region"] == region).to_numpy()
        np.testing.assert_array_equal(bags[rows], bag)
        np.testing.assert_allclose(props[rows, 0], np.mean(y[rows] == "high"))


def test_a_list_of_mixed_rows_is_read_column_by_column():
    rows = [[18, "N"], [40, "Y"], [25, "N"], [60, "Y"], [33, "N"], [51, "Y"]]
    from_list = FeatureBagGenerator([0, 1], n_bins=2).fit(rows)
    from_frame = FeatureBagGenerator([0, 1], n_bins=2).fit(pd.DataFrame(rows))
    assert from_list.n_bags_ == from_frame.n_bags_ == 2
    np.testing.assert_array_equal(from_list.labels_, from_frame.labels_)
    np.testing.assert_array_equal(from_list.labels_, [0, 1, 0, 1, 0, 1])
    pd.testing.assert_frame_equal(from_list.bag_labels_, from_frame.bag_labels_)
    np.testing.assert_array_equal(from_list.bin_edges_[0], [18, 36.5, 60])
    # transform reads lists the same way (a number, not the string "45")
    new = from_list.transform([[45, "Y"], [20, "N"], [45, "N"]])
    np.testing.assert_array_equal(new, [1, 0, -1])
    # tuples of rows too; numbers are sorted as numbers, not as strings
    gen = FeatureBagGenerator(0).fit([(100, "a"), (9, "a"), (20, "a")])
    np.testing.assert_array_equal(gen.labels_, [2, 0, 1])
    assert list(gen.bag_labels_[0]) == [9, 20, 100]


def test_plain_columns_keep_their_order():
    # categories keep their order; strings and numbers sort as before
    edu = pd.Categorical(["hs", "phd", "ba", "hs"], ["hs", "ba", "phd"])
    gen = FeatureBagGenerator(["edu", "n"])
    gen.fit(pd.DataFrame({"edu": edu, "n": [3, 1, 2, 3]}))
    assert list(gen.bag_labels_["edu"]) == ["hs", "ba", "phd"]
    np.testing.assert_array_equal(gen.labels_, [0, 2, 1, 0])


# ---------------------------------------------------------------- True is not 1
def test_booleans_and_numbers_in_one_column_are_distinct_groups():
    column = pd.Series([True, 1, 0, False, 1.0, True, None], dtype=object)
    gen = FeatureBagGenerator("a").fit(pd.DataFrame({"a": column}))
    assert gen.n_bags_ == 5  # False, 0, True, 1 (1.0 is 1), missing
    assert [type(v) for v in gen.bag_labels_["a"][:4]] == [bool, int, bool, int]
    assert list(gen.bag_labels_["a"][:4]) == [False, 0, True, 1]
    np.testing.assert_array_equal(gen.labels_, [2, 3, 1, 0, 3, 2, 4])
    new = gen.transform(pd.DataFrame({"a": [1, True, False, 0, 2]}))
    np.testing.assert_array_equal(new, [3, 2, 0, 1, -1])
    # the same from a list of rows
    rows = [[v] for v in column]
    np.testing.assert_array_equal(FeatureBagGenerator(0).fit(rows).labels_, gen.labels_)


@pytest.mark.parametrize(
    "fitted, labels, new, expected",
    [
        ([True, False, True], [1, 0, 1], [1, 0, True, 1.0], [-1, -1, 1, -1]),
        ([1, 0, 1], [1, 0, 1], [True, False, 1, np.int64(0)], [-1, -1, 1, 0]),
        # nullable booleans and categoricals of booleans
        (pd.array([True, None, False], dtype="boolean"), [1, 2, 0], [1, 0], [-1, -1]),
        (pd.Categorical([True, False, True]), [1, 0, 1], [1], [-1]),
    ],
)
def test_a_boolean_column_does_not_match_numbers_and_back(
    fitted, labels, new, expected
):
    gen = FeatureBagGenerator("a").fit(pd.DataFrame({"a": fitted}))
    np.testing.assert_array_equal(gen.labels_, labels)
    np.testing.assert_array_equal(gen.transform(pd.DataFrame({"a": new})), expected)


# ---------------------------------------------------------------- proportions
def test_label_proportions_table(data):
    bags = np.array([3, 3, 3, 3, 1, 1, -1, 7])
    y = np.array(["b", "a", "b", "b", "a", "a", "c", "c"])
    table = label_proportions(bags, y)
    assert table.index.tolist() == [1, 3, 7]
    assert table.columns.tolist() == ["a", "b", "c"]
    expected = [[1, 0, 0], [0.25, 0.75, 0], [0, 0, 1]]
    np.testing.assert_allclose(table.to_numpy(), expected)
    ordered = label_proportions(bags, y, classes=["c", "b", "a"])
    assert ordered.columns.tolist() == ["c", "b", "a"]
    np.testing.assert_allclose(ordered.to_numpy(), table.to_numpy()[:, ::-1])
    # only the integer -1 is special
    table = label_proportions(["u", "v", "u", "-1"], [0, 1, 1, 1])
    assert table.index.tolist() == ["-1", "u", "v"]
    np.testing.assert_allclose(table.loc["u"].to_numpy(), [0.5, 0.5])
    # against pandas, and with sample weights as repeated rows
    _, y = data
    bags = np.random.RandomState(5).randint(0, 9, size=len(y))
    counts = pd.crosstab(bags, y)
    expected = (counts.T / counts.sum(axis=1)).T.to_numpy()
    np.testing.assert_allclose(label_proportions(bags, y).to_numpy(), expected)
    weights = np.random.RandomState(6).randint(1, 4, len(y))
    rows = np.repeat(np.arange(len(y)), weights)
    pd.testing.assert_frame_equal(
        label_proportions(bags, y, sample_weight=weights),
        label_proportions(bags[rows], y[rows]),
    )


def test_expand_proportions_round_trip(data):
    X, y = data
    bags = np.random.RandomState(1).randint(0, 12, size=len(y))
    bags[:4] = -1
    table = label_proportions(bags, y)
    props = expand_proportions(table, bags)
    assert props.shape == (len(y), 3) and np.isnan(props[:4]).all()
    np.testing.assert_allclose(props[4:].sum(axis=1), 1.0)
    # collapsing the expanded rows gives the table back
    back = pd.DataFrame(props[4:], columns=table.columns).groupby(bags[4:]).first()
    pd.testing.assert_frame_equal(back, table, check_names=False)
    # and it equals make_bags' output for the same bags
    gen_bags, generated = UniformBagGenerator(10, random_state=0).make_bags(X, y)
    expanded = expand_proportions(label_proportions(gen_bags, y), gen_bags)
    np.testing.assert_allclose(expanded, generated)
    # other table forms
    bags = ["x", "y", "x"]
    series = pd.Series({"x": 0.25, "y": 1.0})
    expected = [[0.75, 0.25], [0, 1], [0.75, 0.25]]
    np.testing.assert_allclose(expand_proportions(series, bags), expected)
    as_dict = {"x": [0.1, 0.9], "y": [0.5, 0.5], "unused": [1, 0]}
    expected = [[0.1, 0.9], [0.5, 0.5], [0.1, 0.9]]
    np.testing.assert_allclose(expand_proportions(as_dict, bags), expected)
