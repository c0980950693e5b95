"""The releases as published, read by the one reader (issue 32, case 7)."""

import functools
import math

import _releases
import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from sklearn_llp import LLPClassifier, LLPRegressor, privacy
from sklearn_llp.core import check_bags
from sklearn_llp.methods import NoisyProportions
from sklearn_llp.privacy import (
    dp_bag_means,
    dp_noise_scale,
    noise_aware_bag_weights,
    noise_variance,
    project_to_simplex,
    released_rows,
)

dp_proportions = functools.partial(_releases.dp_proportions, classes=[0, 1, 2])


def census(n_bags=60, low=5, high=80, n_classes=3, seed=0):
    rng = np.random.RandomState(seed)
    sizes = rng.randint(low, high, n_bags)
    ids = np.repeat(np.arange(n_bags), sizes)
    return ids, rng.randint(0, n_classes, len(ids)), sizes


# --- Clamping and suppression
@pytest.mark.parametrize("mechanism", ["laplace", "discrete_laplace"])
def test_clamped_counts_are_the_same_noise_clipped_to_their_range(mechanism):
    ids, y, sizes = census(n_bags=40, low=1, high=6)
    kwargs = dict(mechanism=mechanism, return_counts=True, random_state=0)
    table, noisy = dp_proportions(ids, y, 0.2, clamp=True, **kwargs)
    _, raw = dp_proportions(ids, y, 0.2, **kwargs)
    values = noisy.to_numpy()
    np.testing.assert_allclose(values, np.clip(raw.to_numpy(), 0, sizes[:, None]))
    assert raw.to_numpy().min() < 0 and (values == 0).any()  # clamping happened
    assert table.attrs["clamp"] is True
    np.testing.assert_allclose(table.to_numpy().sum(axis=1), 1.0, atol=1e-12)
    # sizes private: clipped at 0 only
    kwargs["neighbours"] = "add_remove"
    _, noisy = dp_proportions(ids, y, 0.2, clamp=True, **kwargs)
    _, raw = dp_proportions(ids, y, 0.2, **kwargs)
    np.testing.assert_allclose(noisy.to_numpy(), np.maximum(raw.to_numpy(), 0))
    assert (noisy.to_numpy() > sizes[:, None]).any()


@pytest.mark.parametrize(
    "mechanism, delta", [("laplace", None), ("discrete_gaussian", 1e-6)]
)
def test_suppression_withholds_exactly_the_small_bags(mechanism, delta):
    ids, y, sizes = census(n_bags=50, low=1, high=40)
    kwargs = dict(mechanism=mechanism, delta=delta, random_state=3)
    full = dp_proportions(ids, y, 0.5, **kwargs)
    table = dp_proportions(ids, y, 0.5, min_bag_size=10, **kwargs)
    small = np.flatnonzero(sizes < 10)
    assert 0 < len(small) < 50
    assert list(table.index) == list(np.flatnonzero(sizes >= 10))
    assert table.attrs["suppressed"] == small.tolist()
    assert table.attrs["min_bag_size"] == 10
    # the kept bags' release is the same as without suppression
    pd.testing.assert_frame_equal(table, full.loc[table.index])
    np.testing.assert_array_equal(released_rows(ids, table), sizes[ids] >= 10)
    assert dp_proportions(ids, y, 0.5, min_bag_size=1).attrs["suppressed"] == []
    # sizes private: the rule reads the noisy size (the sum of the noisy
    # counts), never the true one; shares over it (floored at 1)
    kwargs["neighbours"] = "add_remove"
    full, counts = dp_proportions(ids, y, 0.5, return_counts=True, **kwargs)
    noisy_sizes = np.maximum(counts.sum(axis=1), 1.0).to_numpy()
    np.testing.assert_allclose(full, project_to_simplex(counts / noisy_sizes[:, None]))
    table = dp_proportions(ids, y, 0.5, min_bag_size=10, **kwargs)
    assert list(table.index) == list(np.flatnonzero(noisy_sizes >= 10))
    assert list(table.index) != list(np.flatnonzero(sizes >= 10))


def test_rows_of_suppressed_bags_are_never_given_proportions():
    ids, y, sizes = census(n_bags=30, low=1, high=30, n_classes=2)
    X = np.random.RandomState(0).normal(size=(len(ids), 3)) + y[:, None]
    table = dp_proportions(ids, y, 1.0, classes=[0, 1], min_bag_size=8, random_state=0)
    clf = LLPClassifier(method="noisy", max_epochs=1, random_state=0, verbose=0)
    with pytest.raises(ValueError, match="no row for .* bag id"):
        clf.fit(X, ids, table)
    keep = released_rows(ids, table)
    clf.set_params(method__release=table).fit(X[keep], ids[keep], table)
    assert clf.method_.bag_weights_.shape == (len(table),)
    # unbagged rows are never kept; dicts and Series work too
    assert not released_rows(np.r_[ids, -1], table)[-1]
    series = table.iloc[:, 1]
    np.testing.assert_array_equal(released_rows(ids, series), keep)
    np.testing.assert_array_equal(released_rows(ids, series.to_dict()), keep)
    with pytest.raises(TypeError, match="table"):
        released_rows(ids, table.to_numpy())


@pytest.mark.parametrize(
    "mechanism, delta",
    [("laplace", None), ("analytic_gaussian", 1e-5)]
    + [("discrete_laplace", None), ("discrete_gaussian", 1e-5)],
)
@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_noisy_method_reads_the_release(mechanism, delta, relation):
    """method__release: the count noise of the release, and the noise of a
    share per count: 1 - 1/C projected (replace), 1 for one count of two,
    1 - 2/C + sum p_c**2 at the released shares (add_remove, delta method)."""
    ids, y, sizes = census(n_bags=20, n_classes=2)
    kw = dict(mechanism=mechanism, delta=delta, neighbours=relation)
    table = _releases.dp_proportions(ids, y, 0.3, classes=[0, 1], **kw)
    method = NoisyProportions(release=table).prepare(check_bags(ids, table), None)
    v = table.attrs["noise_variance"]
    np.testing.assert_allclose(method.count_variance_, v, rtol=1e-12)
    factor = 0.5  # two projected counts
    if table.attrs["one_count"]:
        factor = 1.0
    elif relation == "add_remove":
        factor = (table.to_numpy() ** 2).sum(axis=1)
    tau = method.label_variance_
    r = sizes * tau / (sizes * tau + factor * v)
    np.testing.assert_allclose(method.reliability_, r, rtol=1e-9)
    with pytest.raises(ValueError, match="method__release has no"):
        NoisyProportions(release={}).prepare(check_bags(ids, table), None)


def test_add_remove_releases_every_id_of_its_domain_and_the_learner_reads_it():
    """Issue 46 case 15: the ids released do not depend on who is in the
    data (removing a bag's only person keeps its row); empty bags are noise,
    named in the table but absent from X, and the learner reads the rest."""
    ids, y = np.r_[0, 0, 0, 1, 2, 2, 2, 2], np.r_[0, 1, 1, 0, 1, 0, 1, 1]
    kw = dict(neighbours="add_remove", random_state=0)
    release = functools.partial(privacy.dp_proportions, classes=[0, 1], **kw)
    domain = [0, 1, 2, 3, 4]
    full = release(ids, y, 1.0, domain=domain)
    alone = release(ids[ids != 1], y[ids != 1], 1.0, domain=domain)
    means = dp_bag_means(ids, y, 1.0, bounds=(0, 1), domain=domain, **kw)
    assert full.index.tolist() == alone.index.tolist() == means.index.tolist() == domain
    with pytest.raises(ValueError, match="needs domain=.*who is in it"):
        release(ids, y, 1.0)
    with pytest.raises(ValueError, match="needs domain="):
        dp_bag_means(ids, y, 1.0, bounds=(0, 1), **kw)
    with pytest.raises(ValueError, match=r"lacks \[2\]"):
        release(ids, y, 1.0, domain=[0, 1])
    with pytest.raises(ValueError, match="domain is for neighbours='add_remove'"):
        privacy.dp_proportions(ids, y, 1.0, classes=[0, 1], domain=domain)
    X = np.c_[y, 1 - y].astype(np.float32)
    clf = LLPClassifier(method="noisy", max_epochs=1, random_state=0, verbose=0)
    clf.set_params(early_stopping=False).fit(X, ids, full)
    np.testing.assert_allclose(
        clf.method_.noisy_counts_, full.attrs["counts"]["values"][:3]
    )


# --- Bag means for regression
def regression_bags(n_bags=80, seed=0):
    rng = np.random.RandomState(seed)
    sizes = rng.randint(2, 60, n_bags)
    ids = np.repeat(np.arange(n_bags), sizes)
    return ids, rng.normal(5.0, 3.0, len(ids)), sizes


def test_bag_means_clip_suppress_and_clamp():
    ids, y, sizes = regression_bags()
    table = dp_bag_means(ids, y, np.inf, bounds=(0.0, 8.0))
    expected = np.bincount(ids, weights=np.clip(y, 0.0, 8.0)) / sizes
    np.testing.assert_allclose(table["mean"], expected, rtol=1e-12)
    np.testing.assert_array_equal(table["size"], sizes)
    assert (table["std"] == 0).all() and table.attrs["noise_scale"] == 0
    # clipping mattered: the plain means differ
    assert not np.allclose(expected, np.bincount(ids, weights=y) / sizes)
    assert list(table.columns) == ["mean", "std", "size"]
    assert table.index.name == "bag"
    # suppression and clamping (of the means to the bounds)
    kw = dict(min_bag_size=20, clamp=True, random_state=0)
    table = dp_bag_means(ids, y, 0.05, bounds=(0.0, 10.0), **kw)
    assert list(table.index) == list(np.flatnonzero(sizes >= 20))
    assert table.attrs["suppressed"] == np.flatnonzero(sizes < 20).tolist()
    assert table["mean"].between(0.0, 10.0).all() and table.attrs["clamp"] is True
    np.testing.assert_array_equal(released_rows(ids, table), sizes[ids] >= 20)


def test_the_regressor_fits_a_bag_means_release_as_its_means():
    ids, y, _ = regression_bags()
    X = np.random.RandomState(0).normal(size=(len(ids), 3)).astype(np.float32)
    table = dp_bag_means(ids, y, 1.0, bounds=(0.0, 10.0), random_state=0)
    est = dict(max_epochs=2, random_state=0, verbose=0, device="cpu")
    from_release = LLPRegressor(**est).fit(X, ids, table)
    from_means = LLPRegressor(**est).fit(X, ids, table["mean"])
    np.testing.assert_array_equal(from_release.predict(X), from_means.predict(X))


@pytest.mark.parametrize("relation", ["replace", "add_remove"])
def test_bag_sum_sensitivity_by_enumeration(relation):
    """Replacing one row's value (any real, clipped to [lo, hi]) moves one
    bag's clipped sum by at most hi - lo; adding or removing a row moves
    it by at most max(|lo|, |hi|) and its count by 1: both reached, and the
    attrs record them (k rows: k times)."""
    lo, hi = -1.0, 2.5
    bounds = (lo, hi)
    ids = np.array([0, 0, 1])
    base = np.random.RandomState(0).normal(0, 3, 3)

    def table(i, v):
        return dp_bag_means(i, v, np.inf, bounds=(lo, hi))

    a, largest = table(ids, base), np.zeros(2)
    for value in [-100.0, lo, 0.3, hi, 100.0, np.nextafter(hi, 0)]:
        for row in range(3):
            if relation == "replace":
                others = [table(ids, np.r_[base[:row], value, base[row + 1 :]])]
            else:  # added to bag ``row % 2``, or ``row`` removed (id kept)
                gone = table(np.delete(ids, row), np.delete(base, row))
                others = [table(np.r_[ids, row % 2], np.r_[base, value])]
                others.append(gone.reindex(a.index).fillna(0))
            for b in others:
                moved = np.abs(a["mean"] * a["size"] - b["mean"] * b["size"])
                assert (moved.to_numpy() > 1e-12).sum() <= 1  # one bag's sum
                counted = np.abs(a["size"] - b["size"]).sum()
                largest = np.maximum(largest, [moved.max(), counted])
    expected = hi - lo if relation == "replace" else max(abs(lo), abs(hi))
    np.testing.assert_allclose(largest, [expected, relation == "add_remove"])
    for k, mechanism, delta in ((1, "laplace", None), (3, "analytic_gaussian", 1e-5)):
        eps, kw = 1.0, dict(mechanism=mechanism, delta=delta, max_contributions=k)
        kw.update(_releases.with_domain(ids, dict(neighbours=relation)))
        release = dp_bag_means(ids, base, 1.0, bounds=bounds, **kw)
        if relation == "add_remove":  # half the budget on the sums
            eps, delta = 0.5, delta and delta / 2
        assert release.attrs["sensitivity"] == pytest.approx(k * expected)
        assert release.attrs["noise_scale"] == pytest.approx(
            dp_noise_scale(eps, mechanism, delta=delta, sensitivity=k * expected)
        )
        assert release.attrs["neighbours"] == relation
        if relation == "add_remove":  # half the budget on the counts
            assert release.attrs["count_noise_scale"] == pytest.approx(
                dp_noise_scale(eps, mechanism, delta=delta, sensitivity=k)
            )


@pytest.mark.parametrize(
    "mechanism, delta, epsilon",
    [("laplace", None, 0.5), ("analytic_gaussian", 1e-5, 1.0), ("gaussian", 1e-4, 0.5)],
)
def test_bag_mean_noise_has_the_stated_scale(mechanism, delta, epsilon):
    ids, y, sizes = regression_bags()
    bounds = (0.0, 10.0)
    exact = dp_bag_means(ids, y, np.inf, bounds=bounds)["mean"].to_numpy()
    kw = dict(bounds=bounds, mechanism=mechanism, delta=delta)
    standardised = []
    for seed in range(150):  # 12,000 bag means
        table = dp_bag_means(ids, y, epsilon, random_state=seed, **kw)
        standardised.append((table["mean"].to_numpy() - exact) / table["std"])
    z = np.concatenate(standardised)
    # noise / (its stated sd) has variance 1 (a factor sqrt(2) off: 2 or 1/2)
    assert abs(z.var() - 1) < 4.5 * np.std(z**2) / math.sqrt(z.size)
    assert abs(z.mean()) < 4 / math.sqrt(z.size)
    scale = table.attrs["noise_scale"]
    if mechanism == "laplace":
        assert scale == 10.0 / epsilon  # (hi - lo) / epsilon
        assert np.abs(z).mean() == pytest.approx(1 / math.sqrt(2), rel=0.03)
    np.testing.assert_allclose(
        table["std"], math.sqrt(noise_variance(table.attrs["noise"], scale)) / sizes
    )


@pytest.mark.slow
def test_add_remove_bag_means_noise_has_the_stated_delta_method_scale():
    rng = np.random.RandomState(0)  # large bags: the noisy count's ratio is near n
    ids = np.repeat(np.arange(40), rng.randint(500, 1000, 40))
    y, kw = rng.normal(5.0, 3.0, len(ids)), dict(bounds=(0.0, 10.0))
    exact = dp_bag_means(ids, y, np.inf, **kw)["mean"].to_numpy()
    kw["neighbours"] = "add_remove"
    releases = (
        dp_bag_means(ids, y, 1.0, **_releases.with_domain(ids, kw), random_state=s)
        for s in range(150)
    )
    z = np.concatenate([(t["mean"].to_numpy() - exact) / t["std"] for t in releases])
    assert abs(z.var() - 1) < 4.5 * np.std(z**2) / math.sqrt(z.size)
    assert abs(z.mean()) < 4 / math.sqrt(z.size)


def test_bag_means_laplace_privacy_loss_is_at_most_epsilon():
    """Two neighbours: one row's value changed from lo to hi. The log density
    ratio of the released sums (means times the public sizes) never exceeds
    epsilon and reaches it."""
    epsilon, lo, hi, n = 0.8, 0.0, 4.0, 50_000
    ids = np.repeat(np.arange(n), 3)
    y = np.tile([lo, 1.0, 2.0], n)
    table = dp_bag_means(ids, y, epsilon, bounds=(lo, hi), random_state=0)
    sums = table["mean"].to_numpy() * 3
    b = table.attrs["noise_scale"]
    loss = (np.abs(sums - (3.0 + hi - lo)) - np.abs(sums - 3.0)) / b
    assert loss.max() <= epsilon * (1 + 1e-9)
    assert np.mean(loss >= epsilon * (1 - 1e-9)) > 0.4  # half the draws


def test_noise_aware_bag_weights_by_hand():
    # the case: n 100 against 10, epsilon 10, bounds (0, 100), s = 10:
    # v = 2 (100 / 10)**2 = 200, n**2 / (n s**2 + v): 0.980 / 0.0833 = 11.8
    ids = np.repeat([0, 1], [100, 10])
    table = dp_bag_means(ids, np.zeros(110), 10.0, bounds=(0, 100))
    weights = noise_aware_bag_weights(table, target_variance=100.0)
    assert weights[0] / weights[1] == pytest.approx((1e4 / 10200) / (100 / 1200))
    assert round(weights[0] / weights[1], 1) == 11.8
    ids, y, sizes = regression_bags(n_bags=10)
    table = dp_bag_means(ids, y, 0.5, bounds=(0.0, 10.0), random_state=0)
    noise_var = table.attrs["noise_variance"]  # of a sum: 2 (10 / 0.5)**2
    assert noise_var == 800.0
    weights = noise_aware_bag_weights(table, target_variance=0.0)
    np.testing.assert_allclose(weights, sizes**2 / np.mean(sizes**2))
    assert weights.index.equals(table.index)
    tau = 2.5
    weights = noise_aware_bag_weights(table, target_variance=tau)
    expected = 1 / (tau / sizes + noise_var / sizes**2)
    np.testing.assert_allclose(weights, expected / expected.mean())
    # per row: w_B / n_B, mean 1 (its totals per bag: test_conformance_regression)
    rows = noise_aware_bag_weights(table, ids, target_variance=tau)
    per_row = (expected / sizes)[ids]
    np.testing.assert_allclose(rows, per_row / per_row.mean())
    # add_remove: the size column is a noisy count (a 6-row bag released as
    # 1); per row, the sizes are the bags' rows: two 6-row bags, equal weights
    released = pd.DataFrame({"size": [1.0, 6.0], "std": [0.5, 0.5]})
    rows = noise_aware_bag_weights(released, np.repeat([0, 1], 6), target_variance=1)
    np.testing.assert_allclose(rows, 1.0)  # before: 6.37 times as much in bag 0
    # without noise, proportional to the sizes
    exact = dp_bag_means(ids, y, np.inf, bounds=(0.0, 10.0))
    weights = noise_aware_bag_weights(exact, target_variance=tau)
    np.testing.assert_allclose(weights, sizes / sizes.mean())


def test_noise_aware_bag_weights_errors():
    ids, y, _ = regression_bags(n_bags=10)
    table = dp_bag_means(ids, y, 0.5, bounds=(0.0, 10.0), min_bag_size=20)
    for bad in (None, -1.0, np.nan, np.inf, "1", True):
        with pytest.raises(ValueError, match="target_variance must .* residuals"):
            noise_aware_bag_weights(table, target_variance=bad)
    exact = dp_bag_means(ids, y, np.inf, bounds=(0.0, 10.0))
    with pytest.raises(ValueError, match="target_variance=0"):
        noise_aware_bag_weights(exact, target_variance=0)
    negative = table.assign(std=-table["std"])
    for bad in (table[["mean"]], table.to_dict(), pd.concat([table, table]), negative):
        with pytest.raises(ValueError, match="released must be a per-bag DataFrame"):
            noise_aware_bag_weights(bad, target_variance=1.0)
    # the rows of a withheld bag, or of none: refused, not given a weight
    with pytest.raises(ValueError, match="bags has .* released_rows"):
        noise_aware_bag_weights(table, ids, target_variance=1.0)
    with pytest.raises(ValueError, match="bags has 1 row.* released_rows"):
        keep = released_rows(ids, table)
        noise_aware_bag_weights(table, np.r_[ids[keep], -1], target_variance=1.0)
    weights = noise_aware_bag_weights(table, ids[keep], target_variance=1)
    assert weights.shape == (keep.sum(),)


# --- Every form of bags, read by the one reader (issue 32, case 7)
FORMS = {  # the bags of ids (0..k-1, -1 for a row in none) in every form
    "list": lambda ids: ids.tolist(),
    "Series": pd.Series,
    "column": lambda ids: ids[:, None],
    "one-column DataFrame": lambda ids: pd.DataFrame({"bag": ids}),
    "one-element lists": lambda ids: [[b] for b in ids.tolist()],
    # id -1: the dropped last column
    "membership matrix": lambda ids: sp.csr_matrix(np.eye(ids.max() + 2)[ids][:, :-1]),
    "row-index lists": lambda ids: [
        np.flatnonzero(ids == b) for b in range(max(ids) + 1)
    ],
    "Bags": lambda ids: check_bags(ids, allow_unbagged=True),
}


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_of_bags_gives_what_the_ids_give(form):
    rng = np.random.RandomState(0)
    ids = rng.randint(-1, 6, 200)  # 6 bags and rows in none
    labels, values = rng.randint(0, 3, 200), rng.uniform(0, 1, 200)
    bags, n = FORMS[form](ids), len(ids)
    gaussian = dict(mechanism="discrete_gaussian", delta=1e-5)
    for release in (
        lambda b: dp_proportions(b, labels, 1.0, min_bag_size=30, random_state=0),
        lambda b: dp_proportions(b, labels, 0.5, random_state=0, **gaussian),
        lambda b: dp_bag_means(b, values, 1.0, bounds=(0, 1), random_state=0),
    ):
        pd.testing.assert_frame_equal(release(bags), release(ids))
    table = dp_bag_means(ids, values, 1.0, bounds=(0, 1), min_bag_size=30)
    assert table.attrs["suppressed"]  # some bags withheld
    expected = released_rows(ids, table)
    np.testing.assert_array_equal(released_rows(bags, table, n_samples=n), expected)
    inside = ids[ids >= 0]  # every row in a released bag
    table = dp_bag_means(inside, values[ids >= 0], 1.0, bounds=(0, 1))
    kw = dict(n_samples=len(inside), target_variance=0.1)
    got = noise_aware_bag_weights(table, FORMS[form](inside), **kw)
    expected = noise_aware_bag_weights(table, inside, target_variance=0.1)
    np.testing.assert_allclose(got, expected)


IDS = np.array([0, 0, 1, 1, 2, 2])
TABLE = dp_bag_means(IDS, np.linspace(0, 1, 6), 1.0, bounds=(0, 1), random_state=0)
CALLS = {
    "dp_proportions": lambda b, n: dp_proportions(b, [0, 1] * 3, 1.0),
    "dp_bag_means": lambda b, n: dp_bag_means(b, np.ones(6), 1.0, bounds=(0, 1)),
    "released_rows": lambda b, n: released_rows(b, TABLE, n_samples=n),
    "noise_aware_bag_weights": lambda b, n: noise_aware_bag_weights(
        TABLE, b, n_samples=n, target_variance=1
    ),
}
ALL, NO_Y = list(CALLS), list(CALLS)[2:]  # NO_Y: no y to count the rows
OVERLAP = sp.csr_matrix(np.eye(3)[IDS] + np.eye(3)[[1] * 6])
WEIGHTED = check_bags(IDS, sample_weight=[1, 2, 1, 1, 1, 1])
ERRORS = [  # name, bags, n_samples, the calls it goes to, error, message
    ("overlapping membership", OVERLAP, None, ALL, ValueError, "overlap .* disjoint"),
    ("overlapping lists", [[0, 1, 2], [2, 3], [4, 5]], 6, ALL, ValueError, "overlap"),
    ("weighted Bags", WEIGHTED, None, ALL, ValueError, "bags .* sample weights"),
    ("2-D ids", np.c_[IDS, IDS], None, ALL, ValueError, "bags must be 1-D"),
    ("None", None, None, ALL[:3], TypeError, "bags is None"),
    ("no n_samples", [[0, 1], [2, 3], [4, 5]], None, NO_Y, TypeError, "n_samples"),
    ("other n_samples", IDS, 7, NO_Y, ValueError, "bags covers 6 .* n_samples=7"),
]


@pytest.mark.parametrize(
    "call, bags, n_samples, error, match",
    [
        pytest.param(call, bags, n, error, match, id=f"{name}-{call}")
        for name, bags, n, calls, error, match in ERRORS
        for call in calls
    ],
)
def test_every_other_form_of_bags_gets_an_error_naming_it(
    call, bags, n_samples, error, match
):
    with pytest.raises(error, match=match):
        CALLS[call](bags, n_samples)
