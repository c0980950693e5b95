"""Bag-level model selection with the real LLPClassifier on bagged digits.

GridSearchCV and cross_validate with metadata routing on and off, the
``cv=5`` trap, the per-epoch validation errors of ``validation_fraction``
with skorch's EarlyStopping/Checkpoint, ``score``, and the validation
correlation benchmark's smoke run.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import sklearn
import torch
from sklearn.datasets import load_digits
from sklearn.metrics import accuracy_score
from sklearn.model_selection import (
    GridSearchCV,
    StratifiedKFold,
    check_cv,
    cross_validate,
)
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import Callback, Checkpoint, EarlyStopping

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import UniformBagGenerator
from sklearn_llp.metrics import (
    BAG_METRICS,
    KL_EPS,
    bag_errors,
    hard_l1_error,
    hard_l1_scorer,
    make_bag_scorer,
    soft_kl_scorer,
)
from sklearn_llp.model_selection import BagKFold

torch.set_num_threads(1)

BAG_SIZE = 16
BENCHMARK = (
    Path(__file__).resolve().parents[1] / "benchmarks" / "validation_correlation.py"
)


@pytest.fixture(scope="module")
def digits():
    """Standardised digits in random bags of 16; rows of no bag dropped."""
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    bags, props = UniformBagGenerator(BAG_SIZE, random_state=0).make_bags(X, y)
    keep = bags >= 0
    return X[keep], bags[keep], props[keep], y[keep]


def small_llp(cls=LLPClassifier, **params):
    """A small, fast, seeded LLPClassifier."""
    defaults = {
        "module__hidden_sizes": (32,),
        "max_epochs": 4,
        "verbose": 0,
        "random_state": 0,
    }
    return cls(**{**defaults, **params})


# An lr of 1e-5 barely moves the network, 1e-2 learns: a clear best.
GRID = {"lr": [1e-5, 1e-2], "method": ["dllp", "vat"]}


def split_bags(bags, train, test):
    """Bag ids that have rows on both sides of a split."""
    return set(bags[train]) & set(bags[test])


# --------------------------------------------------------------------------
# GridSearchCV
# --------------------------------------------------------------------------
class RecordingLLP(LLPClassifier):
    """LLPClassifier that records the bag ids and sizes every fit receives."""

    seen = []

    def fit(self, X, y=None, props=None, **fit_params):
        RecordingLLP.seen.append(np.unique(y, return_counts=True))
        return super().fit(X, y, props, **fit_params)


def test_grid_search_routing_on_and_off_agree(digits):
    X, bags, props, _ = digits
    cv = BagKFold(3)
    for train, test in cv.split(X, bags):
        assert not split_bags(bags, train, test)
        assert len(np.unique(bags[test])) >= 30

    RecordingLLP.seen = []
    with sklearn.config_context(enable_metadata_routing=True):
        # no set_fit_request / set_score_request needed: props is requested
        routed = GridSearchCV(
            small_llp(RecordingLLP),
            GRID,
            scoring=hard_l1_scorer,
            cv=cv,
            error_score="raise",
        ).fit(X, bags, props=props)
    # every fit of the search, the refit included, got whole bags only
    assert len(RecordingLLP.seen) == 3 * 4 + 1
    for _, counts in RecordingLLP.seen:
        assert np.all(counts == BAG_SIZE)
    held_out = [
        set(np.unique(bags)) - set(ids.tolist()) for ids, _ in RecordingLLP.seen[:-1]
    ]
    assert all(len(ids) >= 30 for ids in held_out)
    # the test folds of a candidate partition the bags (candidate-major order)
    first = held_out[:3]
    assert set().union(*first) == set(np.unique(bags))
    assert sum(len(ids) for ids in first) == len(np.unique(bags))
    assert held_out[3:6] == first

    assert sklearn.get_config()["enable_metadata_routing"] is False
    table_scorer = make_bag_scorer("hard_l1", bags=bags, props=props)
    plain = GridSearchCV(
        small_llp(), GRID, scoring=table_scorer, cv=cv, error_score="raise"
    ).fit(X, bags, props=props)

    assert routed.best_params_ == plain.best_params_
    assert routed.best_params_["lr"] == 1e-2
    for key in ["mean_test_score", "split0_test_score", "split2_test_score"]:
        np.testing.assert_allclose(routed.cv_results_[key], plain.cv_results_[key])
    scores = plain.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores <= 0)
    assert np.ptp(scores) > 0.3  # the grid really separates good from bad
    # the refitted best models are the same model
    np.testing.assert_allclose(
        routed.best_estimator_.predict_proba(X[:50]),
        plain.best_estimator_.predict_proba(X[:50]),
    )


def test_grid_search_default_scoring_is_the_hard_l1_ranking(digits):
    X, bags, props, _ = digits
    with sklearn.config_context(enable_metadata_routing=True):
        by_score = GridSearchCV(small_llp(), GRID, cv=BagKFold(3)).fit(
            X, bags, props=props
        )
        by_l1 = GridSearchCV(
            small_llp(), GRID, scoring=hard_l1_scorer, cv=BagKFold(3)
        ).fit(X, bags, props=props)
    # score = 1 - hard_L1 / 2 on every test fold, hence the same ranking
    for key in ["split0_test_score", "split1_test_score", "mean_test_score"]:
        np.testing.assert_allclose(
            by_score.cv_results_[key], 1 + by_l1.cv_results_[key] / 2
        )
    np.testing.assert_array_equal(
        by_score.cv_results_["rank_test_score"], by_l1.cv_results_["rank_test_score"]
    )
    assert by_score.best_params_ == by_l1.best_params_


# --------------------------------------------------------------------------
# cross_validate in worker processes
# --------------------------------------------------------------------------
@pytest.mark.parametrize("routing", [True, False])
def test_cross_validate_in_parallel(digits, routing):
    X, bags, props, _ = digits
    if routing:  # props reach the scorers through routing
        scoring = {"hard_l1": hard_l1_scorer, "soft_kl": soft_kl_scorer}
    else:  # the scorers look the test bags up in their table
        scoring = {
            metric: make_bag_scorer(metric, bags=bags, props=props)
            for metric in ["hard_l1", "soft_kl"]
        }
    with sklearn.config_context(enable_metadata_routing=routing):
        result = cross_validate(
            small_llp(lr=1e-2),
            X,
            bags,
            params={"props": props},
            scoring=scoring,
            cv=BagKFold(3),
            n_jobs=2,
            error_score="raise",
        )
    for key in ["test_hard_l1", "test_soft_kl"]:
        assert result[key].shape == (3,)
        assert np.all(np.isfinite(result[key])), result[key]
    # it learned something, but does not fit the test bags perfectly
    assert np.all((result["test_hard_l1"] > -1.0) & (result["test_hard_l1"] < -0.02))
    assert np.all(result["test_soft_kl"] < -1e-3)


# --------------------------------------------------------------------------
# The cv=5 trap
# --------------------------------------------------------------------------
def test_integer_cv_splits_bags_and_bag_kfold_does_not(digits):
    X, bags, _, _ = digits
    trap = check_cv(5, bags, classifier=True)
    assert isinstance(trap, StratifiedKFold)  # stratified over the bag ids
    split = [split_bags(bags, train, test) for train, test in trap.split(X, bags)]
    assert any(split)
    # in fact every bag of 16 is spread over all 5 folds
    assert all(len(ids) == len(np.unique(bags)) for ids in split)

    safe = check_cv(BagKFold(5), bags, classifier=True)
    folds = list(safe.split(X, bags))
    assert len(folds) == 5
    assert not any(split_bags(bags, train, test) for train, test in folds)
    tested = np.concatenate([test for _, test in folds])
    np.testing.assert_array_equal(np.sort(tested), np.arange(len(X)))


# --------------------------------------------------------------------------
# validation_fraction: per-epoch bag errors, EarlyStopping, Checkpoint
# --------------------------------------------------------------------------
class ValidationRows(Callback):
    """Record the rows of X that the validation batches of every epoch hold."""

    def on_train_begin(self, net, **kwargs):
        self.epochs_ = []

    def on_epoch_begin(self, net, **kwargs):
        self.epochs_.append({"valid": [], "train": []})

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        side = "train" if training else "valid"
        self.epochs_[-1][side].append(batch[0].detach().cpu().numpy().copy())


def row_indices(X, rows):
    """Indices in X of the given rows (digits has no duplicate rows)."""
    index = {row.tobytes(): i for i, row in enumerate(X.astype(np.float32))}
    return np.array([index[row.astype(np.float32).tobytes()] for row in rows])


def test_validation_fraction_logs_the_bag_errors_of_the_held_out_bags(digits):
    X, bags, props, _ = digits
    recorder = ValidationRows()
    clf = small_llp(
        max_epochs=3, lr=3e-3, validation_fraction=0.2, callbacks=[recorder]
    )
    clf.fit(X, bags, props)
    assert len(clf.history) == 3
    for epoch in clf.history:
        for metric in BAG_METRICS:
            value = epoch[f"valid_{metric}"]
            assert np.isfinite(value), (metric, value)
            if metric.endswith("l1"):
                assert 0 <= value <= 2
            else:
                assert 0 <= value <= -np.log(KL_EPS) + 1
            assert f"valid_{metric}_best" in epoch
    values = clf.history[:, "valid_hard_l1"]
    assert len(set(values)) > 1  # the errors are recomputed every epoch

    # The held-out bags, from the rows of the validation batches.
    held_out = None
    for epoch in recorder.epochs_:
        valid_rows = row_indices(X, np.concatenate(epoch["valid"]))
        train_rows = row_indices(X, np.concatenate(epoch["train"]))
        assert held_out is None or set(valid_rows) == held_out  # a fixed split
        held_out = set(valid_rows)
        assert len(valid_rows) == len(held_out)
        valid_bags, train_bags = set(bags[valid_rows]), set(bags[train_rows])
        assert not valid_bags & train_bags
        assert len(valid_bags) == round(0.2 * len(np.unique(bags)))
        assert len(valid_rows) == BAG_SIZE * len(valid_bags)  # whole bags
    rows = np.array(sorted(held_out))

    expected = bag_errors(
        bags[rows], props[rows], clf.predict_proba(X[rows]), classes=clf.classes_
    )
    assert expected["hard_l1"] > 0.05  # not a trivial perfect fit
    assert clf.history[-1, "valid_hard_l1"] == pytest.approx(
        hard_l1_error(bags[rows], props[rows], clf.predict_proba(X[rows])), abs=1e-9
    )
    for metric in BAG_METRICS:
        assert clf.history[-1, f"valid_{metric}"] == pytest.approx(
            expected[metric], rel=1e-4, abs=1e-6
        ), metric
    # and not the error of all the bags
    everything = hard_l1_error(bags, props, clf.predict_proba(X))
    assert clf.history[-1, "valid_hard_l1"] != pytest.approx(everything, abs=1e-9)


def held_out_rows(X, recorder):
    """Indices of the rows in the validation batches of the last epoch."""
    return row_indices(X, np.concatenate(recorder.epochs_[-1]["valid"]))


def test_early_stopping_and_checkpoint_on_valid_hard_l1(digits, tmp_path):
    X, bags, props, _ = digits
    recorder = ValidationRows()
    clf = small_llp(
        max_epochs=200,
        lr=1e-2,
        validation_fraction=0.2,
        callbacks=[
            # before EarlyStopping, which ends the fit inside on_epoch_end
            Checkpoint(monitor="valid_hard_l1_best", dirname=str(tmp_path)),
            EarlyStopping(monitor="valid_hard_l1", patience=2),
            recorder,
        ],
    )
    clf.fit(X, bags, props)
    n_epochs = len(clf.history)
    assert 3 <= n_epochs < 200
    values = np.array(clf.history[:, "valid_hard_l1"])
    # stopped because the last 2 epochs did not improve on the best before
    assert np.all(values[-2:] >= values[:-2].min() * (1 - 1e-4))
    assert (tmp_path / "params.pt").is_file()
    saved = np.array(clf.history[:, "event_cp"])
    np.testing.assert_array_equal(saved, clf.history[:, "valid_hard_l1_best"])
    assert saved[0] and values[np.flatnonzero(saved)[-1]] == values.min()

    # the checkpoint holds the model of the best epoch
    rows = held_out_rows(X, recorder)
    restored = small_llp(max_epochs=0).fit(X, bags, props)
    restored.load_params(f_params=tmp_path / "params.pt")
    assert hard_l1_error(
        bags[rows], props[rows], restored.predict_proba(X[rows])
    ) == pytest.approx(values.min(), abs=1e-9)


# --------------------------------------------------------------------------
# score
# --------------------------------------------------------------------------
def test_score_is_one_minus_half_the_hard_l1(digits):
    X, bags, props, y = digits
    clf = small_llp(max_epochs=2, lr=3e-3).fit(X, bags, props)
    proba = clf.predict_proba(X)
    expected = 1 - hard_l1_error(bags, props, proba, classes=clf.classes_) / 2
    assert 0.3 < expected < 0.999
    assert clf.score(X, bags, props) == pytest.approx(expected, abs=1e-12)

    singletons = np.arange(len(X)) + 1000
    accuracy = accuracy_score(y, clf.predict(X))
    assert 0.3 < accuracy < 0.999
    assert clf.score(X, singletons, np.eye(10)[y]) == pytest.approx(accuracy)
    # y would be read as bag ids: no accuracy against them (silently wrong)
    with pytest.raises(ValueError, match="fitted on bags"):
        clf.score(X, bags)
    supervised = small_llp(max_epochs=2).fit(X, y)  # fitted on labels
    assert supervised.score(X, y) == pytest.approx(
        accuracy_score(y, supervised.predict(X))
    )


# --------------------------------------------------------------------------
# The validation correlation benchmark
# --------------------------------------------------------------------------
def test_validation_correlation_benchmark_quick(tmp_path):
    spec = importlib.util.spec_from_file_location("validation_correlation", BENCHMARK)
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    try:
        output = benchmark.main(["--quick", "--quiet", "--out", str(tmp_path)])
    finally:
        torch.set_num_threads(1)

    saved = json.loads((tmp_path / "validation_correlation.json").read_text())
    assert saved["correlations"] == output["correlations"]
    settings = list(saved["settings"])
    assert len(settings) == 3
    n_models = len(benchmark.model_grid(quick=True))
    assert len(saved["rows"]) == 3 * n_models
    for row in saved["rows"]:
        assert 0 <= row["test_error"] <= 1
        assert 0 <= row["valid_hard_l1"] <= 2 and 0 <= row["valid_soft_l1"] <= 2
        assert row["valid_hard_kl"] >= 0 and row["valid_soft_kl"] >= 0
    for name in settings:
        info = saved["settings"][name]
        assert 1 <= info["n_valid_bags"] < info["n_bags"]
        for metric in BAG_METRICS:
            r = saved["correlations"][name][metric]["pearson_r"]
            assert r is None or -1 - 1e-9 <= r <= 1 + 1e-9
    # the correlations really come from the rows
    rows = [row for row in saved["rows"] if row["setting"] == settings[0]]
    r = saved["correlations"][settings[0]]["hard_l1"]["pearson_r"]
    if r is not None:
        x = [row["valid_hard_l1"] for row in rows]
        e = [row["test_error"] for row in rows]
        assert r == pytest.approx(np.corrcoef(x, e)[0, 1])

    table = (tmp_path / "validation_correlation.md").read_text()
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| validation metric |")
    assert [line.split("|")[1].strip() for line in lines[1:5]] == [
        "Hard L1",
        "Soft L1",
        "Hard KL",
        "Soft KL",
    ]
    assert all(len(line.split("|")) == 1 + 3 + 2 for line in lines[:5])
