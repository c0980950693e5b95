"""The privacy accounting of dp_proportions, checked empirically.

Neighbouring data sets have the same people in the same bags (so the same,
public, bag sizes) and differ in one person's label. That moves one unit from
one count of a bag to another: L1 sensitivity 2, L2 sensitivity sqrt(2). The
tests below check

- the sensitivity arithmetic, by enumerating every one-label change of small
  data sets;
- that the noise actually drawn has the documented scale for the given
  epsilon (and delta): Laplace ``b = 2 / epsilon``, Gaussian ``sigma =
  sqrt(2) sqrt(2 ln(1.25 / delta)) / epsilon`` or the analytic sigma for L2
  sensitivity sqrt(2), within sampling error;
- the privacy loss of the release itself: between neighbours, the log
  density ratio of the released noisy counts never exceeds epsilon for
  Laplace and reaches it (the release is epsilon-DP and not better), and
  the Gaussian release's delta at epsilon is the delta asked for (analytic)
  or below it (classical bound);
- that NoisyProportions reads the same noise scale from the release.
"""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr

from sklearn_llp.bags import label_proportions
from sklearn_llp.privacy import dp_noise_scale, dp_proportions
from sklearn_llp.privacy._mechanisms import REPLACE_ONE_SENSITIVITY
from sklearn_llp.privacy._release import NEIGHBOURS


def table_of_counts(ids, y, classes):
    return (
        label_proportions(ids, y, classes=classes).to_numpy()
        * np.bincount(ids)[:, None]
    )


# ---------------------------------------------------------------------------
# The sensitivity arithmetic
# ---------------------------------------------------------------------------
def test_replace_one_sensitivity_by_enumeration():
    """Every data set of 5 people in bags [0, 0, 0, 1, 1] with labels in 3
    classes, and every change of one person's label: the count tables differ
    by exactly 2 in L1 and sqrt(2) in L2, never more (the bound is tight)."""
    ids = np.array([0, 0, 0, 1, 1])
    classes = [0, 1, 2]
    l1, l2 = set(), set()
    for labels in itertools.product(classes, repeat=len(ids)):
        y = np.array(labels)
        counts = table_of_counts(ids, y, classes)
        for person, label in itertools.product(range(len(ids)), classes):
            if label == y[person]:
                continue
            other = y.copy()
            other[person] = label
            diff = table_of_counts(ids, other, classes) - counts
            l1.add(round(float(np.abs(diff).sum()), 12))
            l2.add(round(float(np.sqrt((diff**2).sum())), 12))
    assert l1 == {2.0} and l2 == {round(math.sqrt(2), 12)}
    assert REPLACE_ONE_SENSITIVITY == {"laplace": 2.0, "gaussian": math.sqrt(2)}


def test_default_scales_are_the_replace_one_calibration():
    for epsilon in (0.1, 0.5, 1.0, 4.0):
        assert dp_noise_scale(epsilon) == 2.0 / epsilon
        assert dp_noise_scale(epsilon, sensitivity=1.0) == 1.0 / epsilon
    for epsilon, delta in ((0.1, 1e-6), (0.5, 1e-5), (0.9, 1e-3)):
        assert dp_noise_scale(epsilon, "gaussian", delta=delta) == pytest.approx(
            math.sqrt(2) * math.sqrt(2 * math.log(1.25 / delta)) / epsilon,
            rel=1e-14,
        )
    for epsilon in (0.1, 1.0, 5.0):
        sigma = dp_noise_scale(epsilon, "analytic_gaussian", delta=1e-5)
        # Balle & Wang (2018), Theorem 8, with L2 sensitivity sqrt(2)
        a = math.sqrt(2) / (2 * sigma)
        b = epsilon * sigma / math.sqrt(2)
        assert ndtr(a - b) - math.exp(epsilon) * ndtr(-a - b) == pytest.approx(
            1e-5, rel=1e-6
        )
        # the same as the sensitivity-1 sigma scaled by sqrt(2)
        unit = dp_noise_scale(epsilon, "analytic_gaussian", delta=1e-5, sensitivity=1)
        assert sigma == pytest.approx(math.sqrt(2) * unit, rel=1e-9)


def test_release_records_the_relation_and_refuses_a_smaller_sensitivity():
    ids = np.repeat(np.arange(4), 10)
    y = np.tile([0, 1], 20)
    table = dp_proportions(ids, y, 0.5, random_state=0)
    assert table.attrs["sensitivity"] == 2.0
    assert table.attrs["neighbours"] == NEIGHBOURS
    assert table.attrs["noise_scale"] == dp_noise_scale(0.5) == 4.0
    assert table.attrs["noise_variance"] == 2 * 4.0**2
    gauss = dp_proportions(ids, y, 0.5, mechanism="gaussian", delta=1e-5)
    assert gauss.attrs["sensitivity"] == math.sqrt(2)
    assert gauss.attrs["noise_scale"] == dp_noise_scale(0.5, "gaussian", delta=1e-5)
    # a larger sensitivity (more people protected at once): proportionally more
    more = dp_proportions(ids, y, 0.5, sensitivity=4.0)
    assert more.attrs["noise_scale"] == 8.0
    # sensitivity=1, the add/remove-one value, does not hold with public sizes
    for mechanism, delta, value in (
        ("laplace", None, 1.0),
        ("laplace", None, 1.9),
        ("gaussian", 1e-5, 1.0),
        ("analytic_gaussian", 1e-5, 1.4),
    ):
        with pytest.raises(
            ValueError, match="sensitivity=.*replace|sensitivity=.*label"
        ):
            dp_proportions(
                ids, y, 0.5, mechanism=mechanism, delta=delta, sensitivity=value
            )
    for bad in (0, -1.0, np.nan, np.inf, True, "2"):
        with pytest.raises(ValueError, match="sensitivity"):
            dp_proportions(ids, y, 0.5, sensitivity=bad)
        with pytest.raises(ValueError, match="sensitivity"):
            dp_noise_scale(0.5, sensitivity=bad)


# ---------------------------------------------------------------------------
# The noise drawn has the documented scale
# ---------------------------------------------------------------------------
def released_noise(epsilon, n_draws, **kwargs):
    """Noise on every count of 60 bags x 3 classes over ``n_draws`` releases."""
    rng = np.random.RandomState(0)
    sizes = rng.randint(5, 80, 60)
    ids = np.repeat(np.arange(60), sizes)
    y = rng.randint(0, 3, len(ids))
    counts = table_of_counts(ids, y, [0, 1, 2])
    noise = []
    for seed in range(n_draws):
        table, noisy = dp_proportions(
            ids, y, epsilon, return_counts=True, random_state=seed, **kwargs
        )
        noise.append(noisy.to_numpy() - counts)
    return np.concatenate(noise).ravel(), table


@pytest.mark.parametrize("epsilon", [0.2, 1.0, 3.0])
def test_laplace_noise_scale_matches_two_over_epsilon(epsilon):
    noise, table = released_noise(epsilon, 150)  # 27,000 counts
    n = noise.size
    b = 2.0 / epsilon
    assert table.attrs["noise_scale"] == b
    # the maximum-likelihood Laplace scale, mean |noise|: standard error b/sqrt(n)
    measured = np.abs(noise).mean()
    assert abs(measured - b) < 4 * b / math.sqrt(n)
    # the standard deviation sqrt(2) b: the variance's standard error is
    # sqrt(20 / n) b^2 (fourth moment of Laplace 24 b^4)
    assert abs(noise.var() - 2 * b**2) < 4 * math.sqrt(20 / n) * b**2
    assert abs(noise.mean()) < 4 * math.sqrt(2) * b / math.sqrt(n)
    # and not the old (add/remove-one) scale 1 / epsilon: 100 standard errors off
    assert abs(measured - 1 / epsilon) > 50 * b / math.sqrt(n)


@pytest.mark.parametrize(
    "mechanism, epsilon, delta",
    [
        ("gaussian", 0.5, 1e-5),
        ("gaussian", 0.9, 1e-3),
        ("analytic_gaussian", 0.5, 1e-5),
        ("analytic_gaussian", 2.0, 1e-6),
    ],
)
def test_gaussian_noise_sd_matches_the_calibration(mechanism, epsilon, delta):
    noise, table = released_noise(epsilon, 150, mechanism=mechanism, delta=delta)
    n = noise.size
    if mechanism == "gaussian":
        sigma = math.sqrt(2) * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
        assert table.attrs["noise_scale"] == pytest.approx(sigma, rel=1e-14)
    else:
        sigma = table.attrs["noise_scale"]
        assert sigma == dp_noise_scale(epsilon, mechanism, delta=delta)
    assert table.attrs["noise_variance"] == pytest.approx(sigma**2)
    # the sample sd has standard error sigma / sqrt(2 n)
    assert abs(noise.std() - sigma) < 4 * sigma / math.sqrt(2 * n)
    assert abs(noise.mean()) < 4 * sigma / math.sqrt(n)


# ---------------------------------------------------------------------------
# The privacy loss of the release
# ---------------------------------------------------------------------------
def neighbour_pairs(n_bags):
    """``n_bags`` bags of 4 people, 2 of each class. Bag ``k``'s neighbour
    (for the privacy loss of bag k's counts) has one person of class 0 in it
    relabelled 1: counts [2, 2] become [1, 3]. The other bags' noise is the
    same under both and cancels from the loss, so every bag gives one
    independent draw of the privacy loss of its neighbouring pair."""
    ids = np.repeat(np.arange(n_bags), 4)
    y = np.tile([0, 0, 1, 1], n_bags)
    return ids, y, np.array([2.0, 2.0]), np.array([1.0, 3.0])


@pytest.mark.parametrize("epsilon", [0.3, 1.0])
def test_laplace_privacy_loss_is_at_most_epsilon_and_reaches_it(epsilon):
    ids, y, counts, other = neighbour_pairs(100_000)
    _, noisy = dp_proportions(ids, y, epsilon, return_counts=True, random_state=1)
    b = noisy.attrs["noise_scale"]
    released = noisy.to_numpy()
    # log p(release | D) - log p(release | D')
    loss = (np.abs(released - other) - np.abs(released - counts)).sum(axis=1) / b
    assert loss.max() <= epsilon * (1 + 1e-9)
    assert loss.min() >= -epsilon * (1 + 1e-9)
    # it reaches epsilon when both moved counts' noise points away from D'
    # (probability 1/4): the release is epsilon-DP, not better and not worse
    at_epsilon = np.mean(loss >= epsilon * (1 - 1e-9))
    assert abs(at_epsilon - 0.25) < 4 * math.sqrt(0.25 * 0.75 / len(loss))


def gaussian_delta_terms(n_pairs, epsilon, mechanism, delta, seed):
    """Per-pair terms ``(1 - exp(epsilon - L))_+`` whose mean is the delta of
    a Gaussian release at ``epsilon``, and the privacy losses ``L``."""
    ids, y, counts, other = neighbour_pairs(n_pairs)
    _, noisy = dp_proportions(
        ids,
        y,
        epsilon,
        mechanism=mechanism,
        delta=delta,
        return_counts=True,
        random_state=seed,
    )
    sigma = noisy.attrs["noise_scale"]
    released = noisy.to_numpy()
    loss = (
        ((released - other) ** 2).sum(axis=1) - ((released - counts) ** 2).sum(axis=1)
    ) / (2 * sigma**2)
    return np.maximum(1 - np.exp(epsilon - loss), 0.0), loss


@pytest.mark.parametrize(
    "mechanism, epsilon, delta",
    [("analytic_gaussian", 1.0, 0.01), ("analytic_gaussian", 0.3, 0.02)],
)
def test_gaussian_release_has_the_delta_it_is_given(mechanism, epsilon, delta):
    """delta(epsilon) = E_D[(1 - exp(epsilon - L))_+] over the privacy loss
    L of the release (the hockey-stick divergence of D from D')."""
    terms, loss = gaussian_delta_terms(400_000, epsilon, mechanism, delta, seed=2)
    measured = terms.mean()
    se = terms.std() / math.sqrt(len(terms))
    assert abs(measured - delta) < 4.5 * se
    # the old calibration (sensitivity 1) would have leaked far more
    old = np.maximum(1 - np.exp(epsilon - 2 * loss), 0.0)  # sigma / sqrt(2)
    assert old.mean() > 3 * delta


def test_classical_gaussian_release_is_within_its_delta():
    epsilon, delta = 0.5, 0.05
    terms, _ = gaussian_delta_terms(200_000, epsilon, "gaussian", delta, seed=3)
    assert terms.mean() + 4 * terms.std() / math.sqrt(len(terms)) < delta


# ---------------------------------------------------------------------------
# Overflow and the simplex for huge values
# ---------------------------------------------------------------------------
def test_small_but_representable_epsilon_gives_a_valid_release():
    ids = np.repeat(np.arange(50), 5)
    y = np.tile([0, 1, 1, 0, 1], 50)
    for epsilon in (1e-100, 1e-150):
        table, noisy = dp_proportions(
            ids, y, epsilon, return_counts=True, random_state=0
        )
        assert np.isfinite(table.attrs["noise_variance"])
        values = table.to_numpy()
        assert np.all(values >= 0)
        np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-12)
    # the analytic Gaussian mechanism stays finite as epsilon -> 0: its sigma
    # tends to the (0, delta)-DP one
    sigma = dp_noise_scale(1e-300, "analytic_gaussian", delta=1e-5)
    assert math.isfinite(sigma) and sigma > 1e4
    table = dp_proportions(
        ids, y, 1e-300, mechanism="analytic_gaussian", delta=1e-5, random_state=0
    )
    np.testing.assert_allclose(table.to_numpy().sum(axis=1), 1.0, atol=1e-12)


def test_projection_of_huge_values_stays_on_the_simplex():
    from sklearn_llp.privacy import project_to_simplex

    big = np.finfo(np.float64).max
    rows = np.array(
        [
            [1e300, 1e300, -1e300],
            [big, -big, 0.0],
            [big, big, big],
            [-big, -big, -big],
            [1e300, 1e300 * (1 + 1e-15), 3.0],
            [-1e308, 5.0, 5.0],
            [1e-300, 0.0, -1e-300],
        ]
    )
    projected = project_to_simplex(rows)
    assert np.all(np.isfinite(projected)) and np.all(projected >= 0)
    np.testing.assert_allclose(projected.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(projected[1], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(projected[2], [1 / 3] * 3)
    np.testing.assert_allclose(projected[3], [1 / 3] * 3)
    np.testing.assert_allclose(projected[5], [0.0, 0.5, 0.5])
    rng = np.random.RandomState(0)
    for scale in (1e100, 1e200, 1e300, 1e307):
        rows = rng.normal(size=(500, 4)) * scale
        projected = project_to_simplex(rows)
        assert np.all(projected >= 0)
        np.testing.assert_allclose(projected.sum(axis=1), 1.0, atol=1e-12)
        # a share of 1 on every row's largest entry (the others are far below)
        np.testing.assert_array_equal(projected.argmax(1), rows.argmax(1))
    for bad in ([[1.0, np.nan]], [[np.inf, 0.0]], [[-np.inf, 1.0]]):
        with pytest.raises(ValueError, match="props contains NaN or infinite"):
            project_to_simplex(bad)


# ---------------------------------------------------------------------------
# NoisyProportions reads the same scale
# ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "mechanism, delta", [("laplace", None), ("analytic_gaussian", 1e-5)]
)
def test_noisy_method_uses_the_release_noise(mechanism, delta):
    from sklearn_llp.core import check_bags
    from sklearn_llp.methods import NoisyProportions

    rng = np.random.RandomState(0)
    ids = np.repeat(np.arange(20), rng.randint(5, 40, 20))
    y = rng.randint(0, 2, len(ids))
    table = dp_proportions(ids, y, 0.5, mechanism=mechanism, delta=delta)
    method = NoisyProportions(
        noise=table.attrs["noise"], scale=table.attrs["noise_scale"]
    ).prepare(check_bags(ids, table), None)
    np.testing.assert_allclose(
        method.count_variance_, table.attrs["noise_variance"], rtol=1e-12
    )
    assert isinstance(table, pd.DataFrame)
