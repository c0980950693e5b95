"""Early stopping on held-out bags (``early_stopping``, ``n_iter_no_change``).

What ``"auto"`` turns on, that the restored model is exactly the model of
the best epoch, that the fit stops after the patience, and the defaults it
makes reach: EasyLLP and LLPFC on digits at 60 epochs.
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone
from skorch.callbacks import EarlyStopping

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import KMeansBagGenerator
from sklearn_llp.exceptions import NonRandomBagsWarning
from sklearn_llp.methods import available_methods, make_method


def fit(X, bags, props, **params):
    params = {"verbose": 0, "random_state": 0, "n_threads": 1, **params}
    return LLPClassifier(**params).fit(X, bags, props)


@pytest.mark.parametrize("method", available_methods())
def test_auto_is_on_exactly_for_the_methods_that_ask_for_it(digits_bags, method):
    X, bags, props, *_ = digits_bags
    clf = fit(X, bags, props, method=method, max_epochs=1)
    expected = make_method(method).early_stopping_default
    assert clf.do_early_stopping_ is expected
    # the held-out bags are recorded only when they are used
    assert ("valid_hard_l1" in clf.history[-1]) is expected
    assert method in {"easyllp", "llpfc"} or not expected


def test_auto_is_off_with_too_few_bags_to_hold_out_labels_and_singletons(
    digits_bags,
):
    X, bags, props, y, *_ = digits_bags
    # 63 bags: 6.3 held out at 0.1 -> on; 40 bags: 4 held out -> off
    assert fit(X, bags, props, method="easyllp", max_epochs=1).do_early_stopping_
    few = bags < 40
    clf = fit(X[few], bags[few], props[few], method="easyllp", max_epochs=1)
    assert not clf.do_early_stopping_
    # a larger validation_fraction holds out enough of the 40
    clf = fit(
        X[few],
        bags[few],
        props[few],
        method="easyllp",
        max_epochs=1,
        validation_fraction=0.2,
    )
    assert clf.do_early_stopping_
    # labels, and bags of one row (the same data), train on every row
    assert not fit(X, y, None, method="easyllp", max_epochs=1).do_early_stopping_
    singles = np.arange(len(X))
    one_hot = np.eye(10)[y]
    clf = fit(X, singles, one_hot, method="easyllp", max_epochs=1)
    assert not clf.do_early_stopping_


def test_true_forces_it_and_false_turns_it_off(digits_bags):
    X, bags, props, *_ = digits_bags
    assert fit(X, bags, props, method="dllp", max_epochs=1, early_stopping=True)
    clf = fit(X, bags, props, method="easyllp", max_epochs=1, early_stopping=False)
    assert not clf.do_early_stopping_
    assert "valid_hard_l1" not in clf.history[-1]


def test_restores_exactly_the_best_epoch(digits_bags):
    """The stopped model is the model trained for ``best_epoch_`` epochs on
    the same training bags (same split, same seed, same batches)."""
    X, bags, props, *_ = digits_bags
    stopped = fit(X, bags, props, method="easyllp", max_epochs=40, n_iter_no_change=3)
    best = stopped.best_epoch_
    ran = len(stopped.history)
    assert 1 <= best < ran <= 40
    # stopped after 3 epochs without a new best
    assert ran == best + 3
    flags = stopped.history[:, "valid_hard_l1_best"]
    assert flags[best - 1] and not any(flags[best:])
    plain = fit(
        X,
        bags,
        props,
        method="easyllp",
        max_epochs=best,
        early_stopping=False,
        validation_fraction=0.1,  # the same held-out bags
    )
    np.testing.assert_array_equal(stopped.predict_proba(X), plain.predict_proba(X))
    np.testing.assert_array_equal(stopped.train_bag_ids_, plain.train_bag_ids_)


def test_patience_and_max_epochs(digits_bags):
    X, bags, props, *_ = digits_bags
    clf = fit(X, bags, props, method="llpfc", max_epochs=3, n_iter_no_change=50)
    assert len(clf.history) == 3  # max_epochs first
    assert clf.best_epoch_ is not None


@pytest.mark.parametrize("value", [0, -1, 1.5])
def test_bad_patience_names_the_parameter(small_bags, value):
    X, bags, props, _ = small_bags
    with pytest.raises(ValueError, match="n_iter_no_change"):
        fit(X, bags, props, n_iter_no_change=value)


def test_bad_early_stopping_names_the_parameter(small_bags):
    X, bags, props, _ = small_bags
    with pytest.raises(ValueError, match="early_stopping"):
        fit(X, bags, props, early_stopping="yes")


def test_clone_keeps_the_parameters():
    clf = LLPClassifier(early_stopping=False, n_iter_no_change=4)
    params = clone(clf).get_params()
    assert params["early_stopping"] is False and params["n_iter_no_change"] == 4


def test_a_user_early_stopping_on_valid_records_works_with_auto(digits_bags):
    """skorch's EarlyStopping may monitor the held-out records that "auto"
    creates (no validation_fraction needed then)."""
    X, bags, props, *_ = digits_bags
    clf = fit(
        X,
        bags,
        props,
        method="easyllp",
        max_epochs=30,
        callbacks=[EarlyStopping(monitor="valid_soft_l1", patience=2)],
    )
    assert len(clf.history) < 30


# -- the defaults this makes ---------------------------------------------------
# benchmarks/accuracy.py's digits split and baggings (1,437 training rows);
# 60 epochs, everything else at its default. Measured (seeds 0/1/2):
# EasyLLP random 16: 87.8 / 89.7 / 86.7 %, K-means 86.7 / 85.0 / 85.3 %;
# LLPFC random 16: 89.2 / 88.6 / 90.6 %.
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
