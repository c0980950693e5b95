"""check_identifiability: numbers, verdicts, invariances and input errors."""

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency

from sklearn_llp.bags import (
    FeatureBagGenerator,
    IdentifiabilityReport,
    check_identifiability,
    label_proportions,
    warn_if_unidentifiable,
)
from sklearn_llp.bags._identifiability import DEFAULT_DIMENSION, _effective_dimension
from sklearn_llp.core import check_bags
from sklearn_llp.datasets import load_adult
from sklearn_llp.exceptions import IdentifiabilityWarning

NUMBERS = (
    "n_samples n_bags n_classes classes prior proportion_std relative_spread "
    "canonical_correlations rank condition_number effective_n_bags "
    "informative_n_bags effective_labels effective_dimension n_features"
).split()


def assert_same_report(a, b, skip=()):
    for name in NUMBERS:
        if name in skip:
            continue
        left, right = getattr(a, name), getattr(b, name)
        if isinstance(left, tuple) and left and isinstance(left[0], float):
            np.testing.assert_allclose(left, right, rtol=1e-10, atol=1e-12)
        elif isinstance(left, float):
            assert left == pytest.approx(right, rel=1e-10, abs=1e-12), name
        else:
            assert left == right, name
    assert a.problems == b.problems or skip


def six_groups(n_per_group=5000, seed=0, n_features=20):
    """Six large groups with positive rates of 3-6 %."""
    rates = np.array([0.03, 0.035, 0.04, 0.05, 0.055, 0.06])
    bags = np.repeat(np.arange(6), n_per_group)
    X = np.random.RandomState(seed).normal(size=(len(bags), n_features))
    return bags, rates[bags], X


# --- numbers against hand computations
def test_binary_numbers_by_hand():
    # bag 0: 2 rows at [0.5, 0.5]; bag 1: 4 rows at [0.75, 0.25]
    bags = [0, 0, 1, 1, 1, 1]
    props = [[0.5, 0.5]] * 2 + [[0.75, 0.25]] * 4
    report = check_identifiability(None, bags, props)
    assert (report.n_samples, report.n_bags, report.n_classes) == (6, 2, 2)
    assert report.classes == (0, 1)
    # shares 1/3, 2/3: prior = (2/3, 1/3)
    np.testing.assert_allclose(report.prior, [2 / 3, 1 / 3])
    # Var = 1/3 (1/6)^2 + 2/3 (1/12)^2 = 1/72
    np.testing.assert_allclose(report.proportion_std, [72**-0.5] * 2)
    np.testing.assert_allclose(
        report.relative_spread, [72**-0.5 / (2 / 3), 72**-0.5 / (1 / 3)]
    )
    # rho^2 = Var / (p (1 - p)) = (1/72) / (2/9) = 1/16
    np.testing.assert_allclose(report.canonical_correlations, [0.25])
    assert report.between_bag_share == pytest.approx(1 / 16)
    assert report.rank == 1 and report.condition_number == pytest.approx(1.0)
    # sizes 2, 4: 36 / 20
    assert report.effective_n_bags == pytest.approx(1.8)
    # contributions 1/3 (1/6)^2 : 2/3 (1/12)^2 = 2 : 1 -> 9 / 5
    assert report.informative_n_bags == pytest.approx(1.8)
    # chi-square per degree of freedom: 6 rows x 1/16
    assert report.effective_labels == pytest.approx(6 / 16)
    assert report.n_features is None and report.effective_dimension is None


def test_multiclass_chi_square_matches_scipy():
    rng = np.random.RandomState(0)
    counts = rng.randint(1, 30, size=(7, 4))
    bags = np.repeat(np.arange(7), counts.sum(axis=1))
    props = counts / counts.sum(axis=1, keepdims=True)
    report = check_identifiability(None, bags, props[bags])
    chi2 = chi2_contingency(counts, correction=False)[0]
    n = counts.sum()
    rho2 = np.square(report.canonical_correlations)
    assert rho2.sum() == pytest.approx(chi2 / n)
    assert report.effective_labels == pytest.approx(chi2 / 3)
    assert report.rank == 3
    cc = report.canonical_correlations
    assert report.condition_number == pytest.approx(cc[0] / cc[-1])
    assert list(cc) == sorted(cc, reverse=True)
    # weighted per-class standard deviation
    share = counts.sum(axis=1) / n
    prior = share @ props
    np.testing.assert_allclose(report.prior, prior)
    std = np.sqrt(share @ (props - prior) ** 2)
    np.testing.assert_allclose(report.proportion_std, std)
    # pure bags: classes 0 and 2 in one bag each, class 1 in two
    bags = np.repeat(np.arange(4), [3, 5, 2, 6])
    y = np.array([0, 1, 2, 1]).repeat([3, 5, 2, 6])
    report = check_identifiability(None, bags, label_proportions(bags, y))
    np.testing.assert_allclose(report.canonical_correlations, [1.0, 1.0])
    assert report.effective_labels == pytest.approx(16)  # = n_samples


def test_effective_dimension_by_hand():
    rng = np.random.RandomState(0)
    z = rng.normal(size=(500, 1))
    # three copies of one column, scaled differently: one direction
    assert _effective_dimension(z * [1.0, 10.0, -3.0], 500) == pytest.approx(1.0)
    # independent standardised columns: their number (up to sampling noise)
    iso = rng.normal(size=(2000, 5)) * [1, 100, 0.01, 3, 7]
    assert _effective_dimension(iso, 2000) == pytest.approx(5, rel=0.02)
    # a 0/1 column keeps its variance q (1 - q) = 0.09; constant columns drop
    values = [rng.normal(size=1000), (np.arange(1000) % 10 == 0), np.ones(1000)]
    values = np.column_stack(values)
    eig = np.array([1.0, 0.09])
    expected = eig.sum() ** 2 / (eig**2).sum()
    assert _effective_dimension(values, 1000) == pytest.approx(expected, rel=0.05)


def test_dataframe_features_count_levels_and_missing_categories():
    colour = pd.Categorical(["r", "g", "b", "r", "g", None])
    flags = [True, False] * 3
    X = pd.DataFrame({"a": np.arange(1.0, 7.0), "colour": colour, "flag": flags})
    bags = [0, 0, 1, 1, 2, 2]
    report = check_identifiability(X, bags, [0.1, 0.1, 0.5, 0.5, 0.9, 0.9])
    assert report.n_features == 1 + 3 + 2  # a missing category: no level
    assert 1 < report.effective_dimension < np.inf
    ints = np.random.RandomState(1).randint(0, 5, (6, 2))
    assert check_identifiability(ints, bags, [0.1] * 2 + [0.5] * 4).n_features == 2


# --- verdicts
def test_fires_on_six_groups_with_near_equal_rates():
    bags, props, X = six_groups()
    report = check_identifiability(X, bags, props)
    assert not report.ok
    assert report.between_bag_share < 0.005
    assert "6 bags carry information" in report.problems[0]
    assert "seeds" in report.problems[0]
    # the same verdict without X (assumed dimension)
    no_x = check_identifiability(None, bags, props)
    assert not no_x.ok and "assumed without X" in no_x.problems[0]
    for old_order in [(bags, props, X), (bags, props), (list(bags), props)]:
        with pytest.raises(TypeError, match=r"takes \(X, bags, props\), the order"):
            check_identifiability(*old_order)  # bags first: the earlier order
    with pytest.warns(IdentifiabilityWarning, match="seeds") as record:
        assert warn_if_unidentifiable(report) is True
    # two classes, full rank: the measured alternatives are named
    assert "method='easyllp'" in str(record[0].message)
    assert "MeanMapClassifier" in str(record[0].message)


def test_quiet_on_random_bags_of_16_rare_positives():
    rng = np.random.RandomState(1)
    X = rng.normal(size=(30000, 20))
    y = (rng.uniform(size=30000) < 0.05).astype(int)
    bags = rng.permutation(30000) // 16
    report = check_identifiability(X, bags, label_proportions(bags, y))
    assert report.ok, str(report)
    assert report.effective_labels == pytest.approx(report.n_bags, rel=0.15)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_if_unidentifiable(report) is False


def test_digits_random_bags_of_16(digits_bags):
    """Digits in random bags of 16 (10 classes): LLP recovers ~97 % accuracy
    there (README), and the report must stay quiet; in bags of 256 there are
    fewer bags (5) than classes."""
    X, bags, props, y, _, _ = digits_bags
    report = check_identifiability(X, bags, props)
    assert report.ok, str(report)
    assert report.n_classes == 10 and report.rank == 9
    # random bags of 16: proportions vary a lot (relative spread ~0.8)
    assert min(report.relative_spread) > 0.5
    big = np.random.RandomState(0).permutation(len(y)) // 256
    report = check_identifiability(X, big, label_proportions(big, y))
    assert not report.ok
    assert "5 bag(s) for 10 classes" in report.problems[0]


def test_adult_census_groups_are_quiet_and_random_halves_warn():
    X, y = load_adult(return_X_y=True)
    X, y = X.iloc[:20000], y.iloc[:20000]
    groups = FeatureBagGenerator(["age", "sex", "education"], n_bins={"age": 6})
    bags, props = groups.make_bags(X, y)
    report = check_identifiability(X, bags, props)
    assert report.ok, str(report)
    assert 8 < report.effective_dimension < 20
    # two groups by sex: few bags, but very different rates -> a note only
    by_sex = FeatureBagGenerator("sex").fit_transform(X)
    report = check_identifiability(X, by_sex, label_proportions(by_sex, y))
    assert report.ok and report.notes
    # two random halves: rates equal up to sampling noise
    halves = np.random.RandomState(0).permutation(len(y)) % 2
    report = check_identifiability(X, halves, label_proportions(halves, y))
    assert not report.ok


def _three_bags_of(rows):
    bags = np.repeat(np.arange(len(rows)), 4)
    return bags, np.asarray(rows, dtype=float)[bags]


@pytest.mark.parametrize(
    "bags, props, rank, problem",
    [
        # identical proportions: no contrast varies
        (np.repeat(np.arange(300), 100), np.full(30000, 0.05), 0, "only 0 of the 1"),
        ([0, 0, 1, 1], [[0.2, 0.3, 0.5]] * 2 + [[0.5, 0.5, 0]] * 2, 1, "2 bag(s)"),
        # classes 1 and 2 always equal: one contrast never varies
        (*_three_bags_of([[0.2, 0.4, 0.4], [0.5, 0.25, 0.25], [0.8, 0.1, 0.1]]), 1)
        + ("only 1 of the 2 class contrast",),
        # an absent class
        (*_three_bags_of([[0.2, 0.8, 0], [0.4, 0.6, 0], [0.9, 0.1, 0]]), 1)
        + ("only 1 of the 2 class contrast",),
    ],
)
def test_rank_deficient_proportions_warn(bags, props, rank, problem):
    report = check_identifiability(None, bags, props)
    assert not report.ok and problem in report.problems[0]
    assert report.rank == rank and math.isinf(report.condition_number)
    if rank == 0:
        assert report.effective_labels == 0 and report.informative_n_bags == 0
    if 0 in report.prior:
        assert np.isnan(report.relative_spread[report.prior.index(0)])
    # the remedy was measured on two classes of full rank only: no method
    # fixes a rank deficit
    with pytest.warns(IdentifiabilityWarning) as record:
        warn_if_unidentifiable(report)
    assert "easyllp" not in str(record[0].message)


def test_nearly_identical_proportions_warn_on_information():
    # 300 bags of 100 rows, 5 or 6 positives each: many bags, little signal
    bags = np.repeat(np.arange(300), 100)
    props = np.where(np.arange(300) % 3 == 0, 0.06, 0.05)[bags]
    X = np.random.RandomState(0).normal(size=(len(bags), 20))
    report = check_identifiability(X, bags, props)
    assert report.informative_n_bags > report.effective_dimension
    assert not report.ok
    assert "labelled rows per class contrast" in report.problems[-1]


def test_report_is_frozen_and_readable():
    bags, props, X = six_groups(n_per_group=200)
    report = check_identifiability(X, bags, props)
    assert isinstance(report, IdentifiabilityReport)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.n_bags = 3
    text = str(report)
    assert text.startswith(f"Identifiability report: {len(report.problems)} problem(s)")
    assert "canonical correlations" in text and "problem: " in text
    start = f"IdentifiabilityReport({len(report.problems)} problem(s): n_bags=6"
    assert repr(report).startswith(start)
    assert DEFAULT_DIMENSION == 10


# --- invariances
def small_problem(seed=0, n=600):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5))
    y = rng.randint(0, 3, n)
    bags = rng.randint(0, 40, n)
    return X, y, bags


def test_invariant_to_ids_row_order_props_form_and_equal_weights():
    X, y, bags = small_problem()
    table = label_proportions(bags, y)
    base = check_identifiability(X, bags, table)
    aligned = table.to_numpy()[np.searchsorted(table.index, bags)]
    relabel = np.random.RandomState(1).permutation(40)
    names = np.array([f"bag-{k:03d}" for k in relabel])[bags]
    order = np.random.RandomState(2).permutation(len(y))
    for other_bags, props, other_X, weights in [
        (bags, aligned, X, None),
        (bags, dict(zip(table.index, table.to_numpy())), X, None),
        (check_bags(bags, table), None, X, None),
        (names, label_proportions(names, y), X, None),
        (bags[order], aligned[order], X[order], None),  # all rows: the dimension
        (bags, table, X, np.full(len(y), 3.0)),  # equal weights are no weights
    ]:
        other = check_identifiability(other_X, other_bags, props, sample_weight=weights)
        assert_same_report(base, other)
    # binary: a positive fraction, a per-bag Series and a two-column table
    tb = label_proportions(bags, (y == 2).astype(int))
    first = check_identifiability(X, bags, tb)
    assert_same_report(first, check_identifiability(X, bags, tb[1]))
    assert_same_report(first, check_identifiability(X, bags, tb[1].to_numpy()[bags]))


def test_overlapping_bags():
    rows = [np.arange(0, 60), np.arange(40, 100), np.arange(90, 150)]
    props = [[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]]
    X = np.random.RandomState(0).normal(size=(150, 3))
    report = check_identifiability(X, rows, props)
    assert report.n_samples == 150 and report.n_bags == 3
    pairs = 180  # (bag, row) pairs
    assert report.effective_labels == pytest.approx(pairs * report.between_bag_share)


# --- sample_weight
def test_integer_weights_act_as_copies_except_kish():
    X, y, bags = small_problem(n=300)
    weights = np.random.RandomState(3).randint(1, 4, len(y))
    table = label_proportions(bags, y, sample_weight=weights)
    weighted = check_identifiability(X, bags, table, sample_weight=weights)
    copies = np.repeat(np.arange(len(y)), weights)
    copied = check_identifiability(X[copies], bags[copies], table)
    skip = ("n_samples", "effective_labels", "effective_dimension", "problems")
    assert_same_report(weighted, copied, skip=skip)
    kish = weights.sum() ** 2 / np.square(weights).sum()
    rho2 = np.square(weighted.canonical_correlations)
    assert weighted.effective_labels == pytest.approx(kish * rho2.sum() / 2)
    assert copied.effective_labels == pytest.approx(weights.sum() * rho2.sum() / 2)
    weights = np.where(bags == bags[0], 0.0, 1.0)  # a bag of weight 0 is dropped
    dropped = check_identifiability(X, bags, table, sample_weight=weights)
    assert dropped.n_bags == weighted.n_bags - 1
