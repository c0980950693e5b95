"""``LLPRegressor``: learning from bag means.

The losses against hand computations, learning on a nonlinear target in
bags of 16, the equivalences of the accepted forms of bags and targets,
scikit-learn's contracts (clone, pickle, Pipeline, GridSearchCV with
``BagKFold`` and the bag R^2 scorer, metadata routing, common checks),
bad input, the bag regression metrics and scorers, and the bag generators'
means for a continuous ``y``.
"""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
import torch
from sklearn.base import clone
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_llp import LLPRegressor
from sklearn_llp.bags import (
    FeatureBagGenerator,
    KMeansBagGenerator,
    UniformBagGenerator,
)
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import IdentifiabilityWarning
from sklearn_llp.methods import (
    BagBatch,
    BagLoss,
    InstanceLoss,
    InterpolatingLoss,
    available_methods,
    make_method,
)
from sklearn_llp.methods.functional import interpolating_loss, regression_losses
from sklearn_llp.metrics import (
    bag_mean_absolute_error,
    bag_mean_squared_error,
    bag_r2_score,
    bag_r2_scorer,
    bag_table,
    make_bag_scorer,
)
from sklearn_llp.model_selection import BagKFold


def _synthetic(n=1536, seed=0):
    """A nonlinear target of 5 standard normal features, small noise."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 5))
    y = (
        np.sin(2 * X[:, 0])
        + X[:, 1] ** 2
        - X[:, 2]
        + 0.5 * X[:, 3] * X[:, 4]
        + 0.1 * rng.normal(size=n)
    )
    return X, y


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
    params = dict(
        module__hidden_sizes=(16,),
        max_epochs=5,
        lr=0.01,
        verbose=0,
        random_state=0,
    )
    params.update(kwargs)
    return LLPRegressor(**params)


# ----------------------------------------------------------------------
# the losses, by hand
# ----------------------------------------------------------------------
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
    # the interpolation, and its ends
    rho = 0.25
    expected = (1 - rho) * 9.5 / 6 + rho * 17 / 6
    loss = interpolating_loss(PRED, SEGMENTS, MEANS, rho, WEIGHTS)
    assert float(loss) == pytest.approx(expected)
    assert float(loss) == pytest.approx(9.5 / 6 + rho * within)
    assert float(interpolating_loss(PRED, SEGMENTS, MEANS, 0.0, WEIGHTS)) == (
        pytest.approx(9.5 / 6)
    )
    assert float(interpolating_loss(PRED, SEGMENTS, MEANS, 1.0, WEIGHTS)) == (
        pytest.approx(17 / 6)
    )


def test_method_objects_compute_the_same_losses():
    batch = BagBatch(SEGMENTS, MEANS[:, None], torch.arange(2), weights=WEIGHTS)
    logits = PRED[:, None]
    assert float(BagLoss().get_loss(None, None, logits, batch, 0, 1)) == (
        pytest.approx(9.5 / 6)
    )
    assert float(InstanceLoss().get_loss(None, None, logits, batch, 0, 1)) == (
        pytest.approx(17 / 6)
    )
    loss = InterpolatingLoss(rho=0.5).get_loss(None, None, logits, batch, 0, 1)
    assert float(loss) == pytest.approx((9.5 / 6 + 17 / 6) / 2)


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


def test_singleton_bags_give_the_mean_squared_error():
    rng = np.random.RandomState(0)
    pred, y = torch.tensor(rng.normal(size=7)), torch.tensor(rng.normal(size=7))
    segments = torch.arange(7)
    for loss in regression_losses(pred, segments, y):
        assert float(loss) == pytest.approx(float(((pred - y) ** 2).mean()))


def test_regression_methods_have_their_own_registry():
    assert available_methods("regression") == ["bag", "instance", "interpolating"]
    assert "bag" not in available_methods()
    assert isinstance(make_method("interpolating", {"rho": 0.3}), InterpolatingLoss)
    with pytest.raises(ValueError, match="rho"):
        make_method("interpolating", {"rho": 1.5}, task="regression")
    with pytest.raises(ValueError, match="classification method"):
        make_method("vat", task="regression")
    with pytest.raises(ValueError, match="regression method"):
        make_method(BagLoss(), task="classification")


# ----------------------------------------------------------------------
# learning
# ----------------------------------------------------------------------
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


def test_learns_a_linear_target_in_original_units(linear_bags):
    X, bags, means, y = linear_bags
    linear = dict(module__hidden_sizes=(), batch_size=32, lr=0.03, max_epochs=40)
    reg = _small(**linear).fit(X, bags, means)
    assert r2_score(y, reg.predict(X)) > 0.99
    # the standardisation: size-weighted mean and spread of the bag means
    assert reg.target_mean_ == pytest.approx(y.mean())
    assert reg.target_scale_ == pytest.approx(np.unique(means).std(), rel=1e-9)
    weights = reg.module_.layers[0].weight.detach().numpy()[0] * reg.target_scale_
    np.testing.assert_allclose(weights, [1.0, -2.0, 0.5], atol=0.1)


def test_supervised_fit_is_an_ordinary_regressor(linear_bags):
    X, _, _, y = linear_bags
    reg = _small(module__hidden_sizes=(), batch_size=32, lr=0.03, max_epochs=20)
    reg.fit(X, y)
    assert reg.score(X, y) > 0.98
    assert reg.score(X, y) == pytest.approx(r2_score(y, reg.predict(X)))


# ----------------------------------------------------------------------
# equivalences
# ----------------------------------------------------------------------
def test_every_form_of_bags_and_targets_gives_the_same_model(linear_bags):
    X, bags, means, _ = linear_bags
    ids = np.array([f"bag{b:02d}" for b in bags])
    table = pd.Series(means, index=ids).groupby(level=0).first()
    forms = [
        (bags, means),
        (ids, means),
        (ids, table),
        (ids, table.to_dict()),
        (ids, table.to_frame("value")),
        (pd.Series(ids), pd.Series(means)),
        (check_bags(ids, targets=table), None),
    ]
    predictions = [_small().fit(X, b, t).predict(X) for b, t in forms]
    for pred in predictions[1:]:
        np.testing.assert_array_equal(pred, predictions[0])


def test_unit_weights_equal_no_weights(linear_bags):
    X, bags, means, _ = linear_bags
    plain = _small().fit(X, bags, means).predict(X)
    weighted = _small().fit(X, bags, means, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(weighted.predict(X), plain)


def test_instance_targets_equal_singleton_bags(linear_bags):
    X, _, _, y = linear_bags
    on_targets = _small().fit(X, y)
    on_bags = _small().fit(X, np.arange(len(X)), y)
    np.testing.assert_array_equal(on_targets.predict(X), on_bags.predict(X))
    assert on_targets.target_mean_ == on_bags.target_mean_
    assert on_targets.target_scale_ == on_bags.target_scale_


def test_weighted_bags_use_weighted_means():
    # a weight of 0 removes a row: the same as dropping it
    rng = np.random.RandomState(1)
    X = rng.normal(size=(60, 2))
    bags = np.arange(60) // 6
    means = rng.normal(size=10)[bags]
    weight = np.ones(60)
    weight[::6] = 0.0
    keep = weight > 0
    dropped = _small().fit(X[keep], bags[keep], means[keep])
    zero = _small().fit(X, bags, means, sample_weight=weight)
    np.testing.assert_allclose(zero.predict(X), dropped.predict(X), rtol=1e-6)


def test_overlapping_bags_train(linear_bags):
    X, bags, _, y = linear_bags
    lists = [np.flatnonzero(bags == b) for b in range(40)]
    lists += [np.arange(i, i + 8) for i in range(0, 312, 16)]  # overlapping
    means = np.array([y[rows].mean() for rows in lists])
    linear = dict(module__hidden_sizes=(), batch_size=32, lr=0.03, max_epochs=30)
    reg = _small(**linear).fit(X, lists, means)
    assert r2_score(y, reg.predict(X)) > 0.98
    membership = check_bags(lists, targets=means, n_samples=320).membership()
    again = _small(**linear).fit(X, sp.csr_matrix(membership), means)
    np.testing.assert_array_equal(again.predict(X), reg.predict(X))


# ----------------------------------------------------------------------
# scikit-learn's contracts
# ----------------------------------------------------------------------
def test_clone_pickle_and_params(linear_bags):
    X, bags, means, _ = linear_bags
    reg = _small(method="interpolating", method__rho=0.2)
    assert reg.get_params()["method__rho"] == 0.2
    assert clone(reg).get_params()["method__rho"] == 0.2
    reg.fit(X, bags, means)
    assert reg.method_.rho == 0.2
    restored = pickle.loads(pickle.dumps(reg))
    np.testing.assert_array_equal(restored.predict(X), reg.predict(X))
    assert not hasattr(reg, "predict_proba")
    assert reg.__sklearn_tags__().estimator_type == "regressor"


def test_pandas_input_pipeline_and_feature_names(linear_bags):
    X, bags, means, _ = linear_bags
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    pipe = make_pipeline(StandardScaler(), _small()).fit(
        frame, bags, llpregressor__targets=means
    )
    assert pipe.predict(frame).shape == (320,)
    reg = _small().fit(frame, bags, means)
    assert reg.feature_names_in_.tolist() == ["a", "b", "c"]
    with pytest.warns(UserWarning, match="feature names"):
        reg.predict(X)


def test_grid_search_with_bag_kfold_and_the_bag_r2_scorer(linear_bags):
    X, bags, means, _ = linear_bags
    grid = {"lr": [1e-5, 3e-2]}
    base = _small(module__hidden_sizes=(), batch_size=32, max_epochs=10)
    table_scorer = make_bag_scorer("r2", bags=bags, targets=means)
    plain = GridSearchCV(
        base, grid, scoring=table_scorer, cv=BagKFold(3), error_score="raise"
    ).fit(X, bags, targets=means)
    assert plain.best_params_ == {"lr": 3e-2}
    with sklearn.config_context(enable_metadata_routing=True):
        routed = GridSearchCV(
            base.set_fit_request(targets=True),
            grid,
            scoring=bag_r2_scorer,
            cv=BagKFold(3),
            error_score="raise",
        ).fit(X, bags, targets=means)
        # the default scoring is score(X, bags, targets): the same bag R^2
        default = GridSearchCV(base, grid, cv=BagKFold(3), error_score="raise")
        default.fit(X, bags, targets=means)
    for key in ["mean_test_score", "split0_test_score"]:
        np.testing.assert_allclose(routed.cv_results_[key], plain.cv_results_[key])
        np.testing.assert_allclose(default.cv_results_[key], plain.cv_results_[key])
    low, high = plain.cv_results_["mean_test_score"]
    assert high > 0.7 and low < 0.0  # held-out bag R^2: the grid separates


def test_scorers_refuse_to_score_without_targets(linear_bags):
    X, bags, means, _ = linear_bags
    reg = _small().fit(X, bags, means)
    with pytest.raises(ValueError, match="received no bag means"):
        bag_r2_scorer(reg, X, bags)
    with pytest.raises(ValueError, match="got no targets"):
        reg.score(X, bags)
    assert bag_r2_scorer(reg, X, bags, targets=means) == pytest.approx(
        reg.score(X, bags, means)
    )


def test_warm_start_keeps_the_target_standardisation(linear_bags):
    X, bags, means, _ = linear_bags
    reg = _small(warm_start=True).fit(X, bags, means)
    scale = reg.target_scale_
    reg.fit(X, bags, means * 10)
    assert reg.target_scale_ == scale
    reg.partial_fit(X, bags, means)
    assert reg.n_train_steps_ > 0


def test_validation_errors_and_early_stopping(linear_bags):
    X, bags, means, _ = linear_bags
    reg = _small(validation_fraction=0.2, max_epochs=6).fit(X, bags, means)
    row = reg.history[-1]
    for key in ["valid_loss", "valid_mse", "valid_mae", "valid_r2", "valid_mse_best"]:
        assert key in row
    assert reg.history[0]["valid_mse_best"]
    stopped = _small(early_stopping=True, n_iter_no_change=2, max_epochs=30)
    stopped.fit(X, bags, means)
    assert stopped.do_early_stopping_ and stopped.best_epoch_ is not None
    # "auto": on for the regression losses when >= 5 bags are held out
    assert not _small().fit(X, bags, means).do_early_stopping_  # 40 bags: 4
    assert _small(validation_fraction=0.2).fit(X, bags, means).do_early_stopping_
    # instance targets: rows held out (320 rows: 32)
    assert _small().fit(X, means).do_early_stopping_


def test_unidentifiable_feature_warns():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(40, 2))
    X[:, 1] = np.tile([0.0, 1.0], 20)  # every bag of 2 holds one 0 and one 1
    bags = np.arange(40) // 2
    means = _bag_means(bags, X[:, 0])
    with pytest.warns(IdentifiabilityWarning, match=r"\[1\]"):
        _small(max_epochs=1).fit(X, bags, means)
    with pytest.warns(IdentifiabilityWarning, match=r"\['b'\]"):
        _small(max_epochs=1).fit(pd.DataFrame(X, columns=["a", "b"]), bags, means)
    with pytest.warns(IdentifiabilityWarning, match=r"\[1\]"):
        _small(max_epochs=1).fit(sp.csr_matrix(X), bags, means)
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        _small(max_epochs=1).fit(X[:, :1], bags, means)


# ----------------------------------------------------------------------
# bad input
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "change, error, match",
    [
        (
            lambda b, t: (b, np.where(np.arange(320) == 3, np.nan, t)),
            ValueError,
            "targets contains NaN",
        ),
        (
            lambda b, t: (b, np.where(b == 4, np.inf, t)),
            ValueError,
            "targets contains NaN or infinite",
        ),
        (lambda b, t: (b[:-1], t), ValueError, "bags has 319 entries"),
        (lambda b, t: (b, t[:-1]), ValueError, "targets has 319 values"),
        (
            lambda b, t: (b, t + (np.arange(320) == 0)),
            ValueError,
            "differ between rows of the same bag",
        ),
        (lambda b, t: (b, {0: 1.0}), ValueError, "no row for 39 bag"),
        (
            lambda b, t: (np.zeros(320, int), np.full(320, 1.0)),
            ValueError,
            "at least 2",
        ),
        (lambda b, t: (b, np.c_[t, t]), ValueError, "must be 1-D"),
        (lambda b, t: (b, ["a"] * 320), TypeError, "targets must hold numbers"),
        (lambda b, t: (sp.csr_matrix((320, 3)), np.ones(3)), ValueError, "empty bag"),
        (
            lambda b, t: (check_bags(b, np.eye(2)[b % 2]), None),
            ValueError,
            "label proportions",
        ),
        (lambda b, t: (None, t), TypeError, "bags is None"),
    ],
)
def test_bad_input_is_refused_before_training(linear_bags, change, error, match):
    X, bags, means, _ = linear_bags
    reg = _small()
    bags, targets = change(bags, means)
    with pytest.raises(error, match=match):
        reg.fit(X, bags, targets)
    assert not hasattr(reg, "target_mean_")


# ----------------------------------------------------------------------
# metrics
# ----------------------------------------------------------------------
def test_bag_metrics_by_hand_and_on_singletons():
    bags = ["a", "a", "b", "b", "c"]
    targets = {"a": 2.0, "b": 5.0, "c": 0.0}
    y_pred = [1.0, 2.0, 4.0, 4.0, 1.0]  # bag means 1.5, 4, 1
    assert bag_mean_squared_error(bags, targets, y_pred) == pytest.approx(
        (0.25 + 1 + 1) / 3
    )
    assert bag_mean_absolute_error(bags, targets, y_pred) == pytest.approx(2.5 / 3)
    centre = 7 / 3
    total = ((2 - centre) ** 2 + (5 - centre) ** 2 + centre**2) / 3
    assert bag_r2_score(bags, targets, y_pred) == pytest.approx(1 - 2.25 / 3 / total)
    weighted = bag_mean_squared_error(
        bags, targets, y_pred, sample_weight=[3, 1, 1, 1, 1]
    )
    assert weighted == pytest.approx(((2 - 1.25) ** 2 + 1 + 1) / 3)
    rng = np.random.RandomState(0)
    y, pred = rng.normal(size=9), rng.normal(size=9)
    ids = np.arange(9)
    assert bag_mean_squared_error(ids, y, pred) == pytest.approx(
        mean_squared_error(y, pred)
    )
    assert bag_mean_absolute_error(ids, y, pred) == pytest.approx(
        mean_absolute_error(y, pred)
    )
    assert bag_r2_score(ids, y, pred) == pytest.approx(r2_score(y, pred))
    table = bag_table(bags, targets=[2.0, 2.0, 5.0, 5.0, 0.0])
    assert table["mean"].to_dict() == targets


# ----------------------------------------------------------------------
# bag generators: means of a continuous y
# ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "generator",
    [
        UniformBagGenerator(4, random_state=0),
        KMeansBagGenerator(3, random_state=0),
        FeatureBagGenerator([0], n_bins=3),
    ],
)
def test_generators_give_bag_means_of_a_continuous_target(generator):
    X = np.random.RandomState(0).normal(size=(30, 2))
    y = 1.5 * X[:, 0] + 0.25
    bags, means = generator.make_bags(X, y)
    assert means.shape == (30,) and not hasattr(generator, "classes_")
    kept = bags >= 0
    np.testing.assert_allclose(means[kept], _bag_means(bags[kept], y[kept]))
    assert np.isnan(means[~kept]).all()
    # class labels still give proportions
    _, props = generator.make_bags(X, (y > 0).astype(int))
    assert props.shape == (30, 2)
    with pytest.raises(ValueError, match="y contains NaN"):
        generator.make_bags(X, np.where(np.arange(30) == 3, np.nan, y))


# ----------------------------------------------------------------------
# scikit-learn's common checks, on the instance-target path
# ----------------------------------------------------------------------
EXPECTED_FAILED_CHECKS = {
    "check_no_attributes_set_in_init": (
        "skorch's NeuralNet.__init__ sets history_, initialized_ and "
        "virtual_params_ (skorch design)."
    ),
    "check_do_not_raise_errors_in_init_or_set_params": (
        "skorch's set_params re-initialises the callbacks at once (skorch design)."
    ),
}


@pytest.mark.estimator_checks
@parametrize_with_checks(
    [LLPRegressor(max_epochs=8, batch_size=32, verbose=0, random_state=0)],
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS,
)
def test_sklearn_compatible_regressor(estimator, check):
    check(estimator)


def test_per_bag_sums_and_sizes_are_the_means():
    """A table of bag totals and sizes gives the same bags as their means."""
    ids = np.array(["a", "a", "b", "b", "b", "c"])
    means = {"a": 2.5, "b": -1.0, "c": 4.0}
    sizes = {"a": 2, "b": 3, "c": 1}
    sums = pd.DataFrame(
        {"sum": [means[k] * sizes[k] for k in "abc"], "size": [2, 3, 1]},
        index=list("abc"),
    )
    expected = check_bags(ids, targets=means)
    for table in (sums, sums.assign(mean=sums["sum"] / sums["size"])[["mean", "size"]]):
        got = check_bags(ids, targets=table)
        np.testing.assert_array_equal(got.props, expected.props)
    # sizes may differ from the rows present (the rows are a sample)
    sampled = check_bags(ids, targets=sums.assign(size=[4, 6, 2]))
    np.testing.assert_allclose(sampled.props[:, 0], [1.25, -0.5, 2.0])
