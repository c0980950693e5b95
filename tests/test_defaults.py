"""The defaults a user gets without reading the README (issues 14 and 16)."""

import re
import warnings

import numpy as np
import pytest
import torch

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import label_proportions
from sklearn_llp.exceptions import IdentifiabilityWarning
from sklearn_llp.model_selection import BagShuffleSplit
from sklearn_llp.utils import check_bags


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
    from sklearn_llp._runtime import resident as _resident

    X = torch.zeros(100, 4)
    assert _resident(X, "cuda").device.type == "cuda"
    assert _resident(X, "cpu") is X
    X, bags, table = _problem([16] * 30)
    clf = LLPClassifier(max_epochs=2, verbose=0, device="cuda", random_state=0)
    proba = clf.fit(X, bags, table).predict_proba(X)
    clf.set_params(device="cpu")
    np.testing.assert_allclose(clf.predict_proba(X), proba, atol=1e-5)
