"""Model selection without instance labels: splitters, scorers, searches."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import sklearn
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits
from sklearn.model_selection import GridSearchCV, GroupShuffleSplit
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import Callback, Checkpoint, EarlyStopping

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import UniformBagGenerator
from sklearn_llp.core import check_bags
from sklearn_llp.metrics import (
    BAG_METRICS,
    bag_errors,
    hard_l1_error,
    make_bag_scorer,
)
from sklearn_llp.model_selection import BagKFold, BagShuffleSplit
from sklearn_llp.model_selection._split import shuffle_split_groups


@pytest.fixture(autouse=True)
def _routing_is_left_off():
    assert sklearn.get_config()["enable_metadata_routing"] is False
    yield
    assert sklearn.get_config()["enable_metadata_routing"] is False


# --- Splitters.
@st.composite
def bag_layouts(draw):
    sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=12))
    string_ids = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    ids = rng.permutation(len(sizes)) * 3 + 5
    if string_ids:
        ids = np.array([f"b{i}" for i in ids])
    bags = rng.permutation(np.repeat(ids, sizes))
    n_splits = draw(st.integers(2, min(5, len(sizes))))
    return bags, n_splits, seed


@settings(max_examples=60, deadline=None, database=None)
@given(bag_layouts(), st.booleans())
@pytest.mark.slow
def test_splitters_never_split_a_bag(layout, shuffle):
    bags, n_splits, seed = layout
    X = np.zeros((len(bags), 1))
    splitters = [
        BagKFold(n_splits, shuffle=shuffle, random_state=seed if shuffle else None),
        BagShuffleSplit(n_splits, random_state=seed),
    ]
    for splitter in splitters:
        splits = list(splitter.split(X, bags))
        # the bags as groups, y deliberately unrelated: the same folds
        from_groups = splitter.split(X, np.zeros(len(bags)), groups=bags)
        for (train, test), (g_train, g_test) in zip(splits, from_groups, strict=True):
            np.testing.assert_array_equal(train, g_train)
            np.testing.assert_array_equal(test, g_test)
        assert len(splits) == splitter.get_n_splits() == n_splits
        for train, test in splits:
            assert len(test) > 0 and len(train) > 0
            assert not set(bags[train]) & set(bags[test])
            np.testing.assert_array_equal(
                np.sort(np.concatenate([train, test])), np.arange(len(bags))
            )
        if isinstance(splitter, BagKFold):
            tests = np.sort(np.concatenate([test for _, test in splits]))
            np.testing.assert_array_equal(tests, np.arange(len(bags)))
        else:  # 10 % of the rows, within one bag
            largest = np.unique(bags, return_counts=True)[1].max()
            for _, test in splits:
                assert len(test) < 0.1 * len(bags) + largest


BAG_SIZE = 16
BENCHMARK = Path(__file__).resolve().parents[1] / "benchmarks/studies"
BENCHMARK /= "validation_correlation.py"


@pytest.fixture(scope="module")
def digits():
    """Standardised digits in random bags of 16; rows of no bag dropped."""
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    bags, props = UniformBagGenerator(BAG_SIZE, random_state=0).make_bags(X, y)
    keep = bags >= 0
    return X[keep], bags[keep], props[keep], y[keep]


def small_llp(**params):
    defaults = dict(module__hidden_sizes=(32,), max_epochs=4, verbose=0, random_state=0)
    return LLPClassifier(**{**defaults, **params})


# An lr of 1e-5 barely moves the network, 1e-2 learns: a clear best.
GRID_model_selection_llp = {"lr": [1e-5, 1e-2], "method": ["dllp", "vat"]}


# --- validation_fraction: per-epoch bag errors, EarlyStopping, Checkpoint
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


def test_validation_fraction_logs_bag_errors_to_stop_and_checkpoint_on(
    digits, tmp_path
):
    """validation_fraction holds out whole bags, the same every epoch, and logs
    their four bag errors every epoch; skorch's Checkpoint and EarlyStopping
    work on them."""
    X, bags, props, _ = digits
    recorder = ValidationRows()
    # Checkpoint before EarlyStopping, which ends the fit inside on_epoch_end
    checkpoint = Checkpoint(monitor="valid_hard_l1_best", dirname=str(tmp_path))
    stop = EarlyStopping(monitor="valid_hard_l1", patience=2)
    clf = small_llp(max_epochs=200, lr=1e-2, validation_fraction=0.2)
    clf.set_params(callbacks=[checkpoint, stop, recorder]).fit(X, bags, props)
    values = np.array(clf.history[:, "valid_hard_l1"])
    assert 3 <= len(values) < 200 and len(set(values)) > 1  # recomputed
    # stopped because the last 2 epochs did not improve on the best before
    assert np.all(values[-2:] >= values[:-2].min() * (1 - 1e-4))

    # the held-out bags, from the rows of the validation batches
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
    proba = clf.predict_proba(X[rows])
    expected = bag_errors(bags[rows], props[rows], proba, classes=clf.classes_)
    assert expected["hard_l1"] > 0.05  # not a trivial perfect fit
    assert values[-1] == pytest.approx(
        hard_l1_error(bags[rows], props[rows], proba), abs=1e-9
    )
    for metric in BAG_METRICS:
        assert f"valid_{metric}_best" in clf.history[-1]
        assert clf.history[-1, f"valid_{metric}"] == pytest.approx(
            expected[metric], rel=1e-4, abs=1e-6
        ), metric
    # and not the error of all the bags
    everything = hard_l1_error(bags, props, clf.predict_proba(X))
    assert values[-1] != pytest.approx(everything, abs=1e-9)

    # the checkpoint, saved at every best epoch, holds the best model
    saved = np.array(clf.history[:, "event_cp"])
    np.testing.assert_array_equal(saved, clf.history[:, "valid_hard_l1_best"])
    assert saved[0] and values[np.flatnonzero(saved)[-1]] == values.min()
    restored = small_llp(max_epochs=0).fit(X, bags, props)
    restored.load_params(f_params=tmp_path / "params.pt")
    error = hard_l1_error(bags[rows], props[rows], restored.predict_proba(X[rows]))
    assert error == pytest.approx(values.min(), abs=1e-9)


# --- The validation correlation benchmark
@pytest.mark.slow
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
        assert 0 <= row["valid_hard_l1"] <= 2 and row["valid_soft_kl"] >= 0
    for name in settings:
        info = saved["settings"][name]
        assert 1 <= info["n_valid_bags"] < info["n_bags"]
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
    metrics = [line.split("|")[1].strip() for line in lines[1:5]]
    assert metrics == ["Hard L1", "Soft L1", "Hard KL", "Soft KL"]
    assert all(len(line.split("|")) == 1 + 3 + 2 for line in lines[:5])


@pytest.mark.slow
def test_grid_search_on_a_local_dask_cluster_matches_n_jobs_1(
    digits_bags, local_cluster
):
    joblib = pytest.importorskip("joblib")
    X, bags, props = digits_bags[:3]
    X, bags, props = X[:640], bags[:640], props[:640]
    search = GridSearchCV(
        small_llp(max_epochs=5),
        GRID_model_selection_llp,
        scoring=make_bag_scorer("hard_l1", bags=bags, props=props),
        cv=BagKFold(2),
        error_score="raise",
    )
    local = GridSearchCV(**search.get_params(deep=False)).fit(X, bags, props=props)
    with local_cluster() as tasks, joblib.parallel_backend("dask"):
        remote = GridSearchCV(**{**search.get_params(deep=False), "n_jobs": -1})
        remote.fit(X, bags, props=props)
    # the 8 fits (4 candidates x 2 folds) ran as tasks on the workers
    assert len(tasks.data) >= 8
    assert remote.best_params_ == local.best_params_
    scores = [search.cv_results_["mean_test_score"] for search in (remote, local)]
    np.testing.assert_array_equal(*scores)


# --- BagShuffleSplit: sizes
def equal_bags(n_bags=10, size=3):
    bags = np.repeat(np.arange(n_bags), size)
    return np.zeros((len(bags), 1)), bags


@pytest.mark.parametrize(
    "test_size, train_size",
    [(None, None), (0.3, None), (None, 0.6), (0.3, 0.7), (0.2, 0.5), (0.1, 0.9)]
    + [(4, 16), (2, 3), (4, None), (None, 3)],
)
def test_bag_shuffle_split_holds_out_what_it_is_asked(test_size, train_size):
    """Floats are fractions of the rows (within half a bag of 5 rows), ints
    numbers of bags, None the complement (a tenth of the rows to test when
    both are None); test_size=0.3 with train_size=0.9 once trained on 0.67 of
    the rows and is now refused (below)."""
    X, bags = equal_bags(20, 5)
    sizes = dict(test_size=test_size, train_size=train_size, random_state=0)
    splits = list(BagShuffleSplit(5, **sizes).split(X, bags))
    expected_test = 0.1 if test_size is None and train_size is None else test_size
    for train, test in splits:
        assert not set(bags[train]) & set(bags[test])
        if test_size is None or train_size is None:
            assert len(train) + len(test) == len(bags)
        for rows, size in [(test, expected_test), (train, train_size)]:
            if isinstance(size, float):
                assert len(rows) == pytest.approx(size * len(bags), abs=2.5)
            elif size is not None:
                assert len(np.unique(bags[rows])) == size
    assert len({tuple(test) for _, test in splits}) > 1  # random draws


@pytest.mark.parametrize(
    "test_size, train_size, error",
    [(0.3, 0.9, "sum of"), (0.5, 0.6, "sum of"), (0.99, 0.02, "sum of")]
    + [(6, 5, "sum of"), (9, 2, "sum of")]
    + [(0.5, 5, None), (0.5, 6, "do not fit")]  # 5 of 10 equal bags left
    + [(5, 0.5, None), (5, 0.6, "do not fit")]  # half the rows left
    + [(1, 0.9, None), (2, 0.9, "do not fit")],
)
def test_sizes_asking_for_more_than_there_is_are_refused(test_size, train_size, error):
    X, bags = equal_bags()
    sizes = dict(test_size=test_size, train_size=train_size, random_state=0)
    if error is None:
        for train, test in BagShuffleSplit(3, **sizes).split(X, bags):
            assert len(train) and len(test)
        return
    with pytest.raises(ValueError, match=f"{error}.*Reduce test_size and/or train"):
        next(BagShuffleSplit(1, **sizes).split(X, bags))
    with pytest.raises(ValueError, match=error):
        next(BagShuffleSplit(1, **sizes).split_bags(check_bags(bags)))
    if error == "sum of":  # as scikit-learn refuses them (10 groups)
        with pytest.raises(ValueError, match="sum of"):
            next(GroupShuffleSplit(1, **sizes).split(X, groups=bags))


def test_shuffle_split_groups_never_leaves_a_side_empty():
    rng = np.random.RandomState(0)
    for _ in range(200):
        n = rng.randint(2, 6)
        rows = rng.randint(1, 50, n).astype(float)
        test_size = rng.choice([0.05, 0.1, 0.5, 0.9])
        try:
            train, test = shuffle_split_groups(rows, test_size, None, rng)
        except ValueError as exc:
            assert "no bag on one side" in str(exc)
            continue
        assert train.any() and test.any() and not (train & test).any()


# --- BagShuffleSplit: at least N training bags
def test_min_train_bags_refuses_a_single_training_bag():
    """validation_fraction=0.1 with 2 bags: the smaller bag is held out and
    one bag is left to train on; a caller that needs 2 says so."""
    bags = check_bags(np.repeat([0, 1], [30, 10]))
    splitter = BagShuffleSplit(1, test_size=0.1, random_state=0)
    train, test = next(splitter.split_bags(bags))
    assert train.sum() == 1 and test.sum() == 1  # allowed by default
    with pytest.raises(ValueError, match="leaves 1 of the 2 bags to train on.*2"):
        next(splitter.split_bags(bags, min_train_bags=2))
    # enough bags: the same splits as without the requirement
    many = check_bags(np.repeat(np.arange(12), 5))
    splitter = BagShuffleSplit(3, test_size=0.25, random_state=1)
    plain = list(splitter.split_bags(many))
    required = list(splitter.split_bags(many, min_train_bags=9))
    np.testing.assert_array_equal(plain, required)
    assert all(train.sum() == 9 for train, _ in required)
    with pytest.raises(ValueError, match="fewer than the 10 required"):
        list(splitter.split_bags(many, min_train_bags=10))


def test_min_train_bags_counts_bags_of_overlapping_groups():
    # bags 0-1 share a row (one group of 2 bags), bag 2 alone
    lists = [np.array([0, 1, 2]), np.array([2, 3]), np.array([4, 5])]
    bags = check_bags(lists, n_samples=6)
    seen = set()
    for seed in range(20):
        splitter = BagShuffleSplit(1, test_size=1, random_state=seed)
        train, _ = next(splitter.split_bags(bags))
        seen.add(int(train.sum()))
        if train.sum() == 2:
            next(splitter.split_bags(bags, min_train_bags=2))
        else:
            with pytest.raises(ValueError, match="min|required"):
                next(splitter.split_bags(bags, min_train_bags=2))
    assert seen == {1, 2}
