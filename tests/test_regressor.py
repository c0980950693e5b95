"""``LLPRegressor`` beyond what it shares with classification
(``test_conformance.py``)."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split

from sklearn_llp import LLPRegressor
from sklearn_llp.bags import (
    FeatureBagGenerator,
    KMeansBagGenerator,
    UniformBagGenerator,
)
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import FewBagsWarning, IdentifiabilityWarning
from sklearn_llp.methods import (
    BagBatch,
    BagLoss,
    InstanceLoss,
    InterpolatingLoss,
    available_methods,
    make_method,
)
from sklearn_llp.methods.functional import interpolating_loss, regression_losses


def _synthetic(n=1536, seed=0):
    """A nonlinear target of 5 standard normal features, small noise."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 - X[:, 2] + 0.5 * X[:, 3] * X[:, 4]
    return X, y + 0.1 * rng.normal(size=n)


def _bag_means(bags, y):
    codes = np.unique(bags, return_inverse=True)[1].ravel()
    return (np.bincount(codes, weights=y) / np.bincount(codes))[codes]


@pytest.fixture
def linear_bags():
    """320 rows of a linear target in 40 bags of 8, with bag means."""
    rng = np.random.RandomState(0)
    X = rng.normal(size=(320, 3))
    y = X @ [1.0, -2.0, 0.5] + 3.0 + 0.1 * rng.normal(size=320)
    bags = rng.permutation(320) // 8
    return X, bags, _bag_means(bags, y), y


def _small(**kwargs):
    params = dict(module__hidden_sizes=(16,), max_epochs=5, lr=0.01, verbose=0)
    return LLPRegressor(**{**params, "random_state": 0, **kwargs})


# --- the losses, by hand
PRED = torch.tensor([1.0, 3.0, 5.0, 2.0])
SEGMENTS = torch.tensor([0, 0, 1, 1])
MEANS = torch.tensor([1.0, 4.0])
WEIGHTS = torch.tensor([1.0, 3.0, 1.0, 1.0])


def test_losses_match_a_hand_computation():
    # unweighted: bag means of the predictions 2 and 3.5, bags of 2 rows
    bag, instance = regression_losses(PRED, SEGMENTS, MEANS)
    assert float(bag) == pytest.approx((2 * 1.0**2 + 2 * 0.5**2) / 4)
    assert float(instance) == pytest.approx((0 + 4 + 1 + 4) / 4)
    # weighted: bag 0 has weight 4 and mean prediction (1 + 9) / 4 = 2.5
    bag, instance = regression_losses(PRED, SEGMENTS, MEANS, WEIGHTS)
    assert float(bag) == pytest.approx((4 * 1.5**2 + 2 * 0.5**2) / 6)
    assert float(instance) == pytest.approx((0 + 3 * 4 + 1 + 4) / 6)
    # instance = bag + the within-bag (weighted) variance of the predictions
    within = (1.5**2 + 3 * 0.5**2 + 1.5**2 + 1.5**2) / 6
    assert float(instance) == pytest.approx(float(bag) + within)
    # the interpolation: bag + lam * instance
    for lam in (0.0, 0.25, 1.0):
        loss = interpolating_loss(PRED, SEGMENTS, MEANS, lam, WEIGHTS)
        assert float(loss) == pytest.approx(9.5 / 6 + lam * 17 / 6)
    # the method objects compute the same
    batch = BagBatch(SEGMENTS, MEANS[:, None], torch.arange(2), weights=WEIGHTS)
    cases = [(BagLoss(), 9.5 / 6), (InstanceLoss(), 17 / 6)]
    cases += [(InterpolatingLoss(lam=0.5), 9.5 / 6 + 0.5 * 17 / 6)]
    for method, expected in cases:
        loss = method.get_loss(None, None, PRED[:, None], batch, 0, 1)
        assert float(loss) == pytest.approx(expected)
    # bags of one row: both are the mean squared error
    rng = np.random.RandomState(0)
    pred, y = torch.tensor(rng.normal(size=7)), torch.tensor(rng.normal(size=7))
    for loss in regression_losses(pred, torch.arange(7), y):
        assert float(loss) == pytest.approx(float(((pred - y) ** 2).mean()))


def test_interpolating_lam_auto_is_a_quarter_over_the_mean_bag_size():
    # the measured rule (benchmarks/results/regression_defaults.md): 1 / (4 k)
    bags = check_bags(np.repeat([0, 1, 2], [2, 4, 6]), targets={0: 1.0, 1: 2.0, 2: 3.0})
    method = InterpolatingLoss().prepare(bags, np.random.RandomState(0))
    assert method.lam_ == pytest.approx(0.25 * 3 / 12)
    fixed = InterpolatingLoss(lam=0.7).prepare(bags, np.random.RandomState(0))
    assert fixed.lam_ == 0.7


def test_losses_of_overlapping_bags_and_their_gradient():
    # rows 0..2; bag 0 = {0, 1}, bag 1 = {1, 2}: pairs (0,0) (0,1) (1,1) (1,2)
    pred = torch.tensor([[1.0], [3.0], [6.0]], requires_grad=True)
    members = torch.tensor([0, 1, 1, 2])
    segments = torch.tensor([0, 0, 1, 1])
    means = torch.tensor([1.0, 4.0])
    bag, instance = regression_losses(pred, segments, means, members=members)
    # bag means of the predictions 2 and 4.5
    assert bag.item() == pytest.approx((2 * 1.0 + 2 * 0.25) / 4)
    assert instance.item() == pytest.approx((0 + 4 + 1 + 4) / 4)
    bag.backward()
    # d/df_i of sum_a 2 (y_a - mean_a)^2 / 4, through both bags for row 1
    expected = [2 * 2 * (2 - 1) / 2 / 4, (2 * 2 * 1 / 2 + 2 * 2 * 0.5 / 2) / 4, 0.5 / 2]
    np.testing.assert_allclose(pred.grad[:, 0].numpy(), expected, rtol=1e-6)


def test_regression_methods_have_their_own_registry():
    assert available_methods("regression") == ["bag", "instance", "interpolating"]
    assert "bag" not in available_methods()
    assert isinstance(make_method("interpolating", {"lam": 0.3}), InterpolatingLoss)
    with pytest.raises(ValueError, match="lam"):
        make_method("interpolating", {"lam": -1.0}, task="regression")
    with pytest.raises(ValueError, match="classification method"):
        make_method("vat", task="regression")
    with pytest.raises(ValueError, match="regression method"):
        make_method(BagLoss(), task="classification")


# --- learning
@pytest.mark.slow
def test_learns_a_nonlinear_target_from_bags_of_16():
    X, y = _synthetic()
    X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
    bags = np.random.RandomState(0).permutation(len(X_train)) // 16
    means = _bag_means(bags, y_train)
    params = dict(module__hidden_sizes=(64, 64), max_epochs=40, lr=0.01)
    reg = _small(**params).fit(X_train, bags, means)
    bag_r2 = r2_score(y_test, reg.predict(X_test))
    # 72 bag means only; with every instance target the same network reaches
    # about 0.98, predicting the mean 0, and the instance loss, whose
    # minimiser is shrunk towards the bag means, about 0.1
    assert bag_r2 > 0.7
    assert reg.score(X_train, bags, means) > 0.9
    instance = _small(method="instance", **params).fit(X_train, bags, means)
    assert r2_score(y_test, instance.predict(X_test)) < bag_r2 - 0.3


@pytest.mark.slow
def test_defaults_learn_a_noisy_nonlinear_target():
    # 72 random bags of 16, noise sd 1: early stopping on (>= 50 bags),
    # restoring its best epoch; test R^2 measured 0.414: fails if the
    # defaults regress
    X, y = _synthetic(n=1536)
    y = y + np.random.RandomState(1).normal(size=len(y))
    X_test, y_test, X, y = X[1152:], y[1152:], X[:1152], y[:1152]
    bags = np.random.RandomState(0).permutation(1152) // 16
    reg = _small(module__hidden_sizes=(32, 32), max_epochs=40, lr=0.01)
    reg.fit(X, bags, _bag_means(bags, y))
    assert reg.do_early_stopping_ and reg.best_epoch_ is not None
    assert r2_score(y_test, reg.predict(X_test)) > 0.38


def test_auto_early_stopping_refits_on_every_bag_for_the_chosen_epochs(capsys):
    """early_stopping="auto" holds bags out only to choose the epochs: a fit
    that never stopped (its held-out error never rose beyond its noise) is
    then the fit on every bag for ``best_epoch_`` epochs, and the stopping
    fit's history is kept. A fresh warm_start fit is a fresh fit: it refits
    too, and the table says so once, in its words."""
    X, y = _synthetic(n=1152)
    bags = np.random.RandomState(0).permutation(1152) // 16  # 72 bags
    means = _bag_means(bags, y)
    reg = _small(max_epochs=12).fit(X, bags, means)
    epochs = reg.best_epoch_
    assert reg.do_early_stopping_ and 1 <= epochs <= 12 and reg.fit_plan_.refit
    capsys.readouterr()
    warm = _small(max_epochs=12, warm_start=True, verbose=1).fit(X, bags, means)
    np.testing.assert_array_equal(warm.predict(X), reg.predict(X))
    out = capsys.readouterr().out
    assert out.count("refitting afresh on every bag") == 1, out
    assert "Re-initializing" not in out and warm.warm_start
    assert not dict(reg.callbacks_)["early_stopping"].stopped_
    assert "valid_mse" in reg.stopping_history_[-1]
    assert len(reg.history) == epochs and "valid_mse" not in reg.history[-1]
    assert len(np.unique(reg.train_bag_ids_)) == 72
    plain = _small(max_epochs=epochs, early_stopping=False).fit(X, bags, means)
    np.testing.assert_array_equal(reg.predict(X), plain.predict(X))
    # an explicit early_stopping=True keeps the held-out model
    held = _small(max_epochs=12, early_stopping=True).fit(X, bags, means)
    assert held.stopping_history_ is None and len(np.unique(held.train_bag_ids_)) < 72


def test_few_bags_warn_that_early_stopping_stays_off(linear_bags):
    X, bags, means, _ = linear_bags  # 40 bags: 4 held out at 0.1, under 5
    with pytest.warns(FewBagsWarning, match="stays off"):
        reg = _small(max_epochs=1).fit(X, bags, means)
    assert not reg.do_early_stopping_
    with warnings.catch_warnings():
        warnings.simplefilter("error", FewBagsWarning)
        _small(max_epochs=1, early_stopping=False).fit(X, bags, means)


@pytest.mark.parametrize("overlapping", [False, True])
@pytest.mark.slow
def test_learns_a_linear_target_in_original_units(linear_bags, overlapping):
    X, bags, means, y = linear_bags
    if overlapping:  # the 40 bags, and 20 more that overlap them
        bags = [np.flatnonzero(bags == b) for b in range(40)]
        bags += [np.arange(i, i + 8) for i in range(0, 312, 16)]
        means = np.array([y[rows].mean() for rows in bags])
    linear = dict(module__hidden_sizes=(), batch_size=32, lr=0.03, max_epochs=40)
    reg = _small(**linear).fit(X, bags, means)
    assert r2_score(y, reg.predict(X)) > (0.98 if overlapping else 0.99)
    weights = reg.module_.layers[0].weight.detach().numpy()[0] * reg.target_scale_
    np.testing.assert_allclose(weights, [1.0, -2.0, 0.5], atol=0.1)
    if not overlapping:
        # the standardisation: size-weighted mean and spread of the bag means
        assert reg.target_mean_ == pytest.approx(y.mean())
        assert reg.target_scale_ == pytest.approx(np.unique(means).std(), rel=1e-9)


def test_warm_start_keeps_the_target_standardisation(linear_bags):
    X, bags, means, _ = linear_bags
    reg = _small(warm_start=True).fit(X, bags, means)
    scale = reg.target_scale_
    reg.fit(X, bags, means * 10)
    assert reg.target_scale_ == scale
    reg.partial_fit(X, bags, means)
    assert reg.n_train_steps_ > 0


def test_unidentifiable_feature_warns():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 2))
    X[:, 1] = np.tile([0.0, 1.0], 20)  # every bag of 2 holds one 0 and one 1
    bags = np.arange(40) // 2
    means = _bag_means(bags, X[:, 0])
    frame, sparse = pd.DataFrame(X, columns=["a", "b"]), sp.csr_matrix(X)
    for form, named in [(X, r"\[1\]"), (frame, r"\['b'\]"), (sparse, r"\[1\]")]:
        with pytest.warns(IdentifiabilityWarning, match=named):
            _small(max_epochs=1).fit(form, bags, means)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        _small(max_epochs=1).fit(X[:, :1], bags, means)


# --- bad input
# (the reader's refusals given by every estimator alike: test_conformance.py)
@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda b, t: (b, np.c_[t, t]), ValueError, "must be 1-D"),
        (lambda b, t: (b, ["a"] * 320), TypeError, "targets must hold numbers"),
    ],
)
def test_bad_input_is_refused_before_training(linear_bags, change, error, match):
    X, bags, means, _ = linear_bags
    reg = _small()
    bags, targets = change(bags, means)
    with pytest.raises(error, match=match):
        reg.fit(X, bags, targets)
    assert not hasattr(reg, "target_mean_")


# --- bag generators: means of a continuous y
@pytest.mark.parametrize(
    "generator",
    [UniformBagGenerator(4, random_state=0), KMeansBagGenerator(3, random_state=0)]
    + [FeatureBagGenerator([0], n_bins=3)],
)
def test_generators_give_bag_means_and_never_guess_the_task(generator):
    X = np.random.RandomState(0).normal(size=(30, 2))
    y = 1.5 * X[:, 0] + 0.25
    bags, means = generator.make_bag_means(X, y)
    assert means.shape == (30,) and not hasattr(generator, "classes_")
    kept = bags >= 0
    np.testing.assert_allclose(means[kept], _bag_means(bags[kept], y[kept]))
    assert np.isnan(means[~kept]).all()
    # make_bags is for class labels: a continuous target is refused, and a
    # count of many values is read as labels with a warning
    with pytest.raises(ValueError, match="non-integral .* make_bag_means"):
        generator.make_bags(X, y)
    with pytest.warns(UserWarning, match="30 distinct numbers.*make_bag_means"):
        _, props = generator.make_bags(X, np.arange(30) * 2.0)
    assert props.shape == (30, 30)
    _, props = generator.make_bags(X, (y > 0).astype(int))
    assert props.shape == (30, 2)
    with pytest.raises(ValueError, match="y contains NaN"):
        generator.make_bag_means(X, np.where(np.arange(30) == 3, np.nan, y))


def test_per_bag_sums_and_sizes_are_the_means():
    """A table of bag means and sizes gives the bags of those means; the
    sizes of a table of totals may differ from the rows present (a sample).
    (A table of totals and sizes in general: tests/test_conformance.py.)"""
    ids = np.array(["a", "a", "b", "b", "b", "c"])
    means = {"a": 2.5, "b": -1.0, "c": 4.0}
    table = pd.DataFrame({"mean": means.values(), "size": [2, 3, 1]}, index=list("abc"))
    expected = check_bags(ids, targets=means).props
    np.testing.assert_array_equal(check_bags(ids, targets=table).props, expected)
    sums = pd.DataFrame({"sum": [5.0, -3.0, 4.0], "size": [2, 3, 1]}, index=list("abc"))
    sampled = check_bags(ids, targets=sums.assign(size=[4, 6, 2]))
    np.testing.assert_allclose(sampled.props[:, 0], [1.25, -0.5, 2.0])
