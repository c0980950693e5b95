"""Early stopping on held-out bags, both tasks."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from skorch.callbacks import EarlyStopping
from skorch.history import History

from sklearn_llp import LLPClassifier, LLPRegressor
from sklearn_llp.bags import KMeansBagGenerator
from sklearn_llp.exceptions import FewBagsWarning, NonRandomBagsWarning
from sklearn_llp.methods import available_methods, make_method
from sklearn_llp.neural._callbacks import (
    BagEarlyStopping,
    curve_noise,
    lowest_window_epoch,
    tied_with_best,
)

C, R = "classification", "regression"
#: What each task logs for the held-out bags, and the metric it stops on.
VALID_KEYS = {
    C: ["valid_loss", "valid_hard_l1", "valid_soft_l1", "valid_hard_kl"],
    R: ["valid_loss", "valid_mse", "valid_mae", "valid_r2"],
}
STOP_ON = {C: "valid_hard_l1", R: "valid_mse"}


def fit(X, bags, values, task=C, **params):
    params = {"verbose": 0, "random_state": 0, "n_threads": 1, **params}
    cls = LLPClassifier if task == C else LLPRegressor
    return cls(**params).fit(X, bags, values)


def digits_data(digits_bags, task, form):
    """Digits in bags of 16 (79 bags), as proportions or as means of the
    digit's value; ``form``: all bags, the first 40, labels or singletons."""
    X, bags, props, y, *_ = digits_bags
    means = (np.bincount(bags, weights=y) / np.bincount(bags))[bags]
    values = props if task == C else means
    if form == "40 bags":
        few = bags < 40
        return X[few], bags[few], values[few]
    if form == "labels":
        return X, (y if task == C else y.astype(float)), None
    if form == "singletons":
        return X, np.arange(len(X)), np.eye(10)[y] if task == C else y.astype(float)
    return X, bags, values


#: (task, method, data, params, do_early_stopping_): "auto" needs >= 5 held-out
#: bags (79 at 0.1: 7.9; 40: 4); a regressor holds out labelled rows, too.
AUTO = [
    (t, m, "all bags", {}, make_method(m, task=t).early_stopping_default)
    for t in (C, R)
    for m in available_methods(t)
]
AUTO += [
    (C, "easyllp", "40 bags", {}, False),
    (C, "easyllp", "40 bags", {"validation_fraction": 0.2}, True),
    (C, "easyllp", "labels", {}, False),
    (C, "easyllp", "singletons", {}, False),
    (C, "dllp", "all bags", {"early_stopping": True}, True),
    (C, "easyllp", "all bags", {"early_stopping": False}, False),
    (R, "bag", "40 bags", {}, False),
    (R, "bag", "40 bags", {"validation_fraction": 0.2}, True),
    (R, "bag", "labels", {}, True),
    (R, "bag", "all bags", {"early_stopping": False}, False),
]


@pytest.mark.parametrize(("task", "method", "form", "params", "expected"), AUTO)
@pytest.mark.slow
def test_what_auto_true_and_false_turn_on(
    digits_bags, task, method, form, params, expected
):
    X, bags, values = digits_data(digits_bags, task, form)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = fit(X, bags, values, task, method=method, max_epochs=1, **params)
    off = [w for w in caught if issubclass(w.category, FewBagsWarning)]
    assert bool(off) is (form == "40 bags" and not expected)  # and says so
    assert est.do_early_stopping_ is expected
    assert (est.best_epoch_ is not None) is expected
    # the held-out bags are recorded when they are used or asked for (a
    # regressor's "auto" then refits on every bag: the stopping fit's history)
    history = getattr(est, "stopping_history_", None) or est.history
    recorded = expected or "validation_fraction" in params
    for key in VALID_KEYS[task]:
        assert (key in history[-1]) is recorded, key
    if recorded:
        assert history[0][f"{STOP_ON[task]}_best"]


@pytest.mark.parametrize(
    ("task", "method", "lr"), [(C, "easyllp", 1e-3), (R, "bag", 1e-2)]
)
@pytest.mark.slow
def test_restores_exactly_the_best_epoch(digits_bags, task, method, lr):
    """The stopped model is the model trained for ``best_epoch_`` epochs on
    the same training bags (same split, same seed, same batches)."""
    X, bags, values = digits_data(digits_bags, task, "all bags")
    params = dict(method=method, lr=lr, early_stopping=True)
    stopped = fit(X, bags, values, task, max_epochs=40, n_iter_no_change=3, **params)
    best = stopped.best_epoch_
    ran = len(stopped.history)
    assert 1 <= best <= ran <= 40
    flags = stopped.history[:, f"{STOP_ON[task]}_best"]
    if task == C:
        assert ran == best + 3  # stopped after 3 epochs without a new best
        assert flags[best - 1] and not any(flags[best:])
    else:  # stopped or not: the middle of the lowest 5-epoch window
        assert best == lowest_window_epoch(stopped.history[:, "valid_mse"])
    params.update(early_stopping=False, validation_fraction=0.1)  # the same bags
    plain = fit(X, bags, values, task, max_epochs=best, **params)
    np.testing.assert_array_equal(stopped.predict(X), plain.predict(X))
    if task == C:
        np.testing.assert_array_equal(stopped.predict_proba(X), plain.predict_proba(X))
    np.testing.assert_array_equal(stopped.train_bag_ids_, plain.train_bag_ids_)


def test_max_epochs_ends_a_fit_before_the_patience(digits_bags):
    X, bags, props, *_ = digits_bags
    clf = fit(X, bags, props, method="llpfc", max_epochs=3, n_iter_no_change=50)
    assert len(clf.history) == 3
    assert clf.best_epoch_ is not None


class _Net:
    """What BagEarlyStopping reads of a net, for hand-made held-out curves."""

    _stopping_metric = "mse"
    verbose = 0
    do_early_stopping_ = True

    def __init__(self, noise, patience):
        self._stopping_noise, self.n_iter_no_change = noise, patience
        self.history = History()
        self.module_ = torch.nn.Linear(1, 1)


def _stop_on(curve, noise=3.0, patience=5):
    """Run BagEarlyStopping over ``curve``; the epochs run and the epoch
    whose weights it restored (each epoch's weights hold its number)."""
    net, callback = _Net(noise, patience), BagEarlyStopping()
    callback.on_train_begin(net)
    for epoch, value in enumerate(curve, 1):
        net.history.new_epoch()
        net.history.record("epoch", epoch)
        net.history.record("valid_mse", value)
        best = value < min(curve[: epoch - 1], default=np.inf)
        net.history.record("valid_mse_best", best)
        torch.nn.init.constant_(net.module_.weight, epoch)
        try:
            callback.on_epoch_end(net)
        except KeyboardInterrupt:
            break
    callback.on_train_end(net)
    assert net.best_epoch_ == net.module_.weight.item()
    assert callback.stopped_ or len(net.history) == len(curve)
    return len(net.history), net.best_epoch_


#: a fall, then a plateau whose wiggle (+-0.05) hides a slow drift; its
#: minimum (0.95) comes early, by chance
PLATEAU = [2.0, 1.5, 1.2, 1.05, 0.95] + [1.0 + 0.05 * (-1) ** t for t in range(35)]
#: a fall to 1.0 at epoch 4, then a steady rise far beyond the wiggle
RISE = [2.0, 1.5, 1.2, 1.0, 1.01, 1.1, 1.3, 1.5, 1.7, 1.9, 2.1, 2.3, 2.5, 2.7]


def test_the_noise_aware_rule_trains_through_a_plateau_and_stops_on_a_rise():
    """A regressor stops only when the held-out error has risen beyond its
    noise: a noisy plateau runs to the end, a real rise stops; either keeps
    the middle of the 5 epochs with the lowest mean."""
    assert curve_noise(PLATEAU) == pytest.approx(0.1 * 1.4826 / np.sqrt(1.5))
    assert _stop_on(PLATEAU) == (40, lowest_window_epoch(PLATEAU)) == (40, 7)
    # 1.01 and 1.1 are within 3 noise scales of 1.0; epochs 7-11 are not
    assert _stop_on(RISE) == (11, lowest_window_epoch(RISE[:11])) == (11, 5)
    # the classic rule (the classifier's): the plateau stops 5 epochs on
    assert _stop_on(PLATEAU, noise=None) == (10, 5)
    assert _stop_on(RISE, noise=None) == (9, 4)
    assert tied_with_best(np.array([1.0, 2.0, 1.5]), 0, 3.0) is True  # noise inf


def test_the_refit_counts_epochs_by_the_lowest_five_epoch_mean():
    """A lucky single epoch does not choose the refit's epochs: the middle
    of the 5 consecutive epochs with the lowest mean does."""
    lucky = [3.0, 0.5, 3.0, 3.0, 3.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0]
    assert lowest_window_epoch(lucky) == 9  # epochs 7-11, not epoch 2
    assert lowest_window_epoch([3.0, 1.0, 2.0]) == 2  # shorter: the best
    assert lowest_window_epoch([1.0, np.nan, 0.5, 0.5, 0.5, 0.5, 0.5, 2.0]) == 5


@pytest.mark.parametrize("task", [C, R])
@pytest.mark.parametrize(
    ("name", "value"),
    [("n_iter_no_change", 0), ("n_iter_no_change", -1), ("n_iter_no_change", 1.5)]
    + [("early_stopping", "yes")],
)
def test_bad_values_name_the_parameter(small_bags, task, name, value):
    X, bags, props, _ = small_bags
    values = props if task == C else props[:, 0]  # a mean per bag
    with pytest.raises(ValueError, match=name):
        fit(X, bags, values, task, **{name: value})


@pytest.mark.slow
def test_a_user_early_stopping_on_valid_records_works_with_auto(digits_bags):
    """skorch's EarlyStopping may monitor the held-out records that "auto"
    creates (no validation_fraction needed then)."""
    X, bags, props, *_ = digits_bags
    stop = EarlyStopping(monitor="valid_soft_l1", patience=2)
    clf = fit(X, bags, props, method="easyllp", max_epochs=30, callbacks=[stop])
    assert len(clf.history) < 30


# --- the defaults this makes, on benchmarks/accuracy.py's digits split and baggings
# (60 epochs, other defaults; seeds 0/1/2): EasyLLP random 16 86.7-89.7 %, K-means
# 85.0-86.7 %; LLPFC random 16 88.6-90.6 %
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


@pytest.fixture(scope="module")
def grid_digits():
    from _common import load_digits_split

    return load_digits_split()


def grid_bags(grid_digits, bagging, seed=0):
    from accuracy import bag_generator

    X_train, _, y_train, _ = grid_digits
    gen, _ = bag_generator(bagging, len(X_train), X_train.shape[1], seed)
    bags, props = gen.make_bags(X_train, y_train)
    keep = bags >= 0
    return X_train[keep], bags[keep], props[keep]


@pytest.mark.slow
@pytest.mark.parametrize(
    "method, bagging, minimum",
    [("easyllp", "uniform-16", 0.85), ("llpfc", "uniform-16", 0.85)]
    + [("easyllp", "kmeans", 0.80)],
)
def test_defaults_reach_the_targets(grid_digits, method, bagging, minimum):
    X, bags, props = grid_bags(grid_digits, bagging)
    _, X_test, _, y_test = grid_digits
    clf = fit(X, bags, props, method=method, max_epochs=60)
    assert np.mean(clf.predict(X_test) == y_test) >= minimum


def test_easyllp_warns_on_kmeans_bags_and_not_on_random_bags(grid_digits):
    X_train, _, y_train, _ = grid_digits
    bags, props = KMeansBagGenerator(22, random_state=0).make_bags(X_train, y_train)
    with pytest.warns(NonRandomBagsWarning, match="vary .* times"):
        fit(X_train, bags, props, method="easyllp", max_epochs=1)
    X, bags, props = grid_bags(grid_digits, "uniform-16")
    with warnings.catch_warnings():
        warnings.simplefilter("error", NonRandomBagsWarning)
        fit(X, bags, props, method="easyllp", max_epochs=1)
