"""A fit either succeeds or leaves the estimator as it was (or unfitted).

Checks that can be made before training are made before training; a failure
during training (a callback, a checkpoint, a diverged loss) leaves the model
unfitted, never half-updated; a module instance is a template re-initialised
on every fit; skorch's getters have no side effects.
"""

import pickle

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from skorch.callbacks import Callback, Checkpoint, EarlyStopping

from sklearn_llp import LLPClassifier
from sklearn_llp.exceptions import FitDivergedError
from sklearn_llp.methods import DLLP
from sklearn_llp.modules import MLP


def make_problem(n_bags=12, size=10, n_classes=2, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, n_classes, n_bags * size)
    X = rng.normal(size=(len(y), 4)).astype(np.float32) + y[:, None]
    bags = np.repeat(np.arange(n_bags), size)
    props = np.zeros((n_bags, n_classes))
    np.add.at(props, (bags, y), 1.0 / size)
    return X, bags, props[bags]


def small(**params):
    defaults = dict(
        method="dllp",
        max_epochs=2,
        verbose=0,
        random_state=0,
        device="cpu",
    )
    if params.get("module") is None:
        defaults["module__hidden_sizes"] = (8,)
    return LLPClassifier(**{**defaults, **params})


class RaiseAtEpochEnd(Callback):
    def on_epoch_end(self, net, **kwargs):
        raise RuntimeError("callback failed")


# ---------------------------------------------------------------------------
# checked before training, nothing changed
# ---------------------------------------------------------------------------
def test_a_float_threshold_with_three_classes_is_refused_before_training():
    X, bags, props = make_problem()
    X3, bags3, props3 = make_problem(n_classes=3)
    clf = small(threshold=0.3).fit(X, bags, props)
    before = clf.predict_proba(X)
    steps = clf.n_train_steps_
    with pytest.raises(ValueError, match="threshold=0.3.*3"):
        clf.fit(X3, bags3, props3)
    assert clf.n_train_steps_ == steps  # no training happened
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    assert clf.classes_.tolist() == [0, 1]


def test_validation_that_leaves_one_training_bag_is_refused():
    X, bags, props = make_problem(n_bags=2)
    with pytest.raises(ValueError, match="validation_fraction=0.1.*train on"):
        small(validation_fraction=0.1).fit(X, bags, props)


def test_early_stopping_without_held_out_bags_names_validation_fraction():
    X, bags, props = make_problem()
    clf = small(callbacks=[EarlyStopping()])
    with pytest.raises(ValueError, match="valid_loss.*validation_fraction"):
        clf.fit(X, bags, props)
    # with held-out bags it runs
    small(callbacks=[EarlyStopping()], validation_fraction=0.25).fit(X, bags, props)


# ---------------------------------------------------------------------------
# failures during training leave the model unfitted
# ---------------------------------------------------------------------------
def test_a_callback_that_raises_leaves_the_model_unfitted():
    X, bags, props = make_problem()
    clf = small().fit(X, bags, props)
    clf.set_params(callbacks=[RaiseAtEpochEnd()])
    with pytest.raises(RuntimeError, match="callback failed"):
        clf.fit(X, bags, props)
    with pytest.raises(NotFittedError):
        clf.predict(X)
    clf.set_params(callbacks=None)
    clf.fit(X, bags, props)  # and it can be fitted again
    assert clf.predict(X).shape == (len(X),)


class NaNLoss(DLLP):
    def get_loss(self, module, X, logits, bags, step, total_steps):
        return bags.proportion_loss(logits) * float("nan")


def test_partial_fit_after_a_diverged_fit_starts_afresh():
    X, bags, props = make_problem()
    clf = small(method=NaNLoss())
    with pytest.raises(FitDivergedError, match="training loss became nan"):
        clf.fit(X, bags, props)
    with pytest.raises(NotFittedError):
        clf.predict(X)
    clf.set_params(method="dllp")
    clf.partial_fit(X, bags, props)
    # the same as a fresh fit of the same seed: the failed weights were dropped
    fresh = small().fit(X, bags, props)
    np.testing.assert_array_equal(clf.predict_proba(X), fresh.predict_proba(X))


# ---------------------------------------------------------------------------
# module instances are templates
# ---------------------------------------------------------------------------
def test_a_module_instance_is_reinitialised_on_every_fit():
    X, bags, props = make_problem()
    template = MLP(n_features=4, n_classes=2, hidden_sizes=(8,))
    original = {k: v.clone() for k, v in template.state_dict().items()}
    clf = small(module=template)
    first = clf.fit(X, bags, props).predict_proba(X)
    second = clf.fit(X, bags, props).predict_proba(X)
    np.testing.assert_array_equal(first, second)
    # the template itself is never trained
    for name, value in template.state_dict().items():
        assert torch.equal(value, original[name])


def test_estimators_sharing_a_module_instance_are_independent():
    X, bags, props = make_problem()
    template = MLP(n_features=4, n_classes=2, hidden_sizes=(8,))
    a = small(module=template).fit(X, bags, props)
    before = a.predict_proba(X)
    small(module=template, random_state=1, max_epochs=5).fit(X, bags, props)
    np.testing.assert_array_equal(a.predict_proba(X), before)


def test_warm_start_continues_from_the_trained_copy():
    X, bags, props = make_problem()
    template = MLP(n_features=4, n_classes=2, hidden_sizes=(8,))
    clf = small(module=template, warm_start=True).fit(X, bags, props)
    trained = clf.module_
    clf.fit(X, bags, props)
    assert clf.module_ is trained and clf.n_train_steps_ > 2


# ---------------------------------------------------------------------------
# the module's output
# ---------------------------------------------------------------------------
class OneDimensional(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 1)

    def forward(self, X):
        return self.linear(X)[:, 0]


class TupleOutput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 2)

    def forward(self, X):
        return self.linear(X), X


@pytest.mark.parametrize(
    "module, error",
    [
        (OneDimensional, "shape \\(\\d+,\\).*\\(n_rows, 2\\)"),
        (TupleOutput, "module returned a tuple"),
    ],
)
def test_a_module_with_the_wrong_output_gets_a_clear_error(module, error):
    X, bags, props = make_problem()
    with pytest.raises((ValueError, TypeError), match=error):
        small(module=module).fit(X, bags, props)


# ---------------------------------------------------------------------------
# checkpoints
# ---------------------------------------------------------------------------
def test_the_readme_checkpoint_recipe_loads_the_best_epoch(tmp_path):
    X, bags, props = make_problem(n_bags=20)
    clf = small(
        max_epochs=6,
        validation_fraction=0.2,
        callbacks=[
            Checkpoint(
                monitor="valid_hard_l1_best", dirname=str(tmp_path), load_best=True
            ),
            EarlyStopping(monitor="valid_hard_l1", patience=3),
        ],
    ).fit(X, bags, props)
    assert clf.threshold_ is not None  # the decision rule of the loaded weights
    proba = clf.predict_proba(X)
    np.testing.assert_array_equal(
        clf.predict(X), clf.classes_[(proba[:, 1] >= clf.threshold_).astype(int)]
    )
    # load_params(checkpoint=...) into a model never fitted
    restored = small(
        module__n_features=4, classes=[0, 1], threshold="argmax"
    ).initialize()
    cp = Checkpoint(monitor="valid_hard_l1_best", dirname=str(tmp_path))
    restored.load_params(checkpoint=cp)
    np.testing.assert_array_equal(restored.predict_proba(X), proba)


# ---------------------------------------------------------------------------
# runtime and skorch plumbing
# ---------------------------------------------------------------------------
def test_a_torch_device_means_the_same_as_its_string():
    X, bags, props = make_problem()
    by_string = small(device="cpu", n_threads=1).fit(X, bags, props)
    threads = torch.get_num_threads()
    seen = []

    class Threads(Callback):
        def on_epoch_begin(self, net, **kwargs):
            seen.append(torch.get_num_threads())

    by_object = small(
        device=torch.device("cpu"), n_threads=1, callbacks=[Threads()]
    ).fit(X, bags, props)
    assert seen == [1, 1] and torch.get_num_threads() == threads
    assert by_object.batch_size_ == by_string.batch_size_
    np.testing.assert_array_equal(
        by_object.predict_proba(X), by_string.predict_proba(X)
    )


def test_skorch_getters_have_no_side_effects():
    X, bags, props = make_problem()
    clf = small(validation_fraction=0.25).fit(X, bags, props)
    state = {k: v for k, v in vars(clf).items() if k.endswith("_") and np.isscalar(v)}
    dataset = clf.get_dataset(X)
    clf.get_split_datasets(dataset)
    clf.get_iterator(dataset)
    assert {k: v for k, v in vars(clf).items() if k in state} == state


def test_an_initialize_method_override_builds_the_method():
    class Custom(LLPClassifier):
        def initialize_method(self):
            self.method_ = DLLP()
            return self

    X, bags, props = make_problem()
    clf = Custom(method="vat", **{"module__hidden_sizes": (8,)}, max_epochs=1)
    clf.set_params(verbose=0, device="cpu", random_state=0)
    clf.fit(X, bags, props)
    assert type(clf.method_) is DLLP


def test_methods_see_every_epoch_begin():
    seen = []

    class Counting(DLLP):
        def on_epoch_begin(self, epoch):
            seen.append(epoch)

    X, bags, props = make_problem()
    clf = small(method=Counting(), max_epochs=3).fit(X, bags, props)
    clf.partial_fit(X, bags, props)
    assert seen == [0, 1, 2, 0, 1, 2]


def test_a_fitted_model_pickles_with_its_method_state():
    X, bags, props = make_problem()
    clf = small(method="easyllp").fit(X, bags, props)
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(again.method_.class_prior_, clf.method_.class_prior_)


def test_zero_weight_rows_never_fill_a_subsampled_bag():
    # bags of 40 rows cut to 4 a step; 36 rows of every bag weigh 0: a
    # subsample of only zero weights would be 0/0 (it blamed the lr before)
    X, bags, props = make_problem(n_bags=6, size=40)
    weights = np.zeros(len(X))
    weights[np.arange(len(X)) % 40 < 4] = 1.0
    clf = small(max_bag_size=4, max_epochs=3).fit(X, bags, props, sample_weight=weights)
    assert np.isfinite(clf.history[:, "train_loss"]).all()
    # the same model as the weighted rows alone
    kept = weights > 0
    alone = small(max_bag_size=4, max_epochs=3).fit(X[kept], bags[kept], props[kept])
    np.testing.assert_allclose(
        clf.predict_proba(X), alone.predict_proba(X), rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize("threshold, warns", [("prior", True), (0.3, False)])
def test_loading_weights_warns_only_of_a_rule_fitted_to_the_old_ones(
    threshold, warns, tmp_path
):
    import warnings

    X, bags, props = make_problem()
    clf = small(threshold=threshold).fit(X, bags, props)
    clf.save_params(f_params=tmp_path / "params.pt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.load_params(f_params=tmp_path / "params.pt")
    kept = [w for w in caught if "decision_offsets_" in str(w.message)]
    assert bool(kept) == warns
