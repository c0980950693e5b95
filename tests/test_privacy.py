"""The noise mechanisms and their privacy accounting, exactly and empirically."""

import functools
import itertools
import math

import _releases
import numpy as np
import pandas as pd
import pytest
from scipy.special import ndtr

from sklearn_llp import privacy
from sklearn_llp.core import check_bags
from sklearn_llp.privacy import (
    dp_noise_scale,
    noise_variance,
    project_to_simplex,
    released_rows,
)
from sklearn_llp.privacy._mechanisms import (
    _analytic_gaussian_delta,
    _discrete_gaussian,
    _discrete_laplace,
    _zcdp_log_delta,
)

SQRT2 = math.sqrt(2)
MECHANISMS = [  # mechanism, delta, sensitivity of one row
    ("laplace", None, 2.0),
    ("discrete_laplace", None, 2.0),
    ("gaussian", 1e-5, SQRT2),
    ("analytic_gaussian", 1e-5, SQRT2),
    ("discrete_gaussian", 1e-5, SQRT2),
]


dp_proportions = functools.partial(_releases.dp_proportions, classes=[0, 1, 2])


def counts_of(ids, y, n_classes=3):
    counts = np.zeros((ids.max() + 1, n_classes))
    np.add.at(counts, (ids, y), 1)
    return counts


def census(n_bags=60, seed=0):
    rng = np.random.RandomState(seed)
    ids = np.repeat(np.arange(n_bags), rng.randint(5, 80, n_bags))
    return ids, rng.randint(0, 3, len(ids))


def discrete_laplace_pmf(k, t):
    q = math.exp(-1 / t)
    return (1 - q) / (1 + q) * q ** np.abs(k)


def discrete_gaussian_pmf(k, sigma):
    support = np.arange(-int(40 * sigma) - 2, int(40 * sigma) + 3)
    norm = np.exp(-(support**2) / (2 * sigma**2)).sum()
    return np.exp(-(np.asarray(k) ** 2) / (2 * sigma**2)) / norm


# --- Sensitivity and calibration
def neighbours_of(people, relation, k):
    """Every neighbour of a data set of people (lists of (bag, label) rows):
    one person's labels changed, or one person of up to k rows added or
    removed (any bags, any labels)."""
    cells = list(itertools.product(range(2), range(3)))
    if relation == "add_remove":
        for i in range(len(people)):
            yield people[:i] + people[i + 1 :]
        for n in range(1, k + 1):
            for rows in itertools.combinations_with_replacement(cells, n):
                yield people + [list(rows)]
        return
    for i, person in enumerate(people):
        for labels in itertools.product(range(3), repeat=len(person)):
            new = [(b, c) for (b, _), c in zip(person, labels)]
            yield people[:i] + [new] + people[i + 1 :]


def released(people, one_count):
    counts = np.zeros((2, 3))
    for b, c in itertools.chain.from_iterable(people):
        counts[b, c] += 1
    return counts[:, 1] if one_count else counts


@pytest.mark.parametrize(
    "relation, k, one_count, l1, l2",
    [
        ("replace", 1, False, 2.0, SQRT2),
        ("replace", 2, False, 4.0, 2 * SQRT2),
        ("replace", 1, True, 1.0, 1.0),
        ("replace", 2, True, 2.0, 2.0),
        ("add_remove", 1, False, 1.0, 1.0),
        ("add_remove", 2, False, 2.0, 2.0),
    ],
)
def test_sensitivity_of_the_table_by_enumeration(relation, k, one_count, l1, l2):
    """Every labelling of 3 people (one of k rows) in 2 bags and every
    neighbour: the largest change of the released counts is the release's
    sensitivity, in both norms (one count: labels 0 and 1 only)."""
    labels = range(2) if one_count else range(3)
    seen = set()
    for y in itertools.product(labels, repeat=2 + k):
        people = [[(0, y[0])], [(1, y[1])], [(0, c) for c in y[2:]]]
        for other in neighbours_of(people, relation, k):
            if one_count and any(c == 2 for _, c in itertools.chain(*other)):
                continue
            diff = released(other, one_count) - released(people, one_count)
            seen.add((np.abs(diff).sum(), np.sqrt((diff**2).sum())))
    assert max(seen)[0] == l1 and max(d for _, d in seen) == pytest.approx(l2)
    kw = dict(neighbours=relation, max_contributions=k, one_count=one_count)
    kw["classes"] = [0, 1] if one_count else [0, 1, 2]
    kw["domain"] = [0, 1] if relation == "add_remove" else None
    ids, y = np.repeat([0, 1], 4), np.tile([0, 1], 4)
    for mechanism, delta, norm in (("laplace", None, l1), ("gaussian", 1e-5, l2)):
        release = privacy.dp_proportions(
            ids, y, 0.5, mechanism=mechanism, delta=delta, **kw
        )
        assert release.attrs["sensitivity"] == pytest.approx(norm)
        assert release.attrs["neighbours"] == relation


def test_every_mechanism_is_calibrated_to_the_replace_one_sensitivity():
    assert dp_noise_scale(np.inf) == 0.0
    for epsilon in (0.1, 0.5, 1.0, 4.0):
        assert dp_noise_scale(epsilon) == 2.0 / epsilon
        assert dp_noise_scale(epsilon, "discrete_laplace") == 2.0 / epsilon
        assert dp_noise_scale(epsilon, sensitivity=1.0) == 1.0 / epsilon
        assert dp_noise_scale(epsilon, neighbours="add_remove") == 1.0 / epsilon
    for epsilon, delta in ((0.1, 1e-6), (0.5, 1e-5), (0.9, 1e-3)):
        unit = math.sqrt(2 * math.log(1.25 / delta)) / epsilon
        gaussian = functools.partial(dp_noise_scale, epsilon, "gaussian", delta=delta)
        assert gaussian() == pytest.approx(SQRT2 * unit, rel=1e-14)
        assert gaussian(neighbours="add_remove") == pytest.approx(unit)
    for epsilon in (0.1, 1.0, 5.0):
        sigma = dp_noise_scale(epsilon, "analytic_gaussian", delta=1e-5)
        # Balle & Wang (2018), Theorem 8, with L2 sensitivity sqrt(2)
        a, b = SQRT2 / (2 * sigma), epsilon * sigma / SQRT2
        delta = ndtr(a - b) - math.exp(epsilon) * ndtr(-a - b)
        assert delta == pytest.approx(1e-5, rel=1e-6)
        unit = dp_noise_scale(epsilon, "analytic_gaussian", delta=1e-5, sensitivity=1)
        assert sigma == pytest.approx(SQRT2 * unit, rel=1e-9)
        if epsilon < 1:  # less noise than the classical bound
            assert sigma < dp_noise_scale(epsilon, "gaussian", delta=1e-5)
    for epsilon, delta in ((0.5, 1e-5), (2.0, 1e-6)):
        sigma = dp_noise_scale(epsilon, "discrete_gaussian", delta=delta)
        # rho = Delta_2**2 / (2 sigma**2) converts to exactly the delta asked
        log_delta = _zcdp_log_delta(1 / sigma**2, epsilon)
        assert math.exp(log_delta) == pytest.approx(delta, rel=1e-6)
        analytic = dp_noise_scale(epsilon, "analytic_gaussian", delta=delta)
        assert analytic < sigma < 1.15 * analytic  # a little more noise


def test_zcdp_conversion_lies_between_the_exact_and_the_simple_bound():
    """For the continuous Gaussian (rho = 1 / (2 sigma**2) exactly), the
    conversion's delta is at least the exact one (Balle & Wang) and at most
    Bun & Steinke's simple bound exp(-(epsilon - rho)**2 / (4 rho))."""
    for sigma, epsilon in itertools.product([0.5, 1, 2, 5, 20], [0.1, 0.5, 1, 3]):
        rho = 1 / (2 * sigma**2)
        converted = math.exp(_zcdp_log_delta(rho, epsilon))
        simple = math.exp(-((epsilon - rho) ** 2) / (4 * rho)) if epsilon > rho else 1
        assert _analytic_gaussian_delta(sigma, epsilon, 1.0) <= converted * (1 + 1e-9)
        assert converted <= simple * (1 + 1e-9)


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
@pytest.mark.parametrize("mechanism, delta, per_row", MECHANISMS)
def test_release_records_its_relation_and_refuses_a_smaller_sensitivity(
    mechanism, delta, per_row, relation
):
    ids, y = census(n_bags=5)
    kw = dict(mechanism=mechanism, delta=delta, neighbours=relation)
    per_row = per_row if relation == "replace" else 1.0
    for k in (1, 3):
        table = dp_proportions(ids, y, 0.5, max_contributions=k, **kw)
        scale = dp_noise_scale(0.5, max_contributions=k, **kw)
        assert table.attrs["sensitivity"] == pytest.approx(k * per_row)
        assert table.attrs["max_contributions"] == k
        assert table.attrs["neighbours"] == relation
        assert table.attrs["noise_scale"] == scale
        assert scale == pytest.approx(k * dp_noise_scale(0.5, **kw), rel=1e-9)
        variance = noise_variance(table.attrs["noise"], scale)
        assert table.attrs["noise_variance"] == variance
        if mechanism == "discrete_gaussian":  # zCDP, rho = Delta_2**2 / (2 sigma**2)
            rho = (k * per_row) ** 2 / (2 * scale**2)
            assert table.attrs["rho"] == pytest.approx(rho)
        # below k per_row is not DP here (1, add/remove's, under replace)
        label = ".*label" if relation == "replace" else ""
        refused = f"sensitivity=.*neighbours='{relation}'{label}"
        for s in {1.0, 0.99 * k * per_row} - {float(k)}:
            with pytest.raises(ValueError, match=refused):
                dp_proportions(ids, y, 0.5, max_contributions=k, sensitivity=s, **kw)
    # more protects more people: proportionally more noise
    more = dp_proportions(ids, y, 0.5, sensitivity=4, **kw)
    assert more.attrs["noise_scale"] == dp_noise_scale(0.5, sensitivity=4, **kw)
    for bad in (0, -1.0, np.nan, np.inf, True, "2"):
        with pytest.raises(ValueError, match="sensitivity"):
            dp_proportions(ids, y, 0.5, sensitivity=bad, **kw)
        with pytest.raises(ValueError, match="sensitivity"):
            dp_noise_scale(0.5, sensitivity=bad, **kw)
    with pytest.raises(ValueError, match="neighbours must be 'replace'"):
        dp_proportions(ids, y, 0.5, **{**kw, "neighbours": "add"})


# --- The noise: samplers, variances, and the noise a release draws
@pytest.mark.parametrize(
    "noise, scale",
    [("discrete_laplace", t) for t in (0.3, 1.0, 4.0, 50.0)]
    + [("discrete_gaussian", s) for s in (0.4, 1.5, 6.0, 40.0)],
)
def test_integer_sampler_has_the_right_law(noise, scale):
    sampler, pmf = {
        "discrete_laplace": (_discrete_laplace, discrete_laplace_pmf),
        "discrete_gaussian": (_discrete_gaussian, discrete_gaussian_pmf),
    }[noise]
    draws = sampler(np.random.RandomState(0), scale, (400, 500))
    assert draws.shape == (400, 500) and draws.dtype.kind == "i"
    variance = noise_variance(noise, scale)
    support = np.arange(-int(60 * scale) - 3, int(60 * scale) + 4)
    assert variance == pytest.approx((support**2 * pmf(support, scale)).sum(), rel=1e-9)
    if noise == "discrete_laplace":
        q = math.exp(-1 / scale)
        assert variance == pytest.approx(2 * q / (1 - q) ** 2, rel=1e-12)
        if scale >= 4:  # close to the continuous Laplace
            assert variance == pytest.approx(2 * scale**2, rel=0.02)
    else:
        assert variance <= scale**2 * (1 + 1e-12)
        if scale >= 1:
            assert variance == pytest.approx(scale**2, rel=1e-6)
    n = draws.size
    assert abs(draws.var() - variance) < 4.5 * np.std(draws**2) / math.sqrt(n)
    assert abs(draws.mean()) < 4 * math.sqrt(variance / n)
    for k in range(-3, 4):  # the mass function, value by value
        p = float(pmf(k, scale))
        assert abs(np.mean(draws == k) - p) < 4.5 * math.sqrt(p * (1 - p) / n)


def test_noise_variance_of_every_noise_and_errors():
    assert noise_variance("laplace", 3.0) == 18.0
    assert noise_variance("gaussian", 3.0) == 9.0
    assert noise_variance("discrete_laplace", 0.0) == 0.0
    variances = noise_variance("discrete_gaussian", [0.0, 2.0, 2.0, 30.0])
    np.testing.assert_allclose(variances, [0, 4, 4, 900])
    # huge scales: finite, continuous limit
    assert noise_variance("discrete_laplace", 1e9) == pytest.approx(2e18, rel=1e-6)
    bad = [("laplace", scale, "scale") for scale in (-1.0, np.nan, np.inf, "a")]
    for noise, scale, name in [("poisson", 1, "noise"), (None, 1, "noise"), *bad]:
        with pytest.raises(ValueError, match=name):
            noise_variance(noise, scale)


@pytest.mark.parametrize(
    "mechanism, epsilon, delta, k",
    [("laplace", e, None, 1) for e in (0.2, 1.0, 3.0)]
    + [("laplace", 1.0, None, 4), ("discrete_laplace", 0.3, None, 1)]
    + [("discrete_laplace", 1.0, None, 1), ("gaussian", 0.5, 1e-5, 1)]
    + [("gaussian", 0.9, 1e-3, 1), ("analytic_gaussian", 0.5, 1e-5, 1)]
    + [("analytic_gaussian", 2.0, 1e-6, 1), ("discrete_gaussian", 0.5, 1e-5, 1)]
    + [("discrete_gaussian", 2.0, 1e-6, 1)],
)
@pytest.mark.slow
def test_released_noise_has_the_stated_scale(mechanism, epsilon, delta, k):
    ids, y = census()
    kw = dict(mechanism=mechanism, delta=delta, max_contributions=k, return_counts=True)
    noise = []
    for seed in range(120):  # 21,600 counts
        table, noisy = dp_proportions(ids, y, epsilon, random_state=seed, **kw)
        noise.append(noisy.to_numpy() - counts_of(ids, y))
    noise = np.concatenate(noise).ravel()
    scale, variance = table.attrs["noise_scale"], table.attrs["noise_variance"]
    assert (noisy.to_numpy().dtype.kind == "i") == mechanism.startswith("discrete")
    assert table.attrs["noise_std"] == pytest.approx(math.sqrt(variance))
    n = noise.size
    assert abs(np.mean(noise**2) - variance) < 4.5 * np.std(noise**2) / math.sqrt(n)
    assert abs(noise.mean()) < 4.5 * math.sqrt(variance / n)
    if mechanism == "laplace":
        # the maximum-likelihood Laplace scale, mean |noise|: standard error b/sqrt(n)
        assert abs(np.abs(noise).mean() - scale) < 4 * scale / math.sqrt(n)
        # and not the old (add/remove-one) scale: many standard errors off
        assert abs(np.abs(noise).mean() - scale / 2) > 50 * scale / math.sqrt(n)


# --- The released table: simplex rows, seeds, rows in no bag, classes, errors
@pytest.mark.parametrize("post_processing", ["project", "clip"])
@pytest.mark.parametrize("epsilon", [0.01, 0.3, np.inf])
def test_rows_on_the_simplex_accepted_as_props_and_seeded(post_processing, epsilon):
    ids, y = census(n_bags=40)
    kw = dict(post_processing=post_processing)
    table = dp_proportions(ids, y, epsilon, random_state=0, **kw)
    assert list(table.columns) == [0, 1, 2]
    assert table.index.name == "bag" and list(table.index) == list(range(40))
    values = table.to_numpy()
    assert np.all(values >= 0)
    np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-12)
    bags = check_bags(ids, table)  # a per-bag props table
    again = dp_proportions(ids, y, epsilon, random_state=0, **kw)
    pd.testing.assert_frame_equal(again, table)
    if np.isinf(epsilon):
        exact = counts_of(ids, y)
        np.testing.assert_allclose(bags.props, exact / exact.sum(1, keepdims=True))
        return
    other = dp_proportions(ids, y, epsilon, random_state=1, **kw)
    assert not np.allclose(other.to_numpy(), values)
    rng = np.random.RandomState(7)  # a generator advances
    first, second = (
        dp_proportions(ids, y, epsilon, random_state=rng, **kw) for _ in "ab"
    )
    assert not np.allclose(first.to_numpy(), second.to_numpy())


@pytest.mark.parametrize("mechanism, ratio", [("laplace", 0.5), ("gaussian", 1.0)])
def test_one_count_halves_the_share_variance_of_two_classes(mechanism, ratio):
    """Bags of 100, shares 1/2, epsilon 0.5: one count (sensitivity 1) halves the
    share variance of two projected counts (L1 2: b^2 / n^2 = 16e-4), to its
    standard error; Gaussian ones gain nothing (L2 1 against sqrt(2))."""
    ids = np.repeat(np.arange(2000), 100)
    y = np.tile(np.r_[np.zeros(50), np.ones(50)], 2000)
    kw = dict(classes=[0, 1], mechanism=mechanism, random_state=0)
    kw["delta"] = 1e-5 if mechanism == "gaussian" else None
    default = privacy.dp_proportions(ids, y, 0.5, **kw)
    assert default.attrs["one_count"] is (mechanism == "laplace")
    one = privacy.dp_proportions(ids, y, 0.5, one_count=True, **kw)[1].to_numpy()
    two = privacy.dp_proportions(ids, y, 0.5, one_count=False, **kw)[1].to_numpy()
    if mechanism == "laplace":
        assert two.var() == pytest.approx((4.0 / 100) ** 2, rel=0.1)
    se = math.sqrt(2 / 1999) * math.hypot(1, ratio)  # of the ratio of variances
    assert abs(one.var() / two.var() - ratio) < 4 * se * ratio
    assert one.mean() == pytest.approx(0.5, abs=0.004)
    with pytest.raises(ValueError, match="one_count .* two classes"):
        dp_proportions(ids, y, 0.5, one_count=True)


def test_unbagged_rows_and_classes():
    ids = np.array([0, 0, 1, 1, -1, 1])
    y = np.array(["x", "y", "y", "y", "z", "y"])
    table = dp_proportions(ids, y, np.inf, classes=["y", "x", "z"])
    assert list(table.index) == [0, 1] and list(table.columns) == ["y", "x", "z"]
    np.testing.assert_allclose(table.to_numpy(), [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    # composite ids (tuples), bags of sizes 2 and 3: sizes in the table's order
    keys = [("b", 2), ("a", 1), ("b", 2), ("a", 1), ("b", 2)]
    table = dp_proportions(keys, [1, 0, 1, 1, 0], np.inf, classes=[0, 1])
    assert list(table.index) == [("a", 1), ("b", 2)]
    np.testing.assert_allclose(table.to_numpy(), [[0.5, 0.5], [1 / 3, 2 / 3]])
    # ... suppressed and selected by their ids
    table = dp_proportions(keys, [1, 0, 1, 1, 0], np.inf, min_bag_size=3)
    assert table.attrs["suppressed"] == [("a", 1)] and table.shape == (1, 3)
    # the label domain is public: required, and labels outside it refused
    for classes, match in ((None, "classes is required.*leak"), ([0, 1], "2")):
        with pytest.raises(ValueError, match=match):
            privacy.dp_proportions(ids, np.r_[0, 1, 2, 1, 1, 0], 1.0, classes=classes)
    np.testing.assert_array_equal(released_rows(keys, table), [1, 0, 1, 0, 1])


@pytest.mark.parametrize(
    "kwargs, name",
    [
        *[({"epsilon": bad}, "epsilon") for bad in (0, -1.0, np.nan, "1", True)],
        ({"epsilon": 1.0, "delta": 1e-5}, "delta"),  # Laplace takes no delta
        *[
            ({"epsilon": 0.5, "mechanism": m, "delta": bad}, "delta")
            for m, bad in [("gaussian", None), ("gaussian", 0.0), ("gaussian", 1.0)]
            + [("analytic_gaussian", -1)]
        ],
        ({"epsilon": 2.0, "mechanism": "gaussian", "delta": 1e-5}, "epsilon"),
        ({"epsilon": 1.0, "mechanism": "exponential"}, "mechanism"),
        ({"epsilon": 1.0, "mechanism": None}, "mechanism"),
        ({"epsilon": 1.0, "post_processing": "round"}, "post_processing"),
    ],
)
def test_errors_name_the_argument(kwargs, name):
    ids, y = census(n_bags=3)
    with pytest.raises(ValueError, match=name):
        dp_proportions(ids, y, **kwargs)
    if "post_processing" not in kwargs:
        with pytest.raises(ValueError, match=name):
            dp_noise_scale(**kwargs)


# --- The privacy loss of the release
def neighbour_pairs(n_bags):
    """Bags of 4 people, 2 of each class; bag k's neighbour has one person
    of class 0 relabelled 1 (counts [1, 3]) or one of class 1 added ([2, 3]).
    The other bags' noise is the same under both and cancels from the loss,
    so every bag gives one independent draw of the privacy loss of its pair."""
    return np.repeat(np.arange(n_bags), 4), np.tile([0, 0, 1, 1], n_bags)


@pytest.mark.parametrize(
    "mechanism, epsilon, relation, one_count, other",
    [
        ("laplace", 0.3, "replace", False, [1, 3]),
        ("laplace", 1.0, "replace", True, [1, 3]),
    ]
    + [("discrete_laplace", 0.7, "replace", False, [1, 3])]
    + [("laplace", 0.5, "add_remove", False, [2, 3])]
    + [("discrete_laplace", 0.7, "add_remove", False, [2, 3])],
)
def test_pure_privacy_loss_is_at_most_epsilon_and_reaches_it(
    mechanism, epsilon, relation, one_count, other
):
    ids, y = neighbour_pairs(100_000)
    kw = dict(neighbours=relation, one_count=one_count, classes=[0, 1])
    kw.update(mechanism=mechanism, return_counts=True, random_state=1)
    _, noisy = _releases.dp_proportions(ids, y, epsilon, **kw)
    b, released = noisy.attrs["noise_scale"], noisy.to_numpy()[:, int(one_count) :]
    other = np.array(other)[int(one_count) :]
    # log p(release | D) - log p(release | D')
    loss = (np.abs(released - other) - np.abs(released - 2)).sum(axis=1) / b
    assert np.abs(loss).max() <= epsilon * (1 + 1e-9)
    # it reaches epsilon when every noise on a changed count is on the far
    # side: 1/2 each, or 1 / (1 + q) for the integer noise, q = e^(-1/b)
    q = math.exp(-1 / b) if mechanism.startswith("discrete") else 1.0
    p = 1 / (1 + q) ** np.sum(other != 2)
    at_epsilon = np.mean(loss >= epsilon * (1 - 1e-9))
    assert abs(at_epsilon - p) < 4 * math.sqrt(p * (1 - p) / len(loss))


@pytest.mark.parametrize(
    "mechanism, epsilon, delta",
    [("analytic_gaussian", 1.0, 0.01), ("analytic_gaussian", 0.3, 0.02)]
    + [("gaussian", 0.5, 0.05)],
)
@pytest.mark.slow
def test_gaussian_release_has_the_delta_it_is_given(mechanism, epsilon, delta):
    """delta(epsilon) = E_D[(1 - exp(epsilon - L))_+] over the privacy loss
    L of the release; exactly the delta asked for the analytic calibration,
    below it for the classical bound."""
    ids, y = neighbour_pairs(400_000)
    kw = dict(mechanism=mechanism, delta=delta, return_counts=True, random_state=2)
    _, noisy = privacy.dp_proportions(ids, y, epsilon, classes=[0, 1], **kw)
    released, sigma = noisy.to_numpy(), noisy.attrs["noise_scale"]
    loss = ((released - [1, 3]) ** 2 - (released - [2, 2]) ** 2).sum(axis=1)
    loss /= 2 * sigma**2
    terms = np.maximum(1 - np.exp(epsilon - loss), 0.0)
    se = terms.std() / math.sqrt(len(terms))
    if mechanism == "gaussian":
        assert terms.mean() + 4 * se < delta
    else:
        assert abs(terms.mean() - delta) < 4.5 * se
        # the old calibration (sensitivity 1, sigma / sqrt(2)) leaks far more
        assert np.maximum(1 - np.exp(epsilon - 2 * loss), 0.0).mean() > 3 * delta


def exact_hockey_stick(sigma, shift, epsilon):
    """delta(epsilon) of two independent discrete Gaussians, the neighbour's
    counts moved by (-shift, +shift): sum over outputs of (P - e^eps P')_+."""
    support = np.arange(-int(30 * sigma) - 3 * shift, int(30 * sigma) + 3 * shift + 1)
    p = discrete_gaussian_pmf(support, sigma)
    moved = [discrete_gaussian_pmf(support + s, sigma) for s in (shift, -shift)]
    there = np.outer(*moved)
    return float(np.maximum(np.outer(p, p) - math.exp(epsilon) * there, 0).sum())


@pytest.mark.parametrize("k", [1, 2])
def test_discrete_gaussian_release_is_within_its_delta_exactly(k):
    """The worst neighbours (k rows of one bag moved between the same two
    classes): the exact delta of the released counts is at most the delta
    asked, and not absurdly below it."""
    epsilon, delta = 1.0, 1e-3
    kw = dict(delta=delta, max_contributions=k)
    sigma = dp_noise_scale(epsilon, "discrete_gaussian", **kw)
    assert delta / 20 < exact_hockey_stick(sigma, k, epsilon) <= delta
    # sigma / sqrt(2) (the L2 sensitivity taken as 1) would leak more
    assert exact_hockey_stick(sigma / SQRT2, k, epsilon) > delta


# --- Extremes: tiny epsilon, huge values; the projection
def test_small_but_representable_epsilon_gives_a_valid_release():
    ids = np.repeat(np.arange(50), 5)
    y = np.tile([0, 1, 1, 0, 1], 50)
    # the analytic sigma stays finite as epsilon -> 0: the (0, delta)-DP one
    gaussian = {"mechanism": "analytic_gaussian", "delta": 1e-5}
    for epsilon, kw in ((1e-100, {}), (1e-150, {}), (1e-300, gaussian)):
        table = dp_proportions(ids, y, epsilon, random_state=0, **kw)
        assert np.isfinite(table.attrs["noise_variance"])
        assert table.attrs["noise_scale"] > 1e4 and np.all(table.to_numpy() >= 0)
        np.testing.assert_allclose(table.to_numpy().sum(axis=1), 1.0, atol=1e-12)


def test_projection_of_huge_values_stays_on_the_simplex():
    big = np.finfo(np.float64).max
    rows = [[1e300, 1e300, -1e300], [big, -big, 0.0], [big, big, big]]
    rows += [[-big, -big, -big], [1e300, 1e300 * (1 + 1e-15), 3.0], [-1e308, 5.0, 5.0]]
    rows = np.array(rows + [[1e-300, 0.0, -1e-300]])
    projected = project_to_simplex(rows)
    assert np.all(np.isfinite(projected)) and np.all(projected >= 0)
    np.testing.assert_allclose(projected.sum(axis=1), 1.0, atol=1e-12)
    expected = [[1.0, 0.0, 0.0], [1 / 3] * 3, [1 / 3] * 3, [0.0, 0.5, 0.5]]
    np.testing.assert_allclose(projected[[1, 2, 3, 5]], expected)
    rng = np.random.RandomState(0)
    for scale in (1e100, 1e200, 1e300, 1e307):
        rows = rng.normal(size=(500, 4)) * scale
        projected = project_to_simplex(rows)
        assert np.all(projected >= 0)
        np.testing.assert_allclose(projected.sum(axis=1), 1.0, atol=1e-12)
        # a share of 1 on every row's largest entry (the others are far below)
        np.testing.assert_array_equal(projected.argmax(1), rows.argmax(1))


def brute_force_projection(v):
    """The nearest point of the simplex: the best of all supports."""
    best, best_distance = None, np.inf
    n = len(v)
    for k in range(1, n + 1):
        for support in itertools.combinations(range(n), k):
            support = list(support)
            x = np.zeros(n)
            x[support] = v[support] - (v[support].sum() - 1) / k
            if np.all(x >= -1e-12):
                distance = np.sum((x - v) ** 2)
                if distance < best_distance:
                    best, best_distance = np.maximum(x, 0), distance
    return best


def test_projection_matches_brute_force():
    rng = np.random.RandomState(0)
    for k in (1, 2, 3, 5):  # k classes: rows near the simplex, large noise, ties
        v = np.r_[rng.normal(0.3, 1.0, (200, k)), rng.normal(0.0, 30.0, (50, k))]
        v = np.r_[v, rng.randint(-2, 3, (50, k)) / 2.0]
        projected = project_to_simplex(v)
        reference = np.array([brute_force_projection(row) for row in v])
        np.testing.assert_allclose(projected, reference, atol=1e-12)
        assert np.all(projected >= 0)
        np.testing.assert_allclose(projected.sum(axis=1), 1.0, atol=1e-12)


def test_projection_keeps_simplex_rows_and_shapes():
    rng = np.random.RandomState(1)
    on_simplex = rng.dirichlet([0.5, 1.0, 2.0], 100)
    np.testing.assert_allclose(project_to_simplex(on_simplex), on_simplex, atol=1e-15)
    stack = rng.normal(size=(4, 6, 3))
    flat = project_to_simplex(stack.reshape(-1, 3)).reshape(4, 6, 3)
    np.testing.assert_array_equal(project_to_simplex(stack), flat)
    np.testing.assert_allclose(project_to_simplex([0.7, 0.5]), [0.6, 0.4])
    raw = pd.DataFrame([[1.2, -0.4], [0.3, 0.3]], [0, 1], ["no", "yes"])
    projected = project_to_simplex(raw)
    expected = pd.DataFrame([[1.0, 0.0], [0.5, 0.5]], [0, 1], ["no", "yes"])
    pd.testing.assert_frame_equal(projected, expected)
    # the result is accepted by check_bags (negative shares, rows not summing
    # to 1 are not)
    with pytest.raises(ValueError):
        check_bags([0, 0, 1, 1], raw)
    check_bags([0, 0, 1, 1], projected)
