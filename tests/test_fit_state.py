"""State before, during and across fits: never half-updated."""

import pickle
import warnings

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from skorch.callbacks import Callback, Checkpoint, EarlyStopping

from sklearn_llp import LLPClassifier
from sklearn_llp.core import check_bags
from sklearn_llp.exceptions import FitDivergedError
from sklearn_llp.methods import DLLP, VAT
from sklearn_llp.methods.functional import proportion_loss
from sklearn_llp.modules import MLP
from sklearn_llp.neural._data import BagDataset, as_tensor


def make_problem(n_bags=12, size=10, n_classes=2, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, n_classes, n_bags * size)
    X = rng.normal(size=(len(y), 4)).astype(np.float32) + y[:, None]
    bags = np.repeat(np.arange(n_bags), size)
    props = np.zeros((n_bags, n_classes))
    np.add.at(props, (bags, y), 1.0 / size)
    return X, bags, props[bags]


def small(**params):
    defaults = dict(method="dllp", max_epochs=2, verbose=0, random_state=0)
    if params.get("module") is None:
        defaults["module__hidden_sizes"] = (8,)
    return LLPClassifier(**{**defaults, "device": "cpu", **params})


# --- failures during training
class NaNLoss(DLLP):
    def get_loss(self, module, X, logits, bags, step, total_steps):
        return bags.proportion_loss(logits) * float("nan")


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"lr": 1e20, "validation_fraction": 0.2}, r"epoch \d+, batch \d+.*lr=1e\+20"),
        ({"method": NaNLoss()}, "training loss became nan"),
    ],
    ids=["huge_lr", "nan_loss"],
)
def test_a_diverged_fit_raises_is_unfitted_and_partial_fit_starts_afresh(params, match):
    X, bags, props = make_problem()
    clf = small(**params)
    with pytest.raises(FitDivergedError, match=match):
        clf.fit(X, bags, props)
    with pytest.raises(NotFittedError):
        clf.predict(X)
    assert not any(np.isfinite(row.get("valid_hard_l1", np.nan)) for row in clf.history)
    clf.set_params(method="dllp", lr=small().lr, validation_fraction=None)
    clf.partial_fit(X, bags, props)
    # the same as a fresh fit of the same seed: the failed weights were dropped
    fresh = small().fit(X, bags, props)
    np.testing.assert_array_equal(clf.predict_proba(X), fresh.predict_proba(X))


def test_early_stopping_without_held_out_bags_names_validation_fraction():
    X, bags, props = make_problem()
    clf = small(callbacks=[EarlyStopping()])
    with pytest.raises(ValueError, match="valid_loss.*validation_fraction"):
        clf.fit(X, bags, props)
    # with held-out bags it runs
    small(callbacks=[EarlyStopping()], validation_fraction=0.25).fit(X, bags, props)


# --- warm starts and partial_fit
def test_warm_start_continues_from_the_trained_copy_with_the_changed_method(small_bags):
    X, bags, props, _ = small_bags
    template = MLP(n_features=4, n_classes=3, hidden_sizes=(8,))
    original = {k: v.clone() for k, v in template.state_dict().items()}
    clf = small(module=template, warm_start=True).fit(X, bags, props)
    trained, steps = clf.module_, clf.n_train_steps_
    clf.set_params(method="vat", method__alpha=0.5).fit(X, bags, props)
    assert clf.module_ is trained and clf.n_train_steps_ > steps
    assert type(clf.method_) is VAT and clf.method_.alpha == 0.5
    # the template itself is never trained
    for name, value in template.state_dict().items():
        assert torch.equal(value, original[name])


class ValidRows(Callback):
    """Collects the rows of the validation batches of the current call."""

    def __init__(self):
        self.rows = set()

    def on_train_begin(self, net, **kwargs):
        self.rows = set()

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        if not training:
            self.rows |= {tuple(row) for row in batch[0].tolist()}


def test_partial_fit_keeps_the_validation_split(small_bags):
    X, bags, props, _ = small_bags
    kw = dict(max_epochs=1, verbose=0, validation_fraction=0.25)
    clf = LLPClassifier(callbacks=[ValidRows()], **kw)
    first = set(dict(clf.fit(X, bags, props).callbacks_)["ValidRows"].rows)
    second = dict(clf.partial_fit(X, bags, props).callbacks_)["ValidRows"].rows
    assert first and first == second


def test_validation_never_shares_instances_with_training_bags(small_bags):
    X, _, _, y = small_bags
    rng = np.random.RandomState(0)
    # 6 blocks of 20 rows with 4 overlapping bags each
    lists = [
        20 * b + rng.choice(20, 8, replace=False) for b in range(6) for _ in range(4)
    ]
    props = np.stack([np.bincount(y[r], minlength=3) / len(r) for r in lists])
    kw = dict(max_epochs=1, verbose=0, validation_fraction=0.3)
    clf = LLPClassifier(callbacks=[ValidRows()], **kw)
    valid_rows = dict(clf.fit(X, lists, props).callbacks_)["ValidRows"].rows
    # the split fit drew (same seed)
    dataset = BagDataset(as_tensor(X), check_bags(lists, props, n_samples=len(X)))
    dataset_train, dataset_valid = clf._split(dataset)
    train_rows = set(np.unique(dataset_train.bags.members).tolist())
    valid_members = set(np.unique(dataset_valid.bags.members).tolist())
    assert train_rows.isdisjoint(valid_members)
    assert len(valid_rows) == len(valid_members) > 0


def test_partial_fit_takes_classes_on_the_first_call(small_bags):
    X, _, _, y = small_bags
    clf = LLPClassifier(max_epochs=1, verbose=0)
    first = y < 2
    clf.partial_fit(X[first], y[first], classes=[0, 1, 2])
    assert clf.classes_.tolist() == [0, 1, 2]
    clf.partial_fit(X[~first], y[~first])


def test_methods_see_every_epoch_begin():
    seen = []

    class Counting(DLLP):
        def on_epoch_begin(self, epoch):
            seen.append(epoch)

    X, bags, props = make_problem()
    clf = small(method=Counting(), max_epochs=3).fit(X, bags, props)
    clf.partial_fit(X, bags, props)
    assert seen == [0, 1, 2, 0, 1, 2]


@pytest.mark.parametrize("bag_size, batch_size", [(20, 16), (200, 128), (100, 128)])
def test_planned_steps_match_the_steps_taken(bag_size, batch_size):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(bag_size * 6, 3))
    bags = np.arange(len(X)) // bag_size
    props = np.tile([0.5, 0.5], (len(X), 1))
    clf = LLPClassifier(max_epochs=2, batch_size=batch_size, verbose=0)
    clf.fit(X, bags, props)
    assert clf.total_steps_ == clf.n_train_steps_


# --- checkpoints, load_params and pickles
def test_the_readme_checkpoint_recipe_loads_the_best_epoch(tmp_path):
    X, bags, props = make_problem(n_bags=20)
    path = str(tmp_path)
    best = Checkpoint(monitor="valid_hard_l1_best", dirname=path, load_best=True)
    stop = EarlyStopping(monitor="valid_hard_l1", patience=3)
    clf = small(max_epochs=6, validation_fraction=0.2, callbacks=[best, stop])
    clf.fit(X, bags, props)
    assert clf.threshold_ is not None  # the decision rule of the loaded weights
    proba = clf.predict_proba(X)
    rule = clf.classes_[(proba[:, 1] >= clf.threshold_).astype(int)]
    np.testing.assert_array_equal(clf.predict(X), rule)
    # load_params(checkpoint=...) into a model never fitted, sized by hand
    restored = small(module__n_features=4, classes=[0, 1], threshold="argmax")
    restored.initialize()
    with pytest.raises(NotFittedError):
        restored.predict(X)
    cp = Checkpoint(monitor="valid_hard_l1_best", dirname=str(tmp_path))
    restored.load_params(checkpoint=cp)
    np.testing.assert_array_equal(restored.predict_proba(X), proba)


@pytest.mark.parametrize("threshold, warns", [("prior", True), (0.3, False)])
def test_loading_weights_warns_only_of_a_rule_fitted_to_the_old_ones(
    threshold, warns, tmp_path
):
    X, bags, props = make_problem()
    clf = small(threshold=threshold).fit(X, bags, props)
    clf.save_params(f_params=tmp_path / "params.pt")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.load_params(f_params=tmp_path / "params.pt")
    kept = [w for w in caught if "decision_offsets_" in str(w.message)]
    assert bool(kept) == warns


# --- runtime and skorch plumbing
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


def test_method_parameters_override_a_method_objects_own_on_a_clone(small_bags):
    X, bags, props, _ = small_bags
    vat = VAT()
    clf = LLPClassifier(method=vat, method__alpha=0.5, max_epochs=1, verbose=0)
    clf.fit(X, bags, props)
    assert clf.method_.alpha == 0.5 and vat.alpha == VAT().alpha


def test_auto_device_survives_skorch_reinitialisation(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=1, verbose=0).fit(X, bags, props)
    clf.set_params(module__hidden_sizes=(8,))  # re-initialises the module
    assert clf.device == "auto"
    assert clf.forward(X).shape == (len(X), 3)
    clf.initialize()
    assert clf.device == "auto"
    clf.set_params(device="cpu")
    assert clf.device == "cpu"


def test_zero_weight_rows_of_a_bag_above_max_bag_size():
    # bags of 40 rows in chunks of 4; 36 rows of every bag weigh 0: a chunk
    # of only zero weights has no mean (0/0; it blamed the lr before)
    X, bags, props = make_problem(n_bags=6, size=40)
    weights = np.zeros(len(X))
    weights[np.arange(len(X)) % 40 < 4] = 1.0
    clf = small(max_bag_size=4, max_epochs=3).fit(X, bags, props, sample_weight=weights)
    assert np.isfinite(clf.history[:, "train_loss"]).all()
    # the same model as the weighted rows alone
    kept = weights > 0
    alone = small(max_bag_size=4, max_epochs=3).fit(X[kept], bags[kept], props[kept])
    expected = alone.predict_proba(X)
    np.testing.assert_allclose(clf.predict_proba(X), expected, rtol=1e-5, atol=1e-6)


def test_proportion_loss_keeps_a_gradient_when_saturated():
    logits = torch.tensor([[20.0, 0.0], [20.0, 0.0]], requires_grad=True)
    loss = proportion_loss(logits, torch.tensor([0, 0]), torch.tensor([[0.0, 1.0]]))
    loss.backward()
    assert logits.grad.abs().sum() > 0.1


# --- Ctrl-C
# small_bags: 12 bags of 10, so batch_size=20 packs 6 batches per epoch.
BATCHES_PER_EPOCH = 6


class InterruptAfter(Callback):
    """Raise ``KeyboardInterrupt`` after the ``after``-th (training or
    validation) batch, once; module-level to pickle, and never re-armed."""

    def __init__(self, after, training=True):
        self.after, self.training, self.seen, self.fired = after, training, 0, False

    def on_batch_end(self, net, training=False, **kwargs):
        if self.fired or training != self.training:
            return
        self.seen += 1
        if self.seen >= self.after:
            self.fired = True
            raise KeyboardInterrupt


def _interrupted(X, bags, props, after, training=True, **params):
    net = dict(module__hidden_sizes=(16,), batch_size=20, max_epochs=4, verbose=0)
    callbacks = [("interrupt", InterruptAfter(after, training))]
    clf = LLPClassifier(random_state=0, callbacks=callbacks, **net, **params)
    return clf.fit(X, bags, props)


#: (batches before the interrupt, of training?, parameters; the training
#: steps taken, the epochs completed, the batches of the interrupted one, the
#: training batches of an epoch)
INTERRUPTIONS = {
    "first_batch": (1, True, {}, 1, 0, 1, BATCHES_PER_EPOCH),
    "second_epoch": (8, True, {}, 8, 1, 2, BATCHES_PER_EPOCH),
    "third_epoch": (15, True, {}, 15, 2, 3, BATCHES_PER_EPOCH),
    # 9 training bags of 10 in 5 batches of 20, 3 validation bags in 2: the
    # 3rd validation batch is the first of epoch 2, after its training steps
    "validation": (3, False, {"validation_fraction": 0.25}, 10, 1, 6, 5),
}


@pytest.mark.parametrize("case", INTERRUPTIONS)
def test_an_interrupted_fit_leaves_a_usable_model_that_goes_on(
    small_bags, tmp_path, case
):
    after, training, params, steps, completed, batches, per_epoch = INTERRUPTIONS[case]
    X, bags, props, _ = small_bags
    torch.manual_seed(7)
    expected_draw = torch.rand(1)
    torch.manual_seed(7)
    clf = _interrupted(X, bags, props, after, training, **params)
    assert torch.rand(1) == expected_draw  # the forked RNG was given back
    assert dict(clf.callbacks_)["interrupt"].fired
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3) and np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    assert set(clf.predict(X)) <= {0, 1, 2}
    assert 0 <= clf.score(X, bags, props) <= 1
    # The steps taken are counted; the completed epochs are in the history,
    # followed by the row of the interrupted epoch (its batches, no loss).
    done = [row for row in clf.history if "train_loss" in row]
    assert clf.n_train_steps_ == steps and len(done) == completed
    assert len(clf.history) == completed + 1 and "train_loss" not in clf.history[-1]
    assert len(clf.history[-1, "batches"]) == batches
    assert all(np.isfinite(row["train_loss"]) for row in done)
    assert all(("valid_hard_l1" in row) == bool(params) for row in done)
    # Parameters are as the user set them.
    assert clf.device == clf.get_params()["device"] == "auto"
    assert clf.random_state == 0
    # A pickle, and the saved parameters loaded into another model, restore it.
    files = {f"f_{k}": tmp_path / k for k in ("params", "optimizer", "history")}
    clf.save_params(**files)
    loaded = LLPClassifier(
        module__hidden_sizes=(16,), max_epochs=0, verbose=0, random_state=1
    ).fit(X, bags, props)
    assert not np.array_equal(loaded.predict_proba(X), proba)
    loaded.load_params(**files)
    pickled = pickle.loads(pickle.dumps(clf))
    assert pickled.n_train_steps_ == steps
    for restored in (pickled, loaded):
        np.testing.assert_array_equal(restored.predict_proba(X), proba)
        assert len(restored.history) == len(clf.history)
        assert restored.device == "auto"
    # partial_fit goes on (from the pickle alike); the ramp-up keeps its plan
    rows, planned = len(clf.history), clf.total_steps_
    clf.partial_fit(X, bags, props)
    assert clf.n_train_steps_ == steps + 4 * per_epoch
    assert len(clf.history) == rows + 4
    assert len([row for row in clf.history if "train_loss" in row]) == completed + 4
    assert clf.total_steps_ == planned
    assert np.all(np.isfinite(clf.predict_proba(X)))
    valid = [row.get("valid_hard_l1", np.nan) for row in clf.history[-4:]]
    assert np.isfinite(valid).all() == bool(params)
    pickled.partial_fit(X, bags, props)
    np.testing.assert_array_equal(pickled.predict_proba(X), clf.predict_proba(X))
