"""Sample weights: an integer weight is that many copies of the row (every
estimator's fit: ``test_conformance.py``)."""

import numpy as np
import pytest
import torch
from sklearn.base import clone

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import label_proportions
from sklearn_llp.methods.functional import proportion_loss, segment_mean
from sklearn_llp.metrics import bag_errors, make_bag_scorer


@pytest.fixture
def weighted():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 3, 90)
    X = rng.normal(size=(90, 4)) + 2 * np.eye(3, 4)[y]
    bags = np.repeat(np.arange(9), 10)
    w = rng.randint(0, 4, 90)
    w[::10] = 1  # no bag loses all of its rows
    return X, y, bags, w


def _repeat(w, *arrays):
    return [np.repeat(a, w, axis=0) for a in arrays]


def test_weighted_proportion_loss_equals_repeated_rows():
    torch.manual_seed(0)
    logits = torch.randn(6, 3)
    segments = torch.tensor([0, 0, 0, 1, 1, 1])
    props = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]])
    w = torch.tensor([2.0, 0.0, 1.0, 3.0, 1.0, 1.0])
    rows = torch.repeat_interleave(torch.arange(6), w.long())
    weighted = proportion_loss(logits, segments, props, w)
    repeated = proportion_loss(logits[rows], segments[rows], props)
    torch.testing.assert_close(weighted, repeated)
    # by hand: bag 0 is (2 p0 + p2) / 3
    p = logits.softmax(1)
    bag0 = (2 * p[0] + p[2]) / 3
    bag1 = (3 * p[3] + p[4] + p[5]) / 5
    expected = -(props[0] * bag0.log()).sum() / 2 - (props[1] * bag1.log()).sum() / 2
    torch.testing.assert_close(weighted, expected, atol=1e-6, rtol=1e-5)
    constant = segment_mean(p, segments, 2, torch.full((6,), 2.5))
    torch.testing.assert_close(constant, segment_mean(p, segments, 2))


def test_weighted_bag_errors_equal_repeated_rows(weighted):
    X, y, bags, w = weighted
    props = label_proportions(bags, y, sample_weight=w)
    proba = np.random.RandomState(1).dirichlet(np.ones(3), size=len(y))
    with_weights = bag_errors(bags, props, proba, sample_weight=w)
    rep_bags, rep_proba = _repeat(w, bags, proba)
    repeated = bag_errors(rep_bags, props, rep_proba)
    for name, value in with_weights.items():
        assert value == pytest.approx(repeated[name], abs=1e-12)
    # the weighted proportions are those of the repeated rows
    rep_y = np.repeat(y, w)
    np.testing.assert_allclose(props, label_proportions(rep_bags, rep_y))


@pytest.mark.parametrize("on", ["bags_with_rot", "labels"])
def test_integer_weights_fit_like_repeated_rows(weighted, on):
    """ROT's pseudo-labels, and each row's cross-entropy of a supervised fit
    (DLLP, Mean Map and the regressors on bags: tests/test_conformance.py)."""
    X, y, bags, w = weighted
    props = label_proportions(bags, y, sample_weight=w)
    method, epochs = ("rot", 15) if on == "bags_with_rot" else ("dllp", 10)
    # one step per epoch over all bags: the same batches
    params = dict(method=method, max_epochs=epochs, batch_size=10_000, verbose=0)
    clf = LLPClassifier(**params, random_state=0, device="cpu")
    rep_X, rep_bags, rep_y = _repeat(w, X, bags, y)
    if on == "labels":
        weighted_fit = clone(clf).fit(X, y, sample_weight=w)
        repeated_fit = clone(clf).fit(rep_X, rep_y)
    else:
        weighted_fit = clone(clf).fit(X, bags, props, sample_weight=w)
        repeated_fit = clone(clf).fit(rep_X, rep_bags, props)
    expected = repeated_fit.predict_proba(X)
    np.testing.assert_allclose(weighted_fit.predict_proba(X), expected, atol=1e-4)


@pytest.mark.filterwarnings("error::sklearn_llp.exceptions.BagLeakageWarning")
def test_the_scorer_takes_sample_weight(weighted):
    X, y, bags, w = weighted
    props = label_proportions(bags, y, sample_weight=w)
    clf = LLPClassifier(method="dllp", max_epochs=5, verbose=0, random_state=0)
    clf.fit(X, bags, props)
    errors = bag_errors(bags, props, clf.predict_proba(X), sample_weight=w)
    scorer = make_bag_scorer("soft_l1", bags=bags, props=props)
    assert scorer(clf, X, bags, sample_weight=w) == pytest.approx(-errors["soft_l1"])
    w0 = np.where(bags == 0, 0, w)  # bag 0 leaves the score whole, quietly
    errors = bag_errors(bags, props, clf.predict_proba(X), sample_weight=w0)
    assert scorer(clf, X, bags, sample_weight=w0) == pytest.approx(-errors["soft_l1"])
