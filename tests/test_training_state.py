"""State across fits: warm starts, partial_fit, validation splits, devices."""

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier
from sklearn_llp._data import BagDataset, as_tensor
from sklearn_llp.methods import VAT, proportion_loss
from sklearn_llp.utils import check_bags


class ValidRows(Callback):
    """Collects the rows of the validation batches of the current call."""

    def __init__(self):
        self.rows = set()

    def on_train_begin(self, net, **kwargs):
        self.rows = set()

    def on_batch_end(self, net, batch=None, training=False, **kwargs):
        if not training:
            self.rows |= {tuple(row) for row in batch[0].numpy().tolist()}


def test_warm_start_fit_uses_changed_method_parameters(small_bags):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(max_epochs=1, verbose=0, warm_start=True).fit(X, bags, props)
    clf.set_params(method="dllp").fit(X, bags, props)
    assert type(clf.method_).__name__ == "DLLP"
    clf.set_params(method="vat", method__alpha=0.5).fit(X, bags, props)
    assert clf.method_.alpha == 0.5


def test_partial_fit_keeps_the_validation_split(small_bags):
    X, bags, props, _ = small_bags
    rows = ValidRows()
    clf = LLPClassifier(
        max_epochs=1, verbose=0, validation_fraction=0.25, callbacks=[rows]
    )
    first = set(dict(clf.fit(X, bags, props).callbacks_)["ValidRows"].rows)
    second = dict(clf.partial_fit(X, bags, props).callbacks_)["ValidRows"].rows
    assert first and first == second


def test_validation_never_shares_instances_with_training_bags(small_bags):
    X, _, _, y = small_bags
    rng = np.random.RandomState(0)
    # 6 blocks of 20 rows with 4 overlapping bags each
    lists = [
        20 * block + rng.choice(20, 8, replace=False)
        for block in range(6)
        for _ in range(4)
    ]
    props = np.stack([np.bincount(y[r], minlength=3) / len(r) for r in lists])
    clf = LLPClassifier(
        max_epochs=1, verbose=0, validation_fraction=0.3, callbacks=[ValidRows()]
    )
    valid_rows = dict(clf.fit(X, lists, props).callbacks_)["ValidRows"].rows
    # the split fit drew (same seed)
    dataset_train, dataset_valid = clf._split(
        BagDataset(as_tensor(X), check_bags(lists, props, n_samples=len(X)))
    )
    train_rows = set(np.unique(dataset_train.bags.members).tolist())
    valid_members = set(np.unique(dataset_valid.bags.members).tolist())
    assert train_rows.isdisjoint(valid_members)
    assert len(valid_rows) == len(valid_members) > 0


def test_everything_connected_cannot_be_held_out(small_bags):
    X, _, _, y = small_bags
    lists = [np.arange(0, 70), np.arange(60, 120), np.arange(30, 90)]
    props = np.stack([np.bincount(y[r], minlength=3) / len(r) for r in lists])
    clf = LLPClassifier(max_epochs=1, verbose=0, validation_fraction=0.3)
    with pytest.raises(ValueError, match="needs at least 2 bags .*got 1"):
        clf.fit(X, lists, props)


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


def test_partial_fit_takes_classes_on_the_first_call(small_bags):
    X, _, _, y = small_bags
    clf = LLPClassifier(max_epochs=1, verbose=0)
    first = y < 2
    clf.partial_fit(X[first], y[first], classes=[0, 1, 2])
    assert clf.classes_.tolist() == [0, 1, 2]
    clf.partial_fit(X[~first], y[~first])


@pytest.mark.parametrize("bag_size, batch_size", [(20, 16), (200, 128), (100, 128)])
def test_planned_steps_match_the_steps_taken(bag_size, batch_size):
    rng = np.random.RandomState(0)
    X = rng.normal(size=(bag_size * 6, 3))
    bags = np.arange(len(X)) // bag_size
    props = np.tile([0.5, 0.5], (len(X), 1))
    clf = LLPClassifier(max_epochs=2, batch_size=batch_size, verbose=0)
    clf.fit(X, bags, props)
    assert clf.total_steps_ == clf.n_train_steps_


def test_proportion_loss_keeps_a_gradient_when_saturated():
    logits = torch.tensor([[20.0, 0.0], [20.0, 0.0]], requires_grad=True)
    loss = proportion_loss(logits, torch.tensor([0, 0]), torch.tensor([[0.0, 1.0]]))
    loss.backward()
    assert logits.grad.abs().sum() > 0.1


def test_hyperparameters_the_method_does_not_take_are_an_error(small_bags):
    X, bags, props, _ = small_bags
    with pytest.raises(ValueError, match=r"\['method__eps'\] are not .* of DLLP"):
        LLPClassifier(method="dllp", method__eps=2.0, max_epochs=1, verbose=0).fit(
            X, bags, props
        )
    # method__* override a method object's own values; the object is cloned
    vat = VAT()
    clf = LLPClassifier(method=vat, method__alpha=0.5, max_epochs=1, verbose=0)
    clf.fit(X, bags, props)
    assert clf.method_.alpha == 0.5 and vat.alpha == VAT().alpha
