"""LLPClassifier and LLPRegressor beyond the conformance suite."""

import pickle
import re
import time
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.metrics import accuracy_score, r2_score
from sklearn.model_selection import cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import LRScheduler, ProgressBar

from sklearn_llp import LLPClassifier, LLPRegressor
from sklearn_llp.bags import UniformBagGenerator, label_proportions
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import IdentifiabilityWarning, ModelResetWarning
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.methods import DLLP, VAT, LLPMethod
from sklearn_llp.metrics import bag_r2_scorer, hard_l1_scorer, make_bag_scorer
from sklearn_llp.model_selection import BagKFold, BagShuffleSplit, cross_val_predict
from sklearn_llp.modules import MLP
from sklearn_llp.neural._data import ArrayDataset

C, R = "classification", "regression"
ESTIMATOR = {C: LLPClassifier, R: LLPRegressor}
KEY = {C: "props", R: "targets"}


def small(task=C, **params):
    defaults = dict(module__hidden_sizes=(16,), max_epochs=5, verbose=0, random_state=0)
    return ESTIMATOR[task](**{**defaults, "device": "cpu", **params})


def task_data(small_bags, task):
    """``small_bags`` (12 bags of 10, 3 classes) with bag proportions, or
    with the bag means of a linear target."""
    X, bags, props, y = small_bags
    if task == C:
        return X, bags, props, y
    target = X @ [1.0, -2.0, 0.5, 0.0]
    return X, bags, (np.bincount(bags, weights=target) / 10)[bags], target


def output(est, X):
    return est.predict_proba(X) if hasattr(est, "predict_proba") else est.predict(X)


# --- learning
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


def test_learning_improves_the_proportion_loss(small_bags):
    X, bags, props, y = small_bags
    clf = LLPClassifier(max_epochs=40, verbose=0, random_state=0).fit(X, bags, props)
    losses = np.array(clf.history[:, "train_loss"])
    # the proportion loss is bounded below by the mean entropy of the bags
    bag_rows = props[np.unique(bags, return_index=True)[1]]
    floor = -np.mean(np.sum(bag_rows * np.log(np.clip(bag_rows, 1e-12, 1)), 1))
    assert losses[-1] - floor < 0.3 * (losses[0] - floor), (losses, floor)
    assert np.mean(clf.predict(X) == y) > 0.8


def test_fitted_attributes_history_and_probabilities(small_bags):
    X, bags, props, _ = small_bags
    params = dict(batch_size=20, validation_fraction=0.25, predict_batch_size=7)
    clf = LLPClassifier(max_epochs=4, verbose=0, **params)
    proba = clf.fit(X, bags, props).predict_proba(X)
    assert clf.n_features_in_ == 4
    assert len(clf.history) == 4
    assert all(np.isfinite(clf.history[:, "train_loss"]))
    assert np.isfinite(clf.history[-1, "valid_loss"])
    # 9 training bags of 10 (3 whole bags held out) in batches of 20: 5
    # steps per epoch
    assert sum(clf.history[-1, "batches", :, "train_batch_size"]) == 90
    assert clf.n_train_steps_ == 20 == clf.total_steps_
    assert isinstance(clf.module_, MLP)
    assert type(clf.method_).__name__ == "VAT"
    assert proba.shape == (len(X), 3)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    # outputs written batch by batch (7 rows) into one tensor: skorch's cat
    rows = ArrayDataset(torch.as_tensor(X, dtype=torch.float32))
    batches = torch.cat(list(clf.forward_iter(rows)))
    assert torch.equal(clf.forward(rows), batches) and len(batches) == len(X)


# --- forms of X, pipelines, parameters
@pytest.mark.parametrize("form", ["frame", "sparse"])
@pytest.mark.parametrize("task", [C, R, "MeanMapClassifier"])
def test_a_frame_or_sparse_X_gives_the_dense_fit(small_bags, task, form):
    X, bags, values, _ = task_data(small_bags, R if task == R else C)
    net = lambda: small(task, max_epochs=2)  # noqa: E731
    make = MeanMapClassifier if task not in ESTIMATOR else net
    dense = output(make().fit(X, bags, values), X)
    if form == "sparse":
        est = make().fit(sp.csr_matrix(X), bags, values)
        np.testing.assert_allclose(output(est, sp.csc_matrix(X)), dense, rtol=1e-5)
        return
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    est = make().fit(frame, pd.Series(bags), values)
    assert est.feature_names_in_.tolist() == ["a", "b", "c", "d"]
    np.testing.assert_allclose(output(est, frame), dense, rtol=1e-5)
    with pytest.warns(UserWarning, match="feature names"):
        est.predict(X)  # fitted with names, given none
    with pytest.raises(ValueError, match="feature names"):
        est.predict(frame[["b", "a", "c", "d"]])


@pytest.mark.parametrize("task", [C, R])
def test_a_pipeline_routes_the_bag_values_to_the_estimator(small_bags, task):
    X, bags, values, _ = task_data(small_bags, task)
    est = small(task)
    pipe = make_pipeline(StandardScaler(), est)
    pipe.fit(X * 100, bags, **{f"{type(est).__name__.lower()}__{KEY[task]}": values})
    scaled = StandardScaler().fit_transform(X * 100)
    direct = small(task).fit(scaled, bags, values)
    np.testing.assert_array_equal(pipe.predict(X * 100), direct.predict(scaled))
    # routing off: what works, and where positional values went
    works = r"routing off.*set_config\(enable_metadata_routing=True\).*pipeline\[-1\]"
    went = "positionally arrived as sample_weight" if task == C else "were these the"
    with pytest.raises(ValueError, match=works) as info:
        pipe.score(X * 100, bags, values)
    assert went in str(info.value)
    with pytest.raises(ValueError, match=works):
        pipe.score(X * 100, bags, **{KEY[task]: values})
    with sklearn.config_context(enable_metadata_routing=True):
        score = pipe.score(X * 100, bags, **{KEY[task]: values})
    assert score == direct.score(scaled, bags, values)


def test_predict_log_proba_is_the_log_of_predict_proba_in_a_pipeline(small_bags):
    X, bags, props, _ = small_bags
    pipe = make_pipeline(StandardScaler(), small()).fit(
        X, bags, llpclassifier__props=props
    )
    far = np.vstack([X, 1e4 * X[:5]])  # probabilities that round to 0
    proba, log_proba = pipe.predict_proba(far), pipe.predict_log_proba(far)
    assert (proba == 0).any() and np.isfinite(log_proba).all()
    positive = proba > 0
    np.testing.assert_allclose(
        log_proba[positive], np.log(proba[positive]), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("make", [small, MeanMapClassifier])
def test_fit_warns_when_props_of_make_bags_lost_their_class_names(small_bags, make):
    X, _, _, y = small_bags
    gen = UniformBagGenerator(10, random_state=0)
    bags, props = gen.make_bags(X, np.array(["a", "b", "c"])[y])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        make().fit(X, bags, props[:, :])  # a view of them, unnamed
        named = make(classes=gen.classes_).fit(X, bags, props)
        make().fit(X, *gen.make_bags(X, y))  # classes 0, 1, 2: the positions
    [lost] = [w for w in record if "make_bags" in str(w.message)]
    assert re.search(r"\['a', 'b', 'c'\].*positions \[0, 1, 2\]", str(lost.message))
    assert lost.filename == __file__ and set(named.predict(X)) <= {"a", "b", "c"}


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


def test_a_module_class_is_sized_from_data(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(TinyNet, module__width=6, max_epochs=2, verbose=0)
    clf.fit(X, bags, props)
    first, last = clf.module_.net[0], clf.module_.net[-1]
    assert (first.in_features, last.out_features, first.out_features) == (4, 3, 6)
    # (an instance is a template: test_conformance, test_fit_state)
    assert not any(name.startswith("_") for name in clf.get_params())


def test_batchnorm_statistics_see_only_clean_passes(small_bags):
    """With VAT, BatchNorm running stats must equal those of a DLLP fit."""
    X, bags, props, _ = small_bags
    stats = {}
    for method in (DLLP(), VAT(alpha=1.0, rampup=0.0)):
        clf = LLPClassifier(
            TinyNet, method=method, max_epochs=1, verbose=0, random_state=0, lr=1e-12
        ).fit(X, bags, props)
        bn = clf.module_.net[1]
        name = type(method).__name__.lower()
        stats[name] = (bn.running_mean.clone(), int(bn.num_batches_tracked))
    # lr ~ 0: same weights, so the same clean batches give the same statistics
    torch.testing.assert_close(stats["dllp"][0], stats["vat"][0])
    assert stats["dllp"][1] == stats["vat"][1]


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


# --- batches and held-out bags
def _problem(sizes, seed=0, n_features=4):
    rng = np.random.RandomState(seed)
    bags = np.repeat(np.arange(len(sizes)), sizes)
    y = rng.random_sample(len(bags)) < rng.uniform(0.05, 0.95, len(sizes))[bags]
    X = rng.normal(size=(len(bags), n_features)) + y[:, None]
    return X, bags, label_proportions(bags, y.astype(int))


@pytest.mark.parametrize(
    "sizes, method, expected",
    [
        ([16] * 40, "auto", 128),  # small bags share the minimum batch
        ([64] * 20, "auto", 128),
        ([256] * 80, "auto", 8 * 256),  # large bags: 8 a step
        ([256] * 20, "vat", 2 * 256),  # few: fewer a step, at least 8 steps
        ([5000] + [300] * 30, "dllp", 3 * 300),  # the median bag decides
        ([4000] * 4, "dllp", 1024),  # capped at max_bag_size
        ([300] * 20, "easyllp", 8 * 300),  # a loss of whole bags keeps 8
        ([256] * 20, "dllp3", 8 * 256),  # and three classes
    ],
)
def test_batch_size_auto(sizes, method, expected):
    X, bags, table = _problem(sizes)
    if method == "dllp3":
        y = np.random.RandomState(0).randint(3, size=len(bags))
        method, table = "dllp", label_proportions(bags, y)
    clf = LLPClassifier(method=method, max_epochs=0, verbose=0, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identifiability, EasyLLP's own test
        assert clf.fit(X, bags, table).batch_size_ == expected
        assert clf.set_params(batch_size=64).fit(X, bags, table).batch_size_ == 64


def _chains():
    """30 bags in chains of 3 sharing a row: 10 connected groups of 7 rows."""
    return [np.arange(s + k, s + k + 3) for s in range(0, 70, 7) for k in (0, 2, 4)]


@pytest.mark.parametrize("layout", ["giant_bag", "overlapping_chains"])
def test_the_hold_out_is_a_fraction_of_the_rows(layout):
    """Holding out 10 % (20 %) of the bags by count could hold out a bag of
    45 % of the rows; by rows it stays within half a bag (group) of it."""
    rng = np.random.RandomState(0)
    if layout == "giant_bag":
        sizes = [4500] + list(rng.randint(20, 200, 50))
        checked = check_bags(*_problem(sizes)[1:])
        fraction, slack, n = 0.1, max(sizes[1:]) / 2, sum(sizes)
        low = 0
    else:
        checked = check_bags(_chains(), rng.dirichlet([1, 1], 30), n_samples=70)
        fraction, slack, n = 0.2, 7 / 2, 70
        low = fraction * n - slack
    for seed in range(20):
        splitter = BagShuffleSplit(1, test_size=fraction, random_state=seed)
        train, valid = next(splitter.split_bags(checked))
        rows = np.unique(checked.members[valid[checked.pair_bags]])
        assert low < len(rows) <= fraction * n + slack
        if layout == "giant_bag":
            assert not valid[0]
        else:
            assert train.sum() >= 0.7 * 30


# --- callbacks, verbosity, threads and devices
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


def test_epoch_table_is_plain_text_in_a_pipe_and_callbacks_may_be_a_tuple(capsys):
    X, bags, table = _problem([16] * 30)
    bar = (ProgressBar("count"),)  # a tuple
    clf = LLPClassifier(max_epochs=2, verbose=2, validation_fraction=0.2, callbacks=bar)
    clf.fit(X, bags, table)
    captured = capsys.readouterr()  # captured: not a terminal
    assert "\x1b[" not in captured.out
    assert re.search(r"rows_per_s +steps +train_loss.*valid_hard_l1", captured.out)
    assert "*" in captured.out and captured.err  # the progress bar
    assert clf.history[:, "steps"] == clf.history[:, "train_batch_count"]
    assert "steps" not in clf.set_params(verbose=1).fit(X, bags, table).history[0]
    with pytest.raises(ValueError, match="'verbose' parameter"):
        clf.set_params(verbose=-1).fit(X, bags, table)


@pytest.mark.slow
def test_threads_and_a_torch_device_hold_during_fit_and_predict():
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
    params = dict(n_threads=2, max_epochs=1, verbose=0, random_state=0)
    clf = LLPClassifier(Spy, device=torch.device("cpu"), **params)
    proba = clf.fit(X, bags, table).predict_proba(X)
    assert set(seen) == {2}
    assert torch.get_num_threads() == before
    by_string = LLPClassifier(Spy, device="cpu", **params).fit(X, bags, table)
    assert by_string.batch_size_ == clf.batch_size_
    np.testing.assert_array_equal(by_string.predict_proba(X), proba)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_cuda_fit_keeps_its_rows_on_the_gpu_and_predicts_on_the_cpu(small_bags):
    from sklearn_llp.neural._runtime import resident

    assert resident(torch.zeros(100, 4), "cuda").device.type == "cuda"
    rows = torch.zeros(100, 4)
    assert resident(rows, "cpu") is rows
    X, bags, props, y = small_bags
    clf = LLPClassifier(max_epochs=30, verbose=0, random_state=0)  # "auto": CUDA
    proba = clf.fit(X, bags, props).predict_proba(X)
    assert next(clf.module_.parameters()).is_cuda
    assert np.mean(clf.predict(X) == y) > 0.8
    cpu = pickle.loads(pickle.dumps(clf.set_params(device="cpu")))
    assert not next(cpu.module_.parameters()).is_cuda
    np.testing.assert_allclose(cpu.predict_proba(X), proba, atol=1e-5)


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


# --- scoring and cross-validation
SCORING = {
    C: (
        hard_l1_scorer,
        "received no label proportions",
        r"got no props, but the model was fitted on bags.*accuracy_score\(y_true"
        r".*make_bag_scorer\('hard_l1'",
    ),
    R: (
        bag_r2_scorer,
        "received no bag means",
        r"got no targets, but the model was fitted on bags.*r2_score\(y_true"
        r".*make_bag_scorer\('r2'",
    ),
}


@pytest.mark.parametrize("task", [C, R])
def test_without_bag_values_scoring_is_refused_and_on_labels_it_is_plain(
    small_bags, task
):
    """Bag ids are no instance labels: a model fitted on bags refuses to
    score without props/targets; one fitted on labels (strings too) learns
    as a plain supervised model and scores accuracy / R^2."""
    X, bags, values, labels = task_data(small_bags, task)
    if task == C:
        labels = np.array(["a", "b", "c"])[labels]
    scorer, scorer_message, score_message = SCORING[task]
    est = small(task).fit(X, bags, values)
    with pytest.raises(ValueError, match=scorer_message):
        scorer(est, X, bags)
    with pytest.raises(ValueError, match=score_message):
        est.score(X, bags)
    supervised = ESTIMATOR[task](max_epochs=30, verbose=0, random_state=0)
    supervised.fit(X, labels)
    plain = accuracy_score if task == C else r2_score
    score = supervised.score(X, labels)
    assert score == pytest.approx(plain(labels, supervised.predict(X)), abs=1e-12)
    assert score > 0.9
    if task == C:
        assert supervised.classes_.tolist() == ["a", "b", "c"]


@pytest.mark.parametrize("task", [C, R])
def test_default_scoring_is_the_bag_metric_under_routing_and_refused_without(
    small_bags, task
):
    """``score(X, bags, props/targets)`` routed by a search: 1 - hard L1 / 2
    and the bag R^2, fold by fold. With routing off the search's fit stops
    naming the scorer to pass (not a NaN score per fold), and that scorer
    gives the same scores."""
    X, bags, values, _ = task_data(small_bags, task)
    cv, key = list(BagKFold(3).split(X, bags)), KEY[task]
    metric = "hard_l1" if task == C else "r2"

    def scores(**kw):
        return cross_validate(small(task), X, bags, cv=cv, params={key: values}, **kw)

    with sklearn.config_context(enable_metadata_routing=True):
        default = scores()
    with pytest.raises(ValueError, match=rf"make_bag_scorer\('{metric}'.*in fit"):
        scores(error_score="raise")
    scorer = make_bag_scorer(metric, bags=bags, **{key: values})
    table = scores(scoring=scorer)["test_score"]
    expected = 1 + table / 2 if task == C else table
    np.testing.assert_allclose(default["test_score"], expected, atol=1e-12)


@pytest.mark.parametrize("estimator", ["LLPClassifier", "MeanMapClassifier"])
@pytest.mark.slow
def test_cross_val_predict_predicts_each_fold_with_the_other_folds_model(
    problem, estimator
):
    """One column per class (string bag ids, a per-bag table), the sample
    weights passed to every fold's fit."""
    X, bags, props, _ = problem
    ids = np.array([f"bag {b}" for b in bags])
    table = pd.DataFrame(props, index=ids).groupby(level=0).first()
    w = np.random.RandomState(0).uniform(0.5, 2.0, len(X)) ** 4
    est = small() if estimator == "LLPClassifier" else MeanMapClassifier()
    fit_params = {"sample_weight": w}
    kw = dict(method="predict_proba")
    proba = cross_val_predict(est, X, ids, table, fit_params=fit_params, **kw)
    assert proba.shape == (60, 2)
    plain = cross_val_predict(est, X, ids, table, **kw)
    assert not np.allclose(proba, plain)  # the weights matter
    checked = check_bags(ids, table, sample_weight=w)
    for train, test in BagKFold(5).split(X, ids):
        fold = clone(est).fit(X[train], checked.restrict(train)[0])
        np.testing.assert_allclose(fold.predict_proba(X[test]), proba[test])
    labels = cross_val_predict(est.set_params(threshold="argmax"), X, ids, table)
    np.testing.assert_array_equal(labels, np.array([0, 1])[plain.argmax(axis=1)])


# --- refits and failures
def test_nan_weights_give_an_error_not_a_prediction(problem):
    X, bags, props, _ = problem
    clf = small().fit(X, bags, props)
    with torch.no_grad():
        next(clf.module_.parameters()).fill_(np.nan)
    with pytest.raises(ValueError, match="NaN or infinite probabilities"):
        clf.predict(X)


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
