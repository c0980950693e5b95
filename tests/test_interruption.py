"""Ctrl-C during ``fit`` leaves a usable model that training can go on from.

skorch catches a ``KeyboardInterrupt`` raised inside its training loop and
returns the net as it is; here it is raised from a callback's
``on_batch_end`` after a given number of batches, which is where a Ctrl-C
lands in practice (between or inside the steps of an epoch).
"""

import pickle

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier

# small_bags: 12 bags of 10, so batch_size=20 packs 6 batches per epoch.
BATCHES_PER_EPOCH = 6


class InterruptAfter(Callback):
    """Raise ``KeyboardInterrupt`` at the end of the ``after``-th batch, once.

    Counts training batches, or validation batches with ``training=False``.
    Module-level so that a net holding it can be pickled. ``initialize`` is
    not overridden: a later ``partial_fit`` must not re-arm it.
    """

    def __init__(self, after, training=True):
        self.after = after
        self.training = training
        self.seen = 0
        self.fired = False

    def on_batch_end(self, net, training=False, **kwargs):
        if self.fired or training != self.training:
            return
        self.seen += 1
        if self.seen >= self.after:
            self.fired = True
            raise KeyboardInterrupt


def _interrupted(X, bags, props, after, training=True, **params):
    clf = LLPClassifier(
        module__hidden_sizes=(16,),
        batch_size=20,
        max_epochs=4,
        verbose=0,
        random_state=0,
        callbacks=[("interrupt", InterruptAfter(after, training))],
        **params,
    )
    return clf.fit(X, bags, props)


def _completed_epochs(clf):
    return [row for row in clf.history if "train_loss" in row]


@pytest.mark.parametrize("after", [1, 8, 2 * BATCHES_PER_EPOCH + 3])
def test_interrupted_fit_leaves_a_usable_model(small_bags, after):
    X, bags, props, _ = small_bags
    torch.manual_seed(7)
    expected_draw = torch.rand(1)
    torch.manual_seed(7)
    clf = _interrupted(X, bags, props, after)
    assert torch.rand(1) == expected_draw  # the forked RNG was given back

    assert dict(clf.callbacks_)["interrupt"].fired
    proba = clf.predict_proba(X)
    assert proba.shape == (len(X), 3) and np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    pred = clf.predict(X)
    assert set(pred) <= {0, 1, 2}
    # the score is 1 - hard L1 / 2 of the interrupted model's own labels
    predicted = np.zeros((bags.max() + 1, 3))
    np.add.at(predicted, (bags, pred), 1.0)
    predicted /= predicted.sum(1, keepdims=True)
    first = np.unique(bags, return_index=True)[1]
    hard_l1 = np.abs(predicted - props[first]).sum(1).mean()
    assert clf.score(X, bags, props) == pytest.approx(1 - hard_l1 / 2, abs=1e-12)

    # The steps taken are counted; the completed epochs are in the history,
    # followed by the row of the interrupted epoch (its batches, no loss).
    assert clf.n_train_steps_ == after
    completed = after // BATCHES_PER_EPOCH
    assert len(_completed_epochs(clf)) == completed
    assert len(clf.history) == completed + 1
    assert "train_loss" not in clf.history[-1]
    assert len(clf.history[-1, "batches"]) == after % BATCHES_PER_EPOCH
    for row in _completed_epochs(clf):
        assert np.isfinite(row["train_loss"])

    # Parameters are as the user set them.
    assert clf.device == "auto"
    assert clf.get_params()["device"] == "auto"
    assert clf.random_state == 0


def test_partial_fit_continues_after_an_interruption(small_bags):
    X, bags, props, _ = small_bags
    clf = _interrupted(X, bags, props, after=8)
    steps, rows = clf.n_train_steps_, len(clf.history)
    planned = clf.total_steps_
    clf.partial_fit(X, bags, props)
    assert clf.n_train_steps_ == steps + 4 * BATCHES_PER_EPOCH
    assert len(clf.history) == rows + 4
    assert len(_completed_epochs(clf)) == 1 + 4
    assert clf.total_steps_ == planned  # the ramp-up keeps its plan
    assert np.all(np.isfinite(clf.predict_proba(X)))


def test_interruption_during_validation(small_bags):
    X, bags, props, _ = small_bags
    # 3 validation bags of 10 in batches of 20: 2 validation batches per
    # epoch, so the 3rd is the first of epoch 2, after its training steps.
    clf = _interrupted(
        X, bags, props, after=3, training=False, validation_fraction=0.25
    )
    assert clf.n_train_steps_ == 2 * clf.history[0, "train_batch_count"]
    assert len(_completed_epochs(clf)) == 1
    assert "valid_hard_l1" in clf.history[0]
    clf.partial_fit(X, bags, props)
    assert np.isfinite(clf.history[-1, "valid_hard_l1"])


def test_pickle_after_an_interruption(small_bags):
    X, bags, props, _ = small_bags
    clf = _interrupted(X, bags, props, after=8)
    restored = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(clf.predict_proba(X), restored.predict_proba(X))
    assert restored.device == "auto"
    assert restored.n_train_steps_ == clf.n_train_steps_
    assert len(restored.history) == len(clf.history)
    # Both go on identically from the same state.
    clf.partial_fit(X, bags, props)
    restored.partial_fit(X, bags, props)
    assert np.array_equal(clf.predict_proba(X), restored.predict_proba(X))


def test_save_and_load_params_after_an_interruption(small_bags, tmp_path):
    X, bags, props, _ = small_bags
    clf = _interrupted(X, bags, props, after=8)
    files = {
        "f_params": tmp_path / "params.pt",
        "f_optimizer": tmp_path / "optimizer.pt",
        "f_history": tmp_path / "history.json",
    }
    clf.save_params(**files)
    fresh = LLPClassifier(
        module__hidden_sizes=(16,), max_epochs=0, verbose=0, random_state=1
    ).fit(X, bags, props)
    assert not np.array_equal(clf.predict_proba(X), fresh.predict_proba(X))
    fresh.load_params(**files)
    assert np.array_equal(clf.predict_proba(X), fresh.predict_proba(X))
    assert len(fresh.history) == len(clf.history)
    assert fresh.device == "auto"
