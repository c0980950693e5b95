"""LLPClassifier: learning, scikit-learn citizenship, persistence, devices."""

import pickle
import time

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from skorch.callbacks import LRScheduler, ProgressBar

from sklearn_llp import LLPClassifier
from sklearn_llp.methods import DLLP, VAT
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
