"""NoisyProportions against hand computations and its reduction to DLLP
without noise; dp_proportions (simplex rows, seeds, errors; its calibration
is in test_privacy.py); project_to_simplex against a brute-force reference;
learning from a noisy release; the benchmark study."""

import importlib.util
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.methods import DLLP, BagBatch, NoisyProportions
from sklearn_llp.methods.functional import (
    noisy_proportion_loss,
    noisy_proportion_weights,
)
from sklearn_llp.privacy import dp_noise_scale, dp_proportions, project_to_simplex

ROOT = Path(__file__).resolve().parents[1]
SHORT = dict(max_epochs=2, random_state=0, verbose=0)
PROBS = np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]])  # rows a1, b1, a2


def tiny_problem(sample_weight=None):
    """Bag "a": 4 rows, proportions [0.75, 0.25]; bag "b": 2 rows, [0, 1].
    The batch holds rows a1, b1, a2, bag "b" first (looked up by bag_index)."""
    ids = np.array(["a", "b", "a", "a", "b", "a"])
    props = np.where((ids == "a")[:, None], [0.75, 0.25], [0.0, 1.0])
    bags = check_bags(ids, props, sample_weight=sample_weight)
    weights = None if sample_weight is None else sample_weight[:3]
    batch = BagBatch(
        segments=torch.tensor([1, 0, 1]),
        bag_props=torch.tensor([[0.0, 1.0], [0.75, 0.25]], dtype=torch.float64),
        bag_index=torch.tensor([1, 0]),
        weights=None if weights is None else torch.tensor(weights),
    )
    return bags, torch.tensor(np.log(PROBS)), batch


@pytest.mark.parametrize("weighting", ["likelihood", "reliability"])
@pytest.mark.parametrize(
    "noise, scale", [("laplace", 1.0), ("gaussian", 1.0), ("laplace", 0.0)]
)
def test_loss_of_a_tiny_batch_by_hand(weighting, noise, scale):
    bags, logits, batch = tiny_problem()
    method = NoisyProportions(noise=noise, scale=scale, weighting=weighting)
    method.prepare(bags, None)
    # prior [0.5, 0.5]: tau 0.25; count variance 2 b^2 (Laplace) or b^2; sizes
    # 4 and 2; r = n tau / (n tau + (1 - 1/C) v) with (1 - 1/C) = 1/2
    v = (2.0 if noise == "laplace" else 1.0) * scale**2
    sizes = np.array([4.0, 2.0])
    r = sizes * 0.25 / (sizes * 0.25 + 0.5 * v)
    if noise == "laplace" and scale:  # v = 2: r = n / (n + 4)
        np.testing.assert_allclose(r, [4 / 8, 2 / 6])
    w = r * sizes if weighting == "likelihood" else r  # no noise: n or 1
    np.testing.assert_allclose(method.bag_weights_, w)
    assert method.label_variance_ == 0.25
    mean_a = (PROBS[0] + PROBS[2]) / 2  # [0.45, 0.55]
    ce_a = -(0.75 * np.log(mean_a[0]) + 0.25 * np.log(mean_a[1]))
    ce_b = -np.log(PROBS[1, 1])
    expected = (w[0] * ce_a + w[1] * ce_b) / (2 * w.mean())
    loss = method.get_loss(None, None, logits, batch, 0, 1)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    args = (batch.segments, batch.bag_props, torch.tensor(w[[1, 0]]), w.mean())
    direct = noisy_proportion_loss(logits, *args)  # the building block
    assert direct.item() == pytest.approx(expected, rel=1e-6)


def test_loss_uses_a_global_normaliser_not_the_batch_sum():
    # a batch of one unreliable bag takes a small step, not a full one
    bags, logits, _ = tiny_problem()
    method = NoisyProportions(scale=3.0, weighting="reliability").prepare(bags, None)
    only_b = BagBatch(
        segments=torch.tensor([0]),
        bag_props=torch.tensor([[0.0, 1.0]], dtype=torch.float64),
        bag_index=torch.tensor([1]),
    )
    loss = method.get_loss(None, None, logits[1:2], only_b, 0, 1)
    w, ce_b = method.bag_weights_, -np.log(PROBS[1, 1])
    assert w[1] < w[0]
    assert loss.item() == pytest.approx(ce_b * w[1] / w.mean(), rel=1e-6)
    assert loss.item() < ce_b


def test_weights_use_total_sample_weights_and_reduce_to_dllp_without_noise():
    weights = np.array([2.0, 1.0, 2.0, 2.0, 1.0, 2.0])
    bags, logits, batch = tiny_problem(weights)
    method = NoisyProportions(scale=1.0).prepare(bags, None)
    # bag a weighs 8, bag b 2: prior (8 [.75, .25] + 2 [0, 1]) / 10 = [.6, .4]
    sizes = np.array([8.0, 2.0])
    r = sizes * 0.24 / (sizes * 0.24 + 1.0)
    np.testing.assert_allclose(method.reliability_, r)
    np.testing.assert_allclose(method.bag_weights_, sizes * r)
    # no noise, weighted by reliability: DLLP exactly, bags of any size
    for sample_weight in (None, weights):
        bags, logits, batch = tiny_problem(sample_weight)
        method = NoisyProportions(scale=0.0, weighting="reliability")
        np.testing.assert_array_equal(method.prepare(bags, None).bag_weights_, 1.0)
        loss = method.get_loss(None, None, logits, batch, 0, 1)
        assert loss.item() == DLLP().get_loss(None, None, logits, batch, 0, 1).item()


def test_zero_noise_fit_is_the_dllp_fit(small_bags):
    X, bags, props, _ = small_bags
    kwargs = dict(max_epochs=3, random_state=0, verbose=0)
    dllp = LLPClassifier(method="dllp", **kwargs).fit(X, bags, props)
    # both weightings; bags of equal size (10 each) for "likelihood"
    for weighting in ("reliability", "likelihood"):
        noisy = LLPClassifier(
            method="noisy", method__scale=0.0, method__weighting=weighting, **kwargs
        ).fit(X, bags, props)
        np.testing.assert_array_equal(dllp.predict_proba(X), noisy.predict_proba(X))


def test_weights_follow_the_sizes():
    sizes = np.array([1, 2, 5, 10, 50, 100, 1000, 10000])
    tau, v = 0.18, 50.0
    r = noisy_proportion_weights(sizes, v, tau, 2, "reliability")
    w = noisy_proportion_weights(sizes, v, tau, 2)
    assert np.all(np.diff(r) > 0) and np.all(np.diff(w) > 0)
    np.testing.assert_allclose(w, sizes * r)
    # half at n = (1 - 1/C) v / tau; n tau / ((1 - 1/C) v) for small bags;
    # tending to 1 for large ones
    assert noisy_proportion_weights([0.5 * v / tau], v, tau, 2, "reliability") == 0.5
    np.testing.assert_allclose(r[0], tau / (0.5 * v), rtol=0.01)
    assert 0 < r[0] and r[-1] > 0.98
    # more classes: (1 - 1/C) of the noise; no noise: every weight 1
    assert np.all(noisy_proportion_weights(sizes, v, tau, 3, "reliability") < r)
    assert np.all(noisy_proportion_weights(sizes, 0.0, tau, 2, "reliability") == 1)
    # through prepare: a bag's weight depends on its size, not its order
    ids = np.repeat([0, 1, 2, 3], [30, 3, 300, 10])
    props = np.array([[0.4, 0.6], [1 / 3, 2 / 3], [0.5, 0.5], [0.6, 0.4]])
    method = NoisyProportions(scale=2.0).prepare(check_bags(ids, props[ids]), None)
    assert list(np.argsort(method.bag_weights_)) == [1, 3, 0, 2]
    assert list(np.argsort(method.reliability_)) == [1, 3, 0, 2]


def test_per_bag_scales_are_looked_up_by_bag_id(small_bags):
    bags, *_ = tiny_problem()
    method = NoisyProportions(scale={"b": 2.0, "a": 0.0}).prepare(bags, None)
    np.testing.assert_allclose(method.count_variance_, [0.0, 8.0])
    assert method.reliability_[0] == 1.0 and method.reliability_[1] < 1.0
    method = NoisyProportions(scale=pd.Series({"a": 1.0, "b": 1.0, "c": 5.0}))
    np.testing.assert_allclose(method.prepare(bags, None).count_variance_, [2.0, 2.0])
    with pytest.raises(ValueError, match=r"method__scale.*1 training bag.*'b'"):
        NoisyProportions(scale={"a": 1.0}).prepare(bags, None)
    with pytest.raises(ValueError, match="method__scale"):
        NoisyProportions(scale={"a": 1.0, "b": -1.0}).prepare(bags, None)
    # a validation split: the method sees the training bags only
    X, bags, props, _ = small_bags
    scales = {b: 1.0 + b for b in range(12)}
    clf = LLPClassifier(method="noisy", method__scale=scales, **SHORT)
    clf.set_params(validation_fraction=0.25).fit(X, bags, props)
    assert len(clf.method_.bag_weights_) == 9  # 3 of 12 bags held out
    assert np.isfinite(clf.history[-1, "valid_loss"])


# --- dp_proportions and dp_noise_scale ---
def census(n_bags=40, seed=0):
    """Bags of 5 to 200 rows, three classes in bag-specific mixes."""
    rng = np.random.RandomState(seed)
    sizes = rng.randint(5, 201, n_bags)
    ids = np.repeat(np.arange(n_bags), sizes)
    mixes = rng.dirichlet([1.0, 1.0, 1.0], n_bags)
    y = np.array(["a", "b", "c"])[
        [rng.choice(3, p=mixes[b]) for b in ids]  # one draw per row
    ]
    return ids, y, sizes


GAUSSIANS = ("analytic_gaussian", "gaussian")


def true_counts(ids, y):
    return pd.crosstab(ids, y).to_numpy(dtype=float)


def test_noise_scales():
    # the calibrations are checked in test_privacy.py; here what is left
    assert dp_noise_scale(np.inf) == 0.0
    for epsilon in (0.1, 0.5):  # the analytic Gaussian needs less noise
        scales = [dp_noise_scale(epsilon, m, delta=1e-5) for m in GAUSSIANS]
        assert scales[0] < scales[1]


@pytest.mark.parametrize("post_processing", ["project", "clip"])
@pytest.mark.parametrize("epsilon", [0.01, 0.3, np.inf])
def test_rows_on_the_simplex_and_accepted_as_props(post_processing, epsilon):
    ids, y, _ = census()
    table = dp_proportions(
        ids, y, epsilon, post_processing=post_processing, random_state=0
    )
    assert list(table.columns) == ["a", "b", "c"]
    assert table.index.name == "bag" and list(table.index) == list(range(40))
    values = table.to_numpy()
    assert np.all(values >= 0)
    np.testing.assert_allclose(values.sum(axis=1), 1.0, atol=1e-12)
    bags = check_bags(ids, table)  # a per-bag props table
    if np.isinf(epsilon):
        exact = true_counts(ids, y)
        np.testing.assert_allclose(bags.props, exact / exact.sum(1, keepdims=True))


def test_projection_halves_the_binary_noise():
    # a bag of n with share p: projected share has noise variance b^2 / n^2
    ids = np.repeat(np.arange(400), 100)
    y = np.tile(np.r_[np.zeros(50), np.ones(50)], 400)
    table = dp_proportions(ids, y, 2.0, random_state=0)  # b = 2 / 2
    shares = table[1.0].to_numpy()
    assert shares.var() == pytest.approx((1.0 / 100) ** 2, rel=0.2)
    assert shares.mean() == pytest.approx(0.5, abs=0.002)


def test_seeded_reproducibility():
    ids, y, _ = census()
    release = [dp_proportions(ids, y, 0.2, random_state=seed) for seed in (3, 3, 4)]
    pd.testing.assert_frame_equal(release[0], release[1])
    assert not np.allclose(release[0].to_numpy(), release[2].to_numpy())
    rng = np.random.RandomState(7)  # a generator advances
    first, second = (dp_proportions(ids, y, 0.2, random_state=rng) for _ in "ab")
    assert not np.allclose(first.to_numpy(), second.to_numpy())


def test_unbagged_rows_and_classes():
    ids = np.array([0, 0, 1, 1, -1, 1])
    y = np.array(["x", "y", "y", "y", "z", "y"])
    table = dp_proportions(ids, y, np.inf, classes=["y", "x", "z"])
    assert list(table.index) == [0, 1] and list(table.columns) == ["y", "x", "z"]
    np.testing.assert_allclose(table.to_numpy(), [[0.5, 0.5, 0.0], [1.0, 0.0, 0.0]])
    # composite ids (tuples), bags of sizes 2 and 3: sizes in the table's order
    keys = [("b", 2), ("a", 1), ("b", 2), ("a", 1), ("b", 2)]
    table = dp_proportions(keys, [1, 0, 1, 1, 0], np.inf)
    assert list(table.index) == [("a", 1), ("b", 2)]
    np.testing.assert_allclose(table.to_numpy(), [[0.5, 0.5], [1 / 3, 2 / 3]])


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
    ids, y, _ = census(n_bags=3)
    with pytest.raises(ValueError, match=name):
        dp_proportions(ids, y, **kwargs)
    if "post_processing" not in kwargs:
        with pytest.raises(ValueError, match=name):
            dp_noise_scale(**kwargs)


# --- project_to_simplex ---
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
    for n_classes in (1, 2, 3, 5):
        v = np.concatenate(
            [
                rng.normal(0.3, 1.0, (200, n_classes)),
                rng.normal(0.0, 30.0, (50, n_classes)),  # large noise
                rng.randint(-2, 3, (50, n_classes)) / 2.0,  # ties
            ]
        )
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
    np.testing.assert_array_equal(
        project_to_simplex(stack),
        project_to_simplex(stack.reshape(-1, 3)).reshape(4, 6, 3),
    )
    np.testing.assert_allclose(project_to_simplex([0.7, 0.5]), [0.6, 0.4])
    raw = pd.DataFrame([[1.2, -0.4], [0.3, 0.3]], [0, 1], ["no", "yes"])
    projected = project_to_simplex(raw)
    pd.testing.assert_frame_equal(
        projected, pd.DataFrame([[1.0, 0.0], [0.5, 0.5]], [0, 1], ["no", "yes"])
    )
    # the result is accepted by check_bags (negative shares, rows not summing
    # to 1 are not)
    with pytest.raises(ValueError):
        check_bags([0, 0, 1, 1], raw)
    check_bags([0, 0, 1, 1], projected)


# --- Learning ---
def test_learns_from_a_moderately_noisy_release():
    """Two classes in 4-D, bags of very different sizes (3 to 300), their
    counts released with Laplace noise of epsilon = 0.4 (scale 2 / 0.4 = 5)."""
    rng = np.random.RandomState(0)
    sizes = np.r_[np.full(40, 3), np.full(10, 30), np.full(6, 300)]
    ids = np.repeat(np.arange(len(sizes)), sizes)
    bag_rate = rng.uniform(0.1, 0.9, len(sizes))[ids]
    y = (rng.uniform(size=len(ids)) < bag_rate).astype(int)
    X = rng.normal(size=(len(ids), 4)) + 1.5 * y[:, None] * np.array([1, 1, 0, 0])
    X_test = rng.normal(size=(2000, 4))
    y_test = rng.randint(0, 2, 2000)
    X_test += 1.5 * y_test[:, None] * np.array([1, 1, 0, 0])
    table = dp_proportions(ids, y, 0.4, random_state=0)
    assert table.attrs["noise_scale"] == 5.0
    noise, scale = table.attrs["noise"], table.attrs["noise_scale"]
    clf = LLPClassifier(method="noisy", method__noise=noise, method__scale=scale)
    clf.set_params(max_epochs=15, random_state=0, verbose=0).fit(X, ids, table)
    assert clf.method_.reliability_[:40].max() < 0.2  # bags of 3: mostly noise
    assert clf.method_.reliability_[-6:].min() > 0.7  # bags of 300: trusted
    accuracy = np.mean(clf.predict(X_test) == y_test)
    assert accuracy > 0.8  # Bayes: about 0.86; measured 0.842
    # DLLP on the same release trusts the 40 noise-dominated bags (seeds
    # 0/1/2: 0.75, 0.49, 0.54; this method 0.84, 0.84, 0.83)
    dllp = LLPClassifier(method="dllp", max_epochs=15, random_state=0, verbose=0)
    dllp.fit(X, ids, table)
    assert accuracy > np.mean(dllp.predict(X_test) == y_test) + 0.05


def load_benchmark():
    script = ROOT / "benchmarks" / "studies" / "noisy_proportions.py"
    spec = importlib.util.spec_from_file_location("benchmark_noisy", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_script_quick(tmp_path):
    module = load_benchmark()
    module.main(["--quick", "--epsilons", "0.1,inf", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "noisy_proportions.json").read_text())
    assert {r["method"] for r in payload["runs"]} == {"dllp", "size", "noisy"}
    assert {r["epsilon"] for r in payload["runs"]} == {0.1, "inf"}
    assert (tmp_path / "noisy_proportions.png").stat().st_size > 0
    assert "| inf (exact) |" in (tmp_path / "noisy_proportions.md").read_text()
    assert payload["meta"]["sensitivity"] == 2.0  # replace-one accounting
    module.main(["--resummarise", "--out", str(tmp_path)])
    assert "earlier accounting" not in (tmp_path / "noisy_proportions.md").read_text()


def test_benchmark_relabels_the_committed_run_of_the_earlier_accounting(tmp_path):
    """The committed run used Laplace scale 1 / epsilon at epsilon 0.05 .. 10
    (sensitivity 1); the new grid has the same scales at twice the epsilon,
    dp_proportions draws the same noise there (same seed, same scale), and
    --resummarise relabels a json written before the fix."""
    module = load_benchmark()
    old = [0.05, 0.1, 0.3, 1.0, 3.0, 10.0]
    new = [e for e in module.EPSILONS if math.isfinite(e)]
    assert new == pytest.approx([2 * e for e in old])
    for e_old, e_new in zip(old, new):
        assert dp_noise_scale(e_new) == pytest.approx(1 / e_old)
    ids, y, _ = census(n_bags=5)
    counts = true_counts(ids, y)
    _, noisy = dp_proportions(ids, y, 0.2, return_counts=True, random_state=1)
    old_release = counts + np.random.RandomState(1).laplace(0, 1 / 0.1, counts.shape)
    np.testing.assert_allclose(noisy.to_numpy(), old_release, rtol=1e-12)
    committed = ROOT / "benchmarks" / "results" / "noisy_proportions.json"
    payload = json.loads(committed.read_text())
    payload["meta"].pop("sensitivity", None)  # as written before the fix
    payload["meta"].pop("relabelled_from_sensitivity", None)
    (tmp_path / "noisy_proportions.json").write_text(json.dumps(payload))
    relabelled = module.main(["--resummarise", "--out", str(tmp_path)])
    old = sorted({r["epsilon"] for r in payload["summary"]}, key=float)
    new = sorted({r["epsilon"] for r in relabelled["summary"]})
    assert new == [2 * float(e) for e in old]  # "inf" * 2 = inf
    text = (tmp_path / "noisy_proportions.md").read_text()
    assert "earlier accounting (sensitivity 1" in text
    for e in old:  # the same noise: share sd 1 / (50 e) = 2 / (50 (2 e))
        if e != "inf":
            assert f"| {2 * float(e):g} | {1 / (50 * float(e)):.3f} |" in text


def test_benchmark_digits_study_quick(tmp_path):
    """The release-formats study: integer noise, suppression, rows dropped."""
    module = load_benchmark()
    payload = module.main(["--study", "digits", "--quick", "--out", str(tmp_path)])
    meta = payload["meta"]
    assert meta["mechanism"] == "discrete_laplace" and meta["sensitivity"] == 2.0
    suppression = payload["suppression_sweep"]
    assert {r["min_bag_size"] for r in suppression} == {1, 10}
    sizes = np.array(meta["sizes"])
    for r in suppression:  # the rows of the withheld bags were dropped
        assert r["rows_kept"] == pytest.approx(
            sizes[sizes >= r["min_bag_size"]].sum() / sizes.sum()
        )
    assert {r["method"] for r in payload["epsilon_sweep"]} == {"dllp", "size", "noisy"}
    text = (tmp_path / "noisy_proportions.digits.md").read_text()
    assert "| 10 | " in text and "| inf (exact) |" in text
    assert (tmp_path / "noisy_proportions.digits.png").stat().st_size > 0


def test_digits_numbers_quoted_in_the_docs_are_the_committed_ones():
    """README and user guide quote the committed digits study exactly."""
    payload = json.loads(
        (ROOT / "benchmarks" / "results" / "noisy_proportions.digits.json").read_text()
    )
    readme = (ROOT / "README.md").read_text()
    guide = (ROOT / "docs" / "user_guide" / "noisy_proportions.rst").read_text()

    def cell(row):
        return f"{row['accuracy']:.3f} ± {row['accuracy_std']:.3f}"

    for row in payload["epsilon_sweep"]:
        assert cell(row) in readme and cell(row) in guide, row
    for row in payload["suppression_sweep"]:
        assert cell(row) in guide, row
        if row["min_bag_size"] != 5:  # the README shows 1, 10, 20, 40
            assert cell(row) in readme, row
