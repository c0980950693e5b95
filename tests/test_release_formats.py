"""The release formats of real privacy-protected aggregates: integer noise
(discrete Laplace and discrete Gaussian), clamped counts, a per-person
contribution bound, suppression of small bags, and private bag means for
regression (dp_bag_means, noise_aware_bag_weights).

Noise scales are checked on large samples with tolerances that a wrong
factor of 2 or sqrt(2) in the scale (4 or 2 in the variance) fails by far;
the discrete samplers against their exact mass functions; the privacy of
the discrete mechanisms by their exact privacy loss.
"""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import label_proportions
from sklearn_llp.core import check_bags
from sklearn_llp.methods import NoisyProportions
from sklearn_llp.privacy import (
    dp_bag_means,
    dp_noise_scale,
    dp_proportions,
    noise_aware_bag_weights,
    noise_variance,
    released_rows,
)
from sklearn_llp.privacy._mechanisms import (
    _analytic_gaussian_delta,
    _discrete_gaussian,
    _discrete_laplace,
    _zcdp_delta,
)


def census(n_bags=60, low=5, high=80, n_classes=3, seed=0):
    rng = np.random.RandomState(seed)
    sizes = rng.randint(low, high, n_bags)
    ids = np.repeat(np.arange(n_bags), sizes)
    y = rng.randint(0, n_classes, len(ids))
    return ids, y, sizes


def counts_of(ids, y, classes=(0, 1, 2)):
    return np.rint(
        label_proportions(ids, y, classes=list(classes)).to_numpy()
        * np.bincount(ids)[:, None]
    )


def discrete_laplace_pmf(k, t):
    q = math.exp(-1 / t)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def discrete_gaussian_pmf(k, sigma):
    support = np.arange(-int(40 * sigma) - 2, int(40 * sigma) + 3)
    norm = np.exp(-(support**2) / (2 * sigma**2)).sum()
    return np.exp(-(np.asarray(k) ** 2) / (2 * sigma**2)) / norm


# ---------------------------------------------------------------------------
# The integer samplers
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("t", [0.3, 1.0, 4.0, 50.0])
def test_discrete_laplace_sampler_has_the_right_law(t):
    rng = np.random.RandomState(0)
    draws = _discrete_laplace(rng, t, 200_000)
    assert draws.dtype.kind == "i"
    variance = noise_variance("discrete_laplace", t)
    q = math.exp(-1 / t)
    assert variance == pytest.approx(2 * q / (1 - q) ** 2, rel=1e-12)
    # the sample variance (standard error about sqrt(5 / n) var: fourth
    # moment about 6 var**2), within 3%: 1/4 or 1/2 of it are far off
    assert draws.var() == pytest.approx(variance, rel=0.03)
    assert abs(draws.mean()) < 4 * math.sqrt(variance / draws.size)
    # the mass function, value by value
    for k in range(-3, 4):
        p = discrete_laplace_pmf(k, t)
        assert abs(np.mean(draws == k) - p) < 4.5 * math.sqrt(p * (1 - p) / draws.size)
    # close to the continuous Laplace variance for large t
    if t >= 4:
        assert variance == pytest.approx(2 * t**2, rel=0.02)


@pytest.mark.parametrize("sigma", [0.4, 1.5, 6.0, 40.0])
def test_discrete_gaussian_sampler_has_the_right_law(sigma):
    rng = np.random.RandomState(1)
    draws = _discrete_gaussian(rng, sigma, (400, 500))
    assert draws.shape == (400, 500) and draws.dtype.kind == "i"
    variance = noise_variance("discrete_gaussian", sigma)
    support = np.arange(-int(40 * sigma) - 2, int(40 * sigma) + 3)
    exact = (support**2 * discrete_gaussian_pmf(support, sigma)).sum()
    assert variance == pytest.approx(exact, rel=1e-9)
    assert variance <= sigma**2 * (1 + 1e-12)
    if sigma >= 1:
        assert variance == pytest.approx(sigma**2, rel=1e-6)
    # sample variance, standard error sqrt(2 / n) var: within 2%
    assert draws.var() == pytest.approx(variance, rel=0.02)
    assert abs(draws.mean()) < 4 * math.sqrt(variance / draws.size)
    for k in range(-3, 4):
        p = float(discrete_gaussian_pmf(k, sigma))
        assert abs(np.mean(draws == k) - p) < 4.5 * math.sqrt(p * (1 - p) / draws.size)


def test_noise_variance_of_every_noise_and_errors():
    assert noise_variance("laplace", 3.0) == 18.0
    assert noise_variance("gaussian", 3.0) == 9.0
    assert noise_variance("discrete_laplace", 0.0) == 0.0
    assert noise_variance("discrete_gaussian", 0.0) == 0.0
    np.testing.assert_allclose(
        noise_variance("discrete_gaussian", [0.0, 2.0, 2.0, 30.0]), [0, 4, 4, 900]
    )
    # huge scales: finite, continuous limit
    assert noise_variance("discrete_laplace", 1e9) == pytest.approx(2e18, rel=1e-6)
    for bad in ("poisson", None):
        with pytest.raises(ValueError, match="noise"):
            noise_variance(bad, 1.0)
    for bad in (-1.0, np.nan, np.inf, "a"):
        with pytest.raises(ValueError, match="scale"):
            noise_variance("laplace", bad)


# ---------------------------------------------------------------------------
# dp_proportions with the discrete mechanisms
# ---------------------------------------------------------------------------
def released_noise(epsilon, n_draws, **kwargs):
    ids, y, _ = census()
    counts = counts_of(ids, y)
    noise = []
    for seed in range(n_draws):
        table, noisy = dp_proportions(
            ids, y, epsilon, return_counts=True, random_state=seed, **kwargs
        )
        noise.append(noisy.to_numpy() - counts)
    return np.concatenate(noise).ravel(), table, noisy


@pytest.mark.parametrize("epsilon", [0.3, 1.0])
def test_discrete_laplace_release_has_the_stated_noise(epsilon):
    noise, table, noisy = released_noise(
        epsilon, 120, mechanism="discrete_laplace"
    )  # 21,600 counts
    assert noisy.to_numpy().dtype.kind == "i"  # integer counts
    t = 2 / epsilon  # L1 sensitivity 2
    assert table.attrs["noise"] == "discrete_laplace"
    assert (
        table.attrs["noise_scale"] == t == dp_noise_scale(epsilon, "discrete_laplace")
    )
    variance = noise_variance("discrete_laplace", t)
    assert table.attrs["noise_variance"] == variance
    assert table.attrs["noise_std"] == pytest.approx(math.sqrt(variance))
    assert noise.var() == pytest.approx(variance, rel=0.05)
    assert abs(noise.mean()) < 4 * math.sqrt(variance / noise.size)
    # not the add/remove-one scale 1 / epsilon (variance about 1/4)
    assert noise.var() > 2 * noise_variance("discrete_laplace", 1 / epsilon)


@pytest.mark.parametrize("epsilon, delta", [(0.5, 1e-5), (2.0, 1e-6)])
def test_discrete_gaussian_release_has_the_stated_noise(epsilon, delta):
    noise, table, noisy = released_noise(
        epsilon, 120, mechanism="discrete_gaussian", delta=delta
    )
    assert noisy.to_numpy().dtype.kind == "i"
    sigma = table.attrs["noise_scale"]
    assert sigma == dp_noise_scale(epsilon, "discrete_gaussian", delta=delta)
    # zCDP of the table: rho = Delta_2**2 / (2 sigma**2), Delta_2 = sqrt(2)
    assert table.attrs["rho"] == pytest.approx(2 / (2 * sigma**2))
    # the calibration gives exactly the delta asked through the conversion
    assert _zcdp_delta(table.attrs["rho"], epsilon) == pytest.approx(delta, rel=1e-6)
    # a little more noise than the analytic Gaussian mechanism
    analytic = dp_noise_scale(epsilon, "analytic_gaussian", delta=delta)
    assert analytic < sigma < 1.15 * analytic
    assert noise.var() == pytest.approx(table.attrs["noise_variance"], rel=0.05)
    assert noise.std() == pytest.approx(sigma, rel=0.03)


def test_zcdp_conversion_lies_between_the_exact_and_the_simple_bound():
    """For the continuous Gaussian (rho = 1 / (2 sigma**2) exactly), the
    conversion's delta is at least the exact one (Balle & Wang) and at most
    Bun & Steinke's simple bound exp(-(epsilon - rho)**2 / (4 rho))."""
    for sigma, epsilon in itertools.product([0.5, 1, 2, 5, 20], [0.1, 0.5, 1, 3]):
        rho = 1 / (2 * sigma**2)
        converted = _zcdp_delta(rho, epsilon)
        exact = _analytic_gaussian_delta(sigma, epsilon, 1.0)
        simple = math.exp(-((epsilon - rho) ** 2) / (4 * rho)) if epsilon > rho else 1
        assert exact <= converted * (1 + 1e-9)
        assert converted <= simple * (1 + 1e-9)


def exact_hockey_stick(sigma, shift):
    """delta(epsilon) of two independent discrete Gaussians, the neighbour's
    counts moved by (-shift, +shift): sum over outputs of (P - e^eps P')_+,
    with the privacy loss L = (shift (z2 - z1) ... ) computed exactly."""
    support = np.arange(-int(30 * sigma) - 3 * shift, int(30 * sigma) + 3 * shift + 1)
    p = discrete_gaussian_pmf(support, sigma)
    p_shift_down = discrete_gaussian_pmf(support + shift, sigma)  # coordinate 1
    p_shift_up = discrete_gaussian_pmf(support - shift, sigma)  # coordinate 2
    here = np.outer(p, p)
    there = np.outer(p_shift_down, p_shift_up)
    return lambda epsilon: float(np.maximum(here - math.exp(epsilon) * there, 0).sum())


@pytest.mark.parametrize("contributions", [1, 2])
def test_discrete_gaussian_release_is_within_its_delta_exactly(contributions):
    """The worst neighbours of the table (k rows of one bag moved between
    the same two classes): the exact delta of the released counts at epsilon
    is at most the delta asked, and not absurdly below it."""
    epsilon, delta = 1.0, 1e-3
    sigma = dp_noise_scale(
        epsilon, "discrete_gaussian", delta=delta, max_contributions=contributions
    )
    assert sigma == pytest.approx(
        contributions * dp_noise_scale(epsilon, "discrete_gaussian", delta=delta)
    )
    measured = exact_hockey_stick(sigma, contributions)(epsilon)
    assert delta / 20 < measured <= delta
    # sigma / sqrt(2) (the L2 sensitivity taken as 1) would leak more
    assert exact_hockey_stick(sigma / math.sqrt(2), contributions)(epsilon) > delta


def test_discrete_laplace_privacy_loss_is_at_most_epsilon_and_reaches_it():
    """Bags of 4 people, 2 per class; neighbour: one person relabelled, [2, 2]
    -> [1, 3]. Log mass ratio of the released integer counts."""
    epsilon, n = 0.7, 100_000
    ids = np.repeat(np.arange(n), 4)
    y = np.tile([0, 0, 1, 1], n)
    _, noisy = dp_proportions(
        ids,
        y,
        epsilon,
        mechanism="discrete_laplace",
        return_counts=True,
        random_state=0,
    )
    t = noisy.attrs["noise_scale"]
    released = noisy.to_numpy()
    loss = (np.abs(released - [1, 3]) - np.abs(released - [2, 2])).sum(axis=1) / t
    assert loss.max() <= epsilon * (1 + 1e-9)
    assert loss.min() >= -epsilon * (1 + 1e-9)
    assert np.mean(loss >= epsilon * (1 - 1e-9)) > 0.2  # reached: not better


# ---------------------------------------------------------------------------
# The contribution bound and clamping
# ---------------------------------------------------------------------------
def test_contribution_bound_sensitivity_by_enumeration():
    """A person with 2 rows (in bags [0, 0, 1]: rows 0 and 2, or 0 and 1):
    changing both labels moves the table by at most 4 in L1 and 2 sqrt(2)
    in L2, and these are reached."""
    ids = np.array([0, 0, 0, 1, 1])
    classes = [0, 1, 2]
    l1, l2 = 0.0, 0.0
    for labels in itertools.product(classes, repeat=len(ids)):
        y = np.array(labels)
        counts = counts_of(ids, y, classes)
        for rows in ((0, 1), (0, 3)):  # same bag, different bags
            for new in itertools.product(classes, repeat=2):
                other = y.copy()
                other[list(rows)] = new
                diff = counts_of(ids, other, classes) - counts
                l1 = max(l1, np.abs(diff).sum())
                l2 = max(l2, math.sqrt((diff**2).sum()))
    assert l1 == 4.0 and l2 == pytest.approx(2 * math.sqrt(2))
    ids, y, _ = census(n_bags=5)
    for mechanism, delta, per_row in (
        ("laplace", None, 2.0),
        ("discrete_laplace", None, 2.0),
        ("analytic_gaussian", 1e-5, math.sqrt(2)),
        ("discrete_gaussian", 1e-5, math.sqrt(2)),
    ):
        table = dp_proportions(
            ids, y, 0.5, mechanism=mechanism, delta=delta, max_contributions=3
        )
        assert table.attrs["sensitivity"] == pytest.approx(3 * per_row)
        assert table.attrs["max_contributions"] == 3
        assert table.attrs["noise_scale"] == pytest.approx(
            3 * dp_noise_scale(0.5, mechanism, delta=delta)
        )
        # a sensitivity below k times the per-row one is refused
        with pytest.raises(ValueError, match="sensitivity=.*max_contributions=3"):
            dp_proportions(
                ids,
                y,
                0.5,
                mechanism=mechanism,
                delta=delta,
                max_contributions=3,
                sensitivity=2 * per_row,
            )


def test_contribution_bound_scales_the_measured_noise():
    noise, table, _ = released_noise(1.0, 60, max_contributions=4)
    assert table.attrs["noise_scale"] == 8.0  # L1 2 * 4 / epsilon
    assert np.abs(noise).mean() == pytest.approx(8.0, rel=0.04)  # mean |Laplace| = b


@pytest.mark.parametrize("mechanism", ["laplace", "discrete_laplace"])
def test_clamped_counts_stay_in_their_range(mechanism):
    ids, y, sizes = census(n_bags=40, low=1, high=6)
    table, noisy = dp_proportions(
        ids,
        y,
        0.2,
        mechanism=mechanism,
        clamp=True,
        return_counts=True,
        random_state=0,
    )
    values = noisy.to_numpy()
    assert values.min() >= 0 and np.all(values <= sizes[:, None])
    assert (values == 0).any()  # clamping happened
    assert table.attrs["clamp"] is True
    np.testing.assert_allclose(table.to_numpy().sum(axis=1), 1.0, atol=1e-12)
    _, raw = dp_proportions(
        ids, y, 0.2, mechanism=mechanism, return_counts=True, random_state=0
    )
    # the same noise, then clipped
    np.testing.assert_allclose(values, np.clip(raw.to_numpy(), 0, sizes[:, None]))
    assert raw.to_numpy().min() < 0


# ---------------------------------------------------------------------------
# Suppression of small bags
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mechanism, delta", [("laplace", None), ("discrete_gaussian", 1e-6)]
)
def test_suppression_withholds_exactly_the_small_bags(mechanism, delta):
    ids, y, sizes = census(n_bags=50, low=1, high=40)
    full = dp_proportions(ids, y, 0.5, mechanism=mechanism, delta=delta, random_state=3)
    table = dp_proportions(
        ids, y, 0.5, mechanism=mechanism, delta=delta, min_bag_size=10, random_state=3
    )
    small = np.flatnonzero(sizes < 10)
    assert 0 < len(small) < 50
    assert list(table.index) == list(np.flatnonzero(sizes >= 10))
    assert table.attrs["suppressed"] == small.tolist()
    assert table.attrs["min_bag_size"] == 10
    # the kept bags' release is the same as without suppression
    pd.testing.assert_frame_equal(table, full.loc[table.index], check_like=False)
    assert not table.isna().any().any()
    keep = released_rows(ids, table)
    np.testing.assert_array_equal(keep, sizes[ids] >= 10)
    # min_bag_size=1 withholds nothing
    assert dp_proportions(ids, y, 0.5, min_bag_size=1).attrs["suppressed"] == []


def test_rows_of_suppressed_bags_are_never_given_proportions():
    ids, y, sizes = census(n_bags=30, low=1, high=30, n_classes=2)
    X = np.random.RandomState(0).normal(size=(len(ids), 3)) + y[:, None]
    table = dp_proportions(ids, y, 1.0, min_bag_size=8, random_state=0)
    clf = LLPClassifier(method="noisy", max_epochs=1, random_state=0, verbose=0)
    # every row: refused, naming the bags without proportions
    with pytest.raises(ValueError, match="no row for .* bag id"):
        clf.fit(X, ids, table)
    keep = released_rows(ids, table)
    clf.set_params(
        method__noise=table.attrs["noise"], method__scale=table.attrs["noise_scale"]
    ).fit(X[keep], ids[keep], table)
    assert clf.method_.bag_weights_.shape == (len(table),)
    # unbagged rows are never kept; dicts and Series work too
    assert not released_rows(np.r_[ids, -1], table)[-1]
    series = table.iloc[:, 1]
    np.testing.assert_array_equal(released_rows(ids, series), keep)
    np.testing.assert_array_equal(released_rows(ids, series.to_dict()), keep)
    with pytest.raises(TypeError, match="table"):
        released_rows(ids, table.to_numpy())


def test_composite_bag_ids_are_suppressed_and_selected():
    keys = [("a", 1)] * 5 + [("b", 2)] * 2 + [("c", 3)] * 6
    y = [0, 1] * 6 + [0]
    table = dp_proportions(keys, y, np.inf, min_bag_size=3)
    assert table.attrs["suppressed"] == [("b", 2)]
    keep = released_rows(keys, table)
    np.testing.assert_array_equal(keep, [True] * 5 + [False] * 2 + [True] * 6)


# ---------------------------------------------------------------------------
# NoisyProportions reads the discrete releases
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mechanism, delta", [("discrete_laplace", None), ("discrete_gaussian", 1e-5)]
)
def test_noisy_method_uses_the_discrete_release_noise(mechanism, delta):
    ids, y, _ = census(n_bags=20, n_classes=2)
    table = dp_proportions(ids, y, 0.3, mechanism=mechanism, delta=delta)
    method = NoisyProportions(
        noise=table.attrs["noise"], scale=table.attrs["noise_scale"]
    ).prepare(check_bags(ids, table), None)
    np.testing.assert_allclose(
        method.count_variance_, table.attrs["noise_variance"], rtol=1e-12
    )
    # per-bag scales too
    scales = {b: 0.5 * (b + 1) for b in range(20)}
    method = NoisyProportions(noise=mechanism, scale=scales).prepare(
        check_bags(ids, table), None
    )
    np.testing.assert_allclose(
        method.count_variance_,
        [noise_variance(mechanism, s) for s in scales.values()],
    )


# ---------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------
# ---------------------------------------------------------------------------
# Bag means for regression
# ---------------------------------------------------------------------------
def regression_bags(n_bags=80, seed=0):
    rng = np.random.RandomState(seed)
    sizes = rng.randint(2, 60, n_bags)
    ids = np.repeat(np.arange(n_bags), sizes)
    y = rng.normal(5.0, 3.0, len(ids))
    return ids, y, sizes


def test_bag_means_clip_and_are_exact_without_noise():
    ids, y, sizes = regression_bags()
    table = dp_bag_means(ids, y, np.inf, bounds=(0.0, 8.0))
    clipped = np.clip(y, 0.0, 8.0)
    expected = np.bincount(ids, weights=clipped) / sizes
    np.testing.assert_allclose(table["mean"], expected, rtol=1e-12)
    np.testing.assert_array_equal(table["size"], sizes)
    assert (table["std"] == 0).all() and table.attrs["noise_scale"] == 0
    # clipping mattered: the plain means differ
    assert not np.allclose(expected, np.bincount(ids, weights=y) / sizes)
    assert list(table.columns) == ["mean", "std", "size"]
    assert table.index.name == "bag"


def test_bag_sum_sensitivity_is_the_width_of_the_bounds():
    """Replacing one row's value (any reals, clipped to [lo, hi]) moves one
    bag's clipped sum by at most hi - lo, and by exactly that for values at
    the two bounds; the table's attrs record that sensitivity."""
    lo, hi = -1.0, 2.5
    ids = np.array([0, 0, 1])
    rng = np.random.RandomState(0)
    base = rng.normal(0, 3, 3)
    largest = 0.0
    for value in [-100.0, lo, 0.3, hi, 100.0, np.nextafter(hi, 0)]:
        for row in range(3):
            other = base.copy()
            other[row] = value
            a = dp_bag_means(ids, base, np.inf, bounds=(lo, hi))
            b = dp_bag_means(ids, other, np.inf, bounds=(lo, hi))
            moved = np.abs((a["mean"] - b["mean"]) * a["size"]).to_numpy()
            assert (moved > 1e-12).sum() <= 1  # one bag's sum
            largest = max(largest, moved.max())
    assert largest <= hi - lo + 1e-12
    low_row = dp_bag_means(ids, [lo, 0, 0], np.inf, bounds=(lo, hi))
    high_row = dp_bag_means(ids, [hi, 0, 0], np.inf, bounds=(lo, hi))
    assert (high_row["mean"] - low_row["mean"]).iloc[0] * 2 == pytest.approx(hi - lo)
    for k, mechanism, delta in ((1, "laplace", None), (3, "analytic_gaussian", 1e-5)):
        table = dp_bag_means(
            ids,
            base,
            1.0,
            bounds=(lo, hi),
            mechanism=mechanism,
            delta=delta,
            max_contributions=k,
        )
        assert table.attrs["sensitivity"] == pytest.approx(k * (hi - lo))
        assert table.attrs["noise_scale"] == pytest.approx(
            dp_noise_scale(1.0, mechanism, delta=delta, sensitivity=k * (hi - lo))
        )
        assert table.attrs["neighbours"] == "replace-one value, bag sizes public"


@pytest.mark.parametrize(
    "mechanism, delta, epsilon",
    [("laplace", None, 0.5), ("analytic_gaussian", 1e-5, 1.0), ("gaussian", 1e-4, 0.5)],
)
def test_bag_mean_noise_has_the_stated_scale(mechanism, delta, epsilon):
    ids, y, sizes = regression_bags()
    bounds = (0.0, 10.0)
    exact = dp_bag_means(ids, y, np.inf, bounds=bounds)["mean"].to_numpy()
    standardised = []
    for seed in range(150):  # 12,000 bag means
        table = dp_bag_means(
            ids,
            y,
            epsilon,
            bounds=bounds,
            mechanism=mechanism,
            delta=delta,
            random_state=seed,
        )
        standardised.append((table["mean"].to_numpy() - exact) / table["std"])
    z = np.concatenate(standardised)
    # noise / (its stated sd) has variance 1 (a factor sqrt(2) off: 2 or 1/2)
    assert z.var() == pytest.approx(1.0, rel=0.08)
    assert abs(z.mean()) < 4 / math.sqrt(z.size)
    scale = table.attrs["noise_scale"]
    if mechanism == "laplace":
        assert scale == 10.0 / epsilon  # (hi - lo) / epsilon
        assert np.abs(z).mean() == pytest.approx(1 / math.sqrt(2), rel=0.03)
    np.testing.assert_allclose(
        table["std"], math.sqrt(noise_variance(table.attrs["noise"], scale)) / sizes
    )


def test_bag_means_laplace_privacy_loss_is_at_most_epsilon():
    """Two neighbours: one row's value changed from lo to hi. The log density
    ratio of the released means (times the public sizes: the sums) never
    exceeds epsilon and reaches it."""
    epsilon, lo, hi, n = 0.8, 0.0, 4.0, 50_000
    ids = np.repeat(np.arange(n), 3)
    y = np.tile([lo, 1.0, 2.0], n)
    table = dp_bag_means(ids, y, epsilon, bounds=(lo, hi), random_state=0)
    sums = table["mean"].to_numpy() * 3
    b = table.attrs["noise_scale"]
    loss = (np.abs(sums - (3.0 + hi - lo)) - np.abs(sums - 3.0)) / b
    assert loss.max() <= epsilon * (1 + 1e-9)
    assert np.mean(loss >= epsilon * (1 - 1e-9)) > 0.4  # half the draws


def test_bag_means_suppression_and_clamping():
    ids, y, sizes = regression_bags()
    table = dp_bag_means(
        ids, y, 0.05, bounds=(0.0, 10.0), min_bag_size=20, clamp=True, random_state=0
    )
    assert list(table.index) == list(np.flatnonzero(sizes >= 20))
    assert table.attrs["suppressed"] == np.flatnonzero(sizes < 20).tolist()
    assert table["mean"].between(0.0, 10.0).all()
    assert not table.isna().any().any()
    np.testing.assert_array_equal(released_rows(ids, table), sizes[ids] >= 20)


def test_noise_aware_bag_weights_by_hand():
    ids, y, sizes = regression_bags(n_bags=10)
    table = dp_bag_means(ids, y, 0.5, bounds=(0.0, 10.0), random_state=0)
    noise_var = table.attrs["noise_variance"]  # of a sum: 2 (10 / 0.5)**2
    assert noise_var == 800.0
    weights = noise_aware_bag_weights(table)
    expected = sizes**2 / noise_var
    np.testing.assert_allclose(weights, expected / expected.mean())
    assert weights.index.equals(table.index)
    tau = 2.5
    weights = noise_aware_bag_weights(table, target_variance=tau)
    expected = 1 / (tau / sizes + noise_var / sizes**2)
    np.testing.assert_allclose(weights, expected / expected.mean())
    # per row: w_B / n_B, so a bag's total row weight is proportional to w_B
    rows = noise_aware_bag_weights(table, ids, target_variance=tau)
    assert rows.shape == ids.shape and rows.mean() == pytest.approx(1.0)
    totals = np.bincount(ids, weights=rows)
    np.testing.assert_allclose(totals / totals.sum(), expected / expected.sum())
    assert np.ptp(rows[ids == 3]) == 0  # equal within a bag
    # without noise, proportional to the sizes
    exact = dp_bag_means(ids, y, np.inf, bounds=(0.0, 10.0))
    weights = noise_aware_bag_weights(exact, target_variance=tau)
    np.testing.assert_allclose(weights, sizes / sizes.mean())


def test_noise_aware_bag_weights_errors():
    ids, y, sizes = regression_bags(n_bags=10)
    table = dp_bag_means(ids, y, 0.5, bounds=(0.0, 10.0), min_bag_size=20)
    for bad in (-1.0, np.nan, np.inf, "1", True):
        with pytest.raises(ValueError, match="target_variance"):
            noise_aware_bag_weights(table, target_variance=bad)
    exact = dp_bag_means(ids, y, np.inf, bounds=(0.0, 10.0))
    with pytest.raises(ValueError, match="target_variance=0"):
        noise_aware_bag_weights(exact)
    with pytest.raises(ValueError, match="released"):
        noise_aware_bag_weights(table[["mean"]])
    # the rows of a withheld bag: refused, not given a weight
    with pytest.raises(ValueError, match="bags has .* released_rows"):
        noise_aware_bag_weights(table, ids)
    keep = released_rows(ids, table)
    assert noise_aware_bag_weights(table, ids[keep]).shape == (keep.sum(),)
