"""LLPClassifier: learning, defaults, scikit-learn citizenship, persistence,
devices, and the paths that once gave a wrong answer without an error (score
without props, composite keys, misaligned tables, diverged fits, refits)."""

import pickle
import re
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.model_selection import cross_val_predict as sklearn_cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import EpochScoring, LRScheduler, ProgressBar

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import label_proportions
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import (
    FitDivergedError,
    IdentifiabilityWarning,
    ModelResetWarning,
)
from sklearn_llp.methods import DLLP, VAT, LLPMethod
from sklearn_llp.metrics import BagScorer, hard_l1_error, make_bag_scorer
from sklearn_llp.model_selection import BagKFold, BagShuffleSplit, cross_val_predict
from sklearn_llp.modules import MLP


@pytest.mark.slow
@pytest.mark.parametrize("method", ["vat", "dllp"])
def test_default_hyperparameters_learn_digits_from_bags_of_16(digits_bags, method):
    X_train, bags, props, _, X_test, y_test = digits_bags
    start = time.perf_counter()
    clf = LLPClassifier(method=method, random_state=0, verbose=0)
    clf.fit(X_train, bags, props)
    seconds = time.perf_counter() - start
    accuracy = np.mean(clf.predict(X_test) == y_test)
    assert accuracy >= 0.90, accuracy
    assert seconds < 60, seconds


def test_supervised_fallback_is_plain_supervised_learning(small_bags):
    X, _, _, y = small_bags
    clf = LLPClassifier(max_epochs=30, verbose=0, random_state=0).fit(X, y)
    assert clf.classes_.tolist() == [0, 1, 2]
    assert np.mean(clf.predict(X) == y) > 0.9


def test_string_labels_in_supervised_fallback(small_bags):
    X, _, _, y = small_bags
    labels = np.array(["a", "b", "c"])[y]
    clf = LLPClassifier(max_epochs=5, verbose=0).fit(X, labels)
    assert clf.classes_.tolist() == ["a", "b", "c"]
    assert set(clf.predict(X)) <= {"a", "b", "c"}


def test_predict_proba_rows_are_distributions(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=3, verbose=0, predict_batch_size=7)
    proba = clf.fit(X, bags, props).predict_proba(X)
    assert proba.shape == (len(X), 3)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    assert np.array_equal(clf.predict(X), proba.argmax(1))


def test_fitted_attributes_and_history(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=4, batch_size=20, verbose=0).fit(X, bags, props)
    assert clf.n_features_in_ == 4
    assert len(clf.history) == 4
    assert all(np.isfinite(clf.history[:, "train_loss"]))
    # 12 bags of 10 packed into batches of 20: 6 steps per epoch
    assert clf.n_train_steps_ == 24 == clf.total_steps_
    assert isinstance(clf.module_, MLP)
    assert type(clf.method_).__name__ == "VAT"


def test_feature_names_from_pandas(small_bags):
    X, bags, props, _ = small_bags
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    clf = LLPClassifier(max_epochs=2, verbose=0).fit(frame, pd.Series(bags), props)
    assert clf.feature_names_in_.tolist() == ["a", "b", "c", "d"]
    with pytest.warns(UserWarning, match="feature names"):
        clf.predict(X)


def test_sparse_input(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=2, verbose=0, random_state=0)
    dense = clf.fit(X, bags, props).predict_proba(X)
    sparse = clone(clf).fit(sp.csr_matrix(X), bags, props).predict_proba(X)
    np.testing.assert_allclose(dense, sparse, rtol=1e-5)


def test_learning_improves_the_proportion_loss(small_bags):
    X, bags, props, y = small_bags
    clf = LLPClassifier(max_epochs=40, verbose=0, random_state=0).fit(X, bags, props)
    losses = np.array(clf.history[:, "train_loss"])
    # the proportion loss is bounded below by the mean entropy of the bags
    bag_rows = props[np.unique(bags, return_index=True)[1]]
    floor = -np.mean(np.sum(bag_rows * np.log(np.clip(bag_rows, 1e-12, 1)), 1))
    assert losses[-1] - floor < 0.3 * (losses[0] - floor), (losses, floor)
    assert np.mean(clf.predict(X) == y) > 0.8


def test_clone_and_params(small_bags):
    clf = LLPClassifier(method="dllp", module__hidden_sizes=(8,), lr=0.01)
    params = clf.get_params()
    assert params["method"] == "dllp"
    assert params["module__hidden_sizes"] == (8,)
    assert params["device"] == "auto"
    assert not any(name.startswith("_") for name in params)
    twin = clone(clf)
    assert twin.get_params()["module__hidden_sizes"] == (8,)
    twin.set_params(method="vat", method__eps=2.0, module__hidden_sizes=(4,))
    X, bags, props, _ = small_bags
    twin.set_params(max_epochs=1, verbose=0).fit(X, bags, props)
    assert twin.module_.layers[0].out_features == 4
    assert twin.method_.eps == 2.0
    assert twin.get_params()["device"] == "auto"


def test_random_state_makes_cpu_fits_bit_identical(small_bags):
    X, bags, props, _ = small_bags
    first = LLPClassifier(max_epochs=3, verbose=0, random_state=7).fit(X, bags, props)
    second = clone(first).fit(X, bags, props)
    other = clone(first).set_params(random_state=8).fit(X, bags, props)
    assert np.array_equal(first.predict_proba(X), second.predict_proba(X))
    assert not np.array_equal(first.predict_proba(X), other.predict_proba(X))


def test_fit_leaves_the_global_torch_rng_alone(small_bags):
    X, bags, props, _ = small_bags
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    LLPClassifier(max_epochs=1, verbose=0, random_state=0).fit(X, bags, props)
    assert torch.rand(1) == expected


def test_pickle_round_trip_gives_identical_predictions(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=2, verbose=0, random_state=0).fit(X, bags, props)
    restored = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(clf.predict_proba(X), restored.predict_proba(X))
    assert restored.device == "auto"


def test_save_and_load_params(small_bags, tmp_path):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=2, verbose=0, random_state=0).fit(X, bags, props)
    clf.save_params(f_params=tmp_path / "params.pt")
    fresh = LLPClassifier(max_epochs=0, verbose=0).fit(X, bags, props)
    fresh.load_params(f_params=tmp_path / "params.pt")
    assert np.array_equal(clf.predict_proba(X), fresh.predict_proba(X))


def test_partial_fit_continues_the_step_count(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=2, batch_size=40, verbose=0).fit(X, bags, props)
    assert clf.n_train_steps_ == 6
    clf.partial_fit(X, bags, props)
    assert clf.n_train_steps_ == 12
    assert clf.total_steps_ == 6  # the ramp-up keeps the plan of the first fit
    assert len(clf.history) == 4


def test_pipeline_with_scaler(small_bags):
    X, bags, props, y = small_bags
    pipe = make_pipeline(
        StandardScaler(), LLPClassifier(max_epochs=20, verbose=0, random_state=0)
    )
    pipe.fit(X * 100, bags, llpclassifier__props=props)
    assert np.mean(pipe.predict(X * 100) == y) > 0.7


class TinyNet(torch.nn.Module):
    def __init__(self, n_features, n_classes, width=5):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(n_features, width),
            torch.nn.BatchNorm1d(width),
            torch.nn.Dropout(0.5),
            torch.nn.ReLU(),
            torch.nn.Linear(width, n_classes),
        )

    def forward(self, X):
        return self.net(X)


def test_custom_module_class_is_sized_from_data(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(TinyNet, module__width=6, max_epochs=2, verbose=0)
    clf.fit(X, bags, props)
    assert clf.module_.net[0].in_features == 4
    assert clf.module_.net[-1].out_features == 3
    assert clf.module_.net[0].out_features == 6


def test_custom_module_instance(small_bags):
    X, bags, props, _ = small_bags
    module = torch.nn.Sequential(torch.nn.Linear(4, 3))
    weight = module[0].weight.detach().clone()
    clf = LLPClassifier(module, max_epochs=2, verbose=0).fit(X, bags, props)
    # the instance is a template: a re-initialised copy of it is trained
    assert type(clf.module_) is torch.nn.Sequential and clf.module_ is not module
    assert torch.equal(module[0].weight, weight)
    assert not torch.equal(clf.module_[0].weight, weight)


def test_batchnorm_statistics_see_only_clean_passes(small_bags):
    """With VAT, BatchNorm running stats must equal those of a DLLP fit."""
    X, bags, props, _ = small_bags
    stats = {}
    for method in (DLLP(), VAT(alpha=1.0, rampup=0.0)):
        clf = LLPClassifier(
            TinyNet,
            method=method,
            max_epochs=1,
            verbose=0,
            random_state=0,
            lr=1e-12,
        ).fit(X, bags, props)
        bn = clf.module_.net[1]
        name = type(method).__name__.lower()
        stats[name] = (bn.running_mean.clone(), int(bn.num_batches_tracked))
    # lr ~ 0: same weights, so the same clean batches give the same statistics
    torch.testing.assert_close(stats["dllp"][0], stats["vat"][0])
    assert stats["dllp"][1] == stats["vat"][1]


def test_validation_fraction_holds_out_whole_bags(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=2, validation_fraction=0.25, verbose=0)
    clf.fit(X, bags, props)
    assert np.isfinite(clf.history[-1, "valid_loss"])
    # 9 training bags of 10 in batches of 128: one batch per epoch
    assert clf.history[-1, "train_batch_count"] == 1
    assert sum(clf.history[-1, "batches", :, "train_batch_size"]) == 90


def test_max_bag_size_bounds_the_batch(small_bags):
    X, _, props, _ = small_bags
    bags = np.repeat([0, 1], 60)
    proportions = np.repeat([[0.5, 0.3, 0.2], [0.2, 0.3, 0.5]], 60, axis=0)
    clf = LLPClassifier(max_epochs=1, max_bag_size=16, batch_size=8, verbose=0)
    clf.fit(X, bags, proportions)
    assert clf.history[-1, "batches", :, "train_batch_size"] == [16, 16]


def test_lr_scheduler_callback_anneals_per_epoch(small_bags):
    """skorch's LRScheduler (the README's cosine recipe) steps in our loop."""
    X, bags, props, _ = small_bags
    schedule = LRScheduler(policy="CosineAnnealingLR", T_max=4)
    clf = LLPClassifier(max_epochs=2, verbose=0, random_state=0, callbacks=[schedule])
    clf.fit(X, bags, props)
    # half-way through a cosine from 1e-3 to 0 over 4 epochs
    assert clf.optimizer_.param_groups[0]["lr"] == pytest.approx(5e-4)
    clf.partial_fit(X, bags, props)
    assert clf.optimizer_.param_groups[0]["lr"] == pytest.approx(0.0, abs=1e-12)


def test_progress_bar_callback(small_bags, capsys):
    X, bags, props, _ = small_bags
    LLPClassifier(max_epochs=1, callbacks=[ProgressBar("count")]).fit(X, bags, props)
    assert "train_loss" in capsys.readouterr().out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_fit_predicts_after_moving_to_cpu(small_bags):
    X, bags, props, y = small_bags
    clf = LLPClassifier(max_epochs=30, verbose=0, random_state=0).fit(X, bags, props)
    assert next(clf.module_.parameters()).is_cuda
    assert np.mean(clf.predict(X) == y) > 0.8
    cpu = pickle.loads(pickle.dumps(clf.set_params(device="cpu")))
    assert not next(cpu.module_.parameters()).is_cuda
    np.testing.assert_allclose(cpu.predict_proba(X), clf.predict_proba(X), atol=1e-5)


def _problem(sizes, seed=0, n_features=4):
    rng = np.random.RandomState(seed)
    bags = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.random_sample(len(bags)) < rng.uniform(0.05, 0.95, len(sizes))[bags]
    X = rng.normal(size=(len(bags), n_features)) + y[:, None]
    return X, bags, label_proportions(bags, y.astype(int))


@pytest.mark.parametrize(
    "sizes, expected",
    [
        ([16] * 40, 128),  # small bags share the minimum batch
        ([64] * 20, 128),
        ([256] * 20, 8 * 256),  # large bags: 8 a step
        ([5000] + [300] * 30, 8 * 300),  # the median bag decides
        ([4000] * 4, 8 * 1024),  # capped at max_bag_size
    ],
)
def test_batch_size_auto(sizes, expected):
    X, bags, table = _problem(sizes)
    clf = LLPClassifier(max_epochs=0, verbose=0, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IdentifiabilityWarning)
        clf.fit(X, bags, table)
    assert clf.batch_size_ == expected
    clf.set_params(batch_size=64).fit(X, bags, table)
    assert clf.batch_size_ == 64


def test_validation_fraction_counts_rows_with_a_giant_bag():
    # one bag holds 45 % of the rows: holding out 10 % of the bags by count
    # could hold out 45 % of the rows; by rows it never exceeds 10 % + a bag
    sizes = [4500] + list(np.random.RandomState(0).randint(20, 200, 50))
    X, bags, table = _problem(sizes)
    checked = check_bags(bags, table)
    largest_other = max(sizes[1:])
    for seed in range(20):
        splitter = BagShuffleSplit(1, test_size=0.1, random_state=seed)
        _, valid = next(splitter.split_bags(checked))
        rows = checked.sizes[valid].sum()
        assert 0 < rows <= 0.1 * sum(sizes) + largest_other / 2
        assert not valid[0]


def test_fit_warns_when_bags_cannot_identify_the_classifier():
    rng = np.random.RandomState(0)
    X = rng.normal(size=(600, 4))
    y = rng.randint(0, 2, 600)
    bags = rng.randint(0, 6, 600)  # six random groups: near-equal rates
    with pytest.warns(IdentifiabilityWarning, match="may not identify") as record:
        LLPClassifier(max_epochs=1, verbose=0).fit(X, bags, label_proportions(bags, y))
    assert record[0].filename == __file__  # points at the user's call
    X, bags, table = _problem([16] * 60)  # informative bags: quiet
    with warnings.catch_warnings():
        warnings.simplefilter("error", IdentifiabilityWarning)
        LLPClassifier(max_epochs=1, verbose=0).fit(X, bags, table)


@pytest.mark.parametrize("n_threads, expected", [("auto", 1), (2, 2)])
def test_threads_are_set_during_fit_and_restored(n_threads, expected):
    X, bags, table = _problem([16] * 30)
    seen = []

    class Spy(torch.nn.Module):
        def __init__(self, n_features, n_classes):
            super().__init__()
            self.linear = torch.nn.Linear(n_features, n_classes)

        def forward(self, X):
            seen.append(torch.get_num_threads())
            return self.linear(X)

    before = torch.get_num_threads()
    clf = LLPClassifier(Spy, n_threads=n_threads, max_epochs=1, verbose=0)
    clf.fit(X, bags, table).predict(X)
    assert set(seen) == {expected}
    assert torch.get_num_threads() == before


def test_epoch_table_is_plain_text_in_a_pipe(capsys):
    X, bags, table = _problem([16] * 30)
    LLPClassifier(max_epochs=2, verbose=1, validation_fraction=0.2).fit(X, bags, table)
    out = capsys.readouterr().out  # captured: not a terminal
    assert "\x1b[" not in out
    assert re.search(r"valid_hard_l1", out) and "*" in out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_training_rows_stay_on_the_gpu():
    from sklearn_llp.neural._runtime import resident as _resident

    X = torch.zeros(100, 4)
    assert _resident(X, "cuda").device.type == "cuda"
    assert _resident(X, "cpu") is X
    X, bags, table = _problem([16] * 30)
    clf = LLPClassifier(max_epochs=2, verbose=0, device="cuda", random_state=0)
    proba = clf.fit(X, bags, table).predict_proba(X)
    clf.set_params(device="cpu")
    np.testing.assert_allclose(clf.predict_proba(X), proba, atol=1e-5)


def small(**params):
    defaults = dict(
        module__hidden_sizes=(16,),
        max_epochs=5,
        verbose=0,
        random_state=0,
        device="cpu",
    )
    return LLPClassifier(**{**defaults, **params})


# ---------------------------------------------------------------- case 1
def test_score_without_props_is_refused_for_a_model_fitted_on_bags(problem):
    X, bags, props, y = problem
    clf = small().fit(X, bags, props)
    with pytest.raises(ValueError, match="fitted on bags, so y holds bag ids"):
        clf.score(X, bags)
    assert 0 <= clf.score(X, bags, props) <= 1
    supervised = small().fit(X, y)  # fitted on labels: plain accuracy
    assert supervised.score(X, y) == np.mean(supervised.predict(X) == y)


def test_grid_search_default_scoring_with_routing_off_never_ranks_by_bag_ids(
    problem,
):
    X, bags, props, _ = problem
    search = GridSearchCV(small(), {"lr": [1e-4, 1e-2]}, cv=BagKFold(3))
    with pytest.warns(UserWarning, match="fitted on bags"):
        search.fit(X, bags, props=props)
    assert np.isnan(search.cv_results_["mean_test_score"]).all()
    raising = GridSearchCV(
        small(), {"lr": [1e-4, 1e-2]}, cv=BagKFold(3), error_score="raise"
    )
    with pytest.raises(ValueError, match="make_bag_scorer"):
        raising.fit(X, bags, props=props)
    # the README's routing-off recipe works
    scorer = make_bag_scorer("hard_l1", bags=bags, props=props)
    search = GridSearchCV(small(), {"lr": [1e-4, 1e-2]}, cv=BagKFold(3), scoring=scorer)
    search.fit(X, bags, props=props)
    assert np.isfinite(search.cv_results_["mean_test_score"]).all()


# ---------------------------------------------------------------- case 2
@pytest.mark.parametrize("string_ids", [False, True])
def test_cross_val_predict_gives_one_column_per_class(problem, string_ids):
    X, bags, props, _ = problem
    if string_ids:
        bags = np.array([f"bag {b}" for b in bags])
        props = pd.DataFrame(props, index=bags).groupby(level=0).first()
    clf = small()
    with pytest.raises(TypeError, match="sklearn_llp.model_selection.cross_val_pre"):
        sklearn_cross_val_predict(
            clf,
            X,
            bags,
            cv=BagKFold(3),
            params={"props": props},
            method="predict_proba",
        )
    proba = cross_val_predict(
        clf, X, bags, props, cv=BagKFold(3), method="predict_proba"
    )
    assert proba.shape == (60, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-5)
    # each fold's rows come from a model fitted on the other folds' bags
    checked = check_bags(bags, props)
    for train, test in BagKFold(3).split(X, bags):
        fold = clone(clf).fit(X[train], checked.restrict(train)[0])
        np.testing.assert_allclose(fold.predict_proba(X[test]), proba[test])
    argmax = clf.set_params(threshold="argmax")
    labels = cross_val_predict(argmax, X, bags, props, cv=BagKFold(3))
    np.testing.assert_array_equal(labels, np.array([0, 1])[proba.argmax(axis=1)])


# ---------------------------------------------------------------- case 3
def test_composite_keys_as_tuples_are_keys_not_row_lists(problem):
    X, bags, props, y = problem
    band = bags // 2  # 5 values
    region = bags % 2  # 2 values: (band, region) is the bag
    as_tuples = list(zip(band, region))
    as_strings = np.array([f"{b}-{r}" for b, r in as_tuples])
    as_frame = pd.DataFrame({"band": band, "region": region})
    reference = check_bags(as_strings, props)
    for keys in (as_tuples, pd.Series(as_tuples), as_frame):
        checked = check_bags(keys, props)
        assert checked.n_bags == 10 and not checked.overlapping
        np.testing.assert_array_equal(checked.sizes, reference.sizes)
        np.testing.assert_array_equal(checked.codes, reference.codes)
    proba = small().fit(X, as_tuples, props).predict_proba(X)
    assert hard_l1_error(as_tuples, props, proba) == hard_l1_error(
        as_strings, props, proba
    )
    # the rows a fit trains on: all 60, not the first pair of "indices"
    clf = small(batch_size=6, max_epochs=1).fit(X, as_tuples, props)
    assert clf.n_train_steps_ == 10
    # lists of index arrays stay overlapping bags
    assert check_bags([[0, 1], [1, 2]], n_samples=3).overlapping


# ---------------------------------------------------------------- case 4
def test_sample_aligned_dataframe_not_subset_with_X_is_refused(problem):
    X, bags, props, _ = problem
    frame = pd.DataFrame(props, columns=["no", "yes"])
    train = np.arange(42)
    with pytest.raises(ValueError, match="props has 60 rows but X has 42"):
        small().fit(X[train], bags[train], frame)
    small().fit(X[train], bags[train], frame.iloc[train])  # the right call
    # a real per-bag table (its index holds bag ids) may have extra bags
    table = frame.groupby(bags).first().rename_axis("bag")
    small().fit(X[train], bags[train], table)
    # a per-bag table that happens to have one row per sample reads both ways
    ids = np.array([10, 10, 11, 11])
    tricky = pd.DataFrame([[1, 0], [0, 1], [0, 1], [1, 0]], index=[12, 13, 10, 11])
    with pytest.raises(ValueError, match="reads both as sample-aligned"):
        check_bags(ids, tricky)
    assert check_bags(ids, tricky.to_dict("index")).props.tolist() == [
        [0, 1],
        [1, 0],
    ]


# ---------------------------------------------------------------- case 5
def test_a_diverged_fit_stops_with_an_error_and_is_not_fitted(problem):
    X, bags, props, _ = problem
    clf = small(lr=1e20, validation_fraction=0.2)
    with pytest.raises(FitDivergedError, match=r"epoch \d+, batch \d+.*lr=1e\+20"):
        clf.fit(X, bags, props)
    with pytest.raises(NotFittedError):
        clf.predict(X)
    assert not any(np.isfinite(row.get("valid_hard_l1", np.nan)) for row in clf.history)


def test_nan_weights_give_an_error_not_a_prediction(problem):
    X, bags, props, _ = problem
    clf = small().fit(X, bags, props)
    with torch.no_grad():
        next(clf.module_.parameters()).fill_(np.nan)
    with pytest.raises(ValueError, match="NaN or infinite probabilities"):
        clf.predict(X)


# ---------------------------------------------------------------- case 6
def test_a_failed_warm_start_refit_leaves_the_model_as_it_was(problem):
    X, bags, props, _ = problem
    clf = small(warm_start=True).fit(X, bags, props)
    before = clf.predict_proba(X)
    three = np.column_stack([props * 0.5, 0.5 * np.ones(60)])
    with pytest.raises(ValueError, match="same classes"):
        clf.fit(X, bags, three)
    with pytest.raises(ValueError, match="X has 3 features"):
        clf.fit(X[:, :3], bags, props)
    assert clf.classes_.tolist() == [0, 1] and clf.n_features_in_ == 4
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    clf.set_params(warm_start=False).fit(X[:, :3], bags, three)  # afresh: fine
    assert clf.n_features_in_ == 3 and len(clf.classes_) == 3


# ---------------------------------------------------------------- case 7
def test_method_hyperparameters_are_skorch_style_parameters(problem):
    X, bags, props, _ = problem
    clf = small(method="vat")
    assert clf.get_params()["method__alpha"] == VAT().alpha
    clf.set_params(method__alpha=0.5).fit(X, bags, props)
    assert clf.method_.alpha == 0.5 and clf.get_params()["method__alpha"] == 0.5
    assert clone(clf).get_params()["method__alpha"] == 0.5
    search = GridSearchCV(
        small(max_epochs=2),
        {"method__alpha": [0.01, 0.5]},
        cv=BagKFold(2),
        scoring=make_bag_scorer("hard_l1", bags=bags, props=props),
        error_score="raise",
    ).fit(X, bags, props=props)
    assert search.best_estimator_.method_.alpha in (0.01, 0.5)
    assert [p["method__alpha"] for p in search.cv_results_["params"]] == [0.01, 0.5]


def test_one_method_construction_per_fit(problem):
    X, bags, props, _ = problem

    class Counted(LLPMethod):
        built = 0

        def __init__(self, scale=1.0):
            type(self).built += 1
            self.scale = scale

        def get_loss(self, module, X, logits, bags, step, total_steps):
            return self.scale * bags.proportion_loss(logits)

    clf = small(method=Counted(), method__scale=2.0)
    Counted.built = 0
    clf.fit(X, bags, props)
    assert Counted.built == 1 and clf.method_.scale == 2.0
    clf.partial_fit(X, bags, props)
    assert Counted.built == 2


# ---------------------------------------------------------------- case 8
def test_resetting_the_module_after_fit_warns_and_unfits(problem):
    X, bags, props, _ = problem
    clf = small().fit(X, bags, props)
    with pytest.warns(ModelResetWarning, match="module__dropout"):
        clf.set_params(module__dropout=0.5)
    with pytest.raises(NotFittedError):
        clf.predict(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        clf.set_params(lr=0.01)  # the optimizer's lr keeps the weights
        small().set_params(module__dropout=0.5)  # not fitted: nothing to lose
    clf.fit(X, bags, props).predict(X)


# ---------------------------------------------------------------- case 9
def test_bool_ids_with_a_bool_indexed_table_are_looked_up_by_label():
    bags = np.array([False, False, True, True])
    table = pd.DataFrame({"no": [0.0, 1.0], "yes": [1.0, 0.0]}, index=[True, False])
    checked = check_bags(bags, table)
    assert checked.ids.tolist() == [False, True]
    np.testing.assert_array_equal(checked.props, [[1.0, 0.0], [0.0, 1.0]])


def test_float_rounding_negatives_are_zero_but_real_negatives_fail():
    tiny = 1 - 0.3 - 0.3 - 0.4  # -5.6e-17
    checked = check_bags([0, 1], [[0.3, 0.3, 0.4 + tiny], [tiny, 0.5, 0.5 - tiny]])
    assert (checked.props >= 0).all()
    with pytest.raises(ValueError, match="negative"):
        check_bags([0, 1], [[-0.001, 1.001], [0.5, 0.5]])


def test_epoch_scoring_gets_a_clear_error_and_callbacks_may_be_a_tuple(problem):
    X, bags, props, _ = problem
    with pytest.raises(TypeError, match="validation_fraction.*valid_hard_l1"):
        small(callbacks=[EpochScoring("accuracy")]).fit(X, bags, props)
    clf = small(callbacks=(ProgressBar("count"),)).fit(X, bags, props)
    assert clf.predict(X).shape == (60,)


def test_initialize_then_load_params(problem, tmp_path):
    X, bags, props, _ = problem
    clf = small().fit(X, bags, props)
    clf.save_params(f_params=tmp_path / "params.pt")
    with pytest.raises(ValueError, match="module__n_features"):
        small().initialize()
    restored = small(module__n_features=4, classes=[0, 1]).initialize()
    with pytest.raises(NotFittedError):
        restored.predict(X)
    restored.load_params(f_params=tmp_path / "params.pt")
    np.testing.assert_array_equal(restored.predict_proba(X), clf.predict_proba(X))


def test_bag_scorer_on_overlapping_bags(problem):
    X, _, _, y = problem
    lists = [np.arange(i, i + 8) for i in range(0, 52, 4)]
    per_bag = np.stack([np.bincount(y[r], minlength=2) / len(r) for r in lists])
    clf = small(threshold="argmax").fit(X, lists, per_bag)
    score = BagScorer("hard_l1")(clf, X, lists, props=per_bag)
    assert score == -hard_l1_error(lists, per_bag, clf.predict_proba(X))
    matrix = sp.csr_matrix(check_bags(lists, n_samples=60).membership())
    assert BagScorer("hard_l1")(clf, X, matrix, props=per_bag) == score


@pytest.mark.parametrize("seed", range(20))
def test_validation_fraction_on_overlapping_bags_is_capped(seed):
    rng = np.random.RandomState(seed)
    # 30 bags in chains of 3 sharing a row: 10 connected groups of 7 rows
    lists = []
    for start in range(0, 70, 7):
        lists += [
            np.arange(start, start + 3),
            np.arange(start + 2, start + 5),
            np.arange(start + 4, start + 7),
        ]
    checked = check_bags(lists, rng.dirichlet([1, 1], 30), n_samples=70)
    train, valid = next(
        BagShuffleSplit(1, test_size=0.2, random_state=seed).split_bags(checked)
    )
    rows = np.unique(checked.members[valid[checked.pair_bags]])
    assert 0.2 * 70 - 7 / 2 <= len(rows) <= 0.2 * 70 + 7 / 2
    assert train.sum() >= 0.7 * 30
