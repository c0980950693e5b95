"""The label-free decision rules do exactly what the docs say.

- Two classes: ``predict`` is ``proba[:, 1] >= threshold_`` to the row, also
  with many tied probabilities (discrete features), and the prior-matched
  threshold is the cut point whose positive rate is closest to the prior.
- More classes: ``predict`` is ``argmax(log(proba) + decision_offsets_)``,
  and prior matching is the optimum of a transport problem: the rates equal
  the prior within ties, certified by Hall's condition on the tied rows.
- A rare class that no bag holds in majority is still predicted (prior
  matching), and model selection picks a trained model."""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.frozen import FrozenEstimator
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.model_selection import FixedThresholdClassifier, GridSearchCV

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import label_proportions
from sklearn_llp.core._decision import (
    decide,
    fit_decision,
    prior_offsets,
    prior_threshold,
)
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.metrics import hard_l1_error, make_bag_scorer
from sklearn_llp.model_selection import BagKFold

# ----------------------------------------------------------------------
# what the docs say, written out independently
# ----------------------------------------------------------------------


def documented(est, proba):
    """The documented rule of a fitted estimator, applied to ``proba``."""
    if len(est.classes_) == 2:
        return est.classes_[(proba[:, 1] >= est.threshold_).astype(int)]
    with np.errstate(divide="ignore"):
        scores = np.log(proba.astype(np.float64)) + est.decision_offsets_
    return est.classes_[np.argmax(scores, axis=1)]


def best_binary_gap(proba_1, prior_1, weights):
    """Smallest |positive rate - prior| over every cut point."""
    cuts = np.append(np.unique(proba_1[weights > 0]), np.inf)
    total = weights.sum()
    return min(abs(weights[proba_1 >= c].sum() / total - prior_1) for c in cuts)


def rates(pred, weights, n_classes):
    return np.bincount(pred, weights=weights, minlength=n_classes) / weights.sum()


def certify(proba, offsets, prior, weights, tie=1e-5):
    """Assert Hall's condition on the rows tied (within ``tie``) under
    ``offsets``: the tied rows can be split among their tied classes to meet
    the prior exactly (the transport optimum). Then the hard rates miss the
    prior by at most twice the tied weight (L1); return that bound."""
    n_classes = proba.shape[1]
    with np.errstate(divide="ignore"):
        adjusted = np.log(proba.astype(np.float64)) + offsets
    top = adjusted.max(axis=1)
    tied = adjusted >= (top - tie)[:, None]
    total = weights.sum()
    target = np.asarray(prior) / np.sum(prior) * total
    for size in range(1, n_classes):
        for subset in itertools.combinations(range(n_classes), size):
            inside = ~np.delete(tied, subset, axis=1).any(axis=1)
            assert weights[inside].sum() <= target[list(subset)].sum() + 1e-9 * total, (
                subset
            )
    bound = 2 * weights[tied.sum(axis=1) > 1].sum() / total
    pred = decide(proba, offsets)
    gap = np.abs(rates(pred, weights, n_classes) - target / total).sum()
    assert gap <= bound + 1e-9, (gap, bound)
    return bound


# ----------------------------------------------------------------------
# estimators: predict is the documented rule, row for row
# ----------------------------------------------------------------------


def _problem(features, n_classes, seed=0, n=150):
    rng = np.random.RandomState(seed)
    if features == "discrete":
        X = rng.randint(0, 2, size=(n, 3)).astype(float)
    else:
        X = rng.normal(size=(n, 3))
    logits = X @ rng.normal(0, 1.5, size=(3, n_classes)) + rng.normal(
        0, 0.5, size=(n, n_classes)
    )
    y = np.argmax(logits + rng.gumbel(size=logits.shape), axis=1)
    bags = np.repeat(np.arange(n // 10), 10)
    props = np.zeros((n, n_classes))
    for b in np.unique(bags):
        props[bags == b] = np.bincount(y[bags == b], minlength=n_classes) / 10
    return X, bags, props


def _estimator(name, threshold):
    if name == "meanmap":
        return MeanMapClassifier(threshold=threshold)
    return LLPClassifier(
        device="cpu", verbose=0, max_epochs=3, random_state=0, threshold=threshold
    )


def _fit(name, threshold, X, bags, props, sample_weight=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identifiability / convergence
        return _estimator(name, threshold).fit(
            X, bags, props, sample_weight=sample_weight
        )


def _prior(props, weights):
    return weights @ props / weights.sum()


@pytest.mark.parametrize("name", ["meanmap", "llp"])
@pytest.mark.parametrize("features", ["discrete", "continuous"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("threshold", ["auto", "prior", "argmax", 0.3])
def test_predict_is_the_documented_rule(name, features, n_classes, threshold):
    X, bags, props = _problem(features, n_classes)
    if n_classes != 2 and threshold == 0.3:
        with pytest.raises(ValueError, match="two classes"):
            _fit(name, threshold, X, bags, props)
        return
    est = _fit(name, threshold, X, bags, props)
    X_new = np.vstack([X, _problem(features, n_classes, seed=1)[0]])
    proba = est.predict_proba(X_new)
    pred = est.predict(X_new)
    np.testing.assert_array_equal(pred, documented(est, proba))
    assert est.decision_offsets_.shape == (n_classes,)
    assert np.isfinite(est.decision_offsets_).all()
    if n_classes == 2:
        assert type(est.threshold_) is float
        if threshold == 0.3:
            assert est.threshold_ == 0.3
        if threshold == "argmax":
            assert est.threshold_ == 0.5
        # scikit-learn's own thresholding of the same probabilities
        fixed = FixedThresholdClassifier(
            FrozenEstimator(est),
            threshold=est.threshold_,
            response_method="predict_proba",
        ).fit(X, est.predict(X))
        np.testing.assert_array_equal(fixed.predict(X_new), pred)
    else:
        assert est.threshold_ is None
        if threshold == "argmax":
            assert not est.decision_offsets_.any()
    if est._decision_rule() == "prior":
        train = est.predict_proba(X)
        weights = np.ones(len(X))
        prior = _prior(props, weights)
        if n_classes == 2:
            gap = abs(np.mean(est.predict(X) == est.classes_[1]) - prior[1])
            assert gap == pytest.approx(
                best_binary_gap(train[:, 1], prior[1], weights), abs=1e-12
            )
        else:
            certify(train, est.decision_offsets_, prior, weights)


@pytest.mark.parametrize("name", ["meanmap", "llp"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_weighted_prior_matching_by_the_estimators(name, n_classes):
    X, bags, props = _problem("discrete", n_classes, seed=3)
    weights = np.random.RandomState(0).choice([0.5, 1.0, 3.0], len(X))
    est = _fit(name, "prior", X, bags, props, sample_weight=weights)
    proba = est.predict_proba(X)
    np.testing.assert_array_equal(est.predict(X), documented(est, proba))
    prior = _prior(props, weights)
    pred = np.searchsorted(est.classes_, est.predict(X))
    if n_classes == 2:
        gap = abs(rates(pred, weights, 2)[1] - prior[1])
        assert gap == pytest.approx(
            best_binary_gap(proba[:, 1], prior[1], weights), abs=1e-12
        )
    else:
        certify(proba, est.decision_offsets_, prior, weights)


def test_the_review_case_binary_discrete_features():
    """Item 3: 120 rows, 3 binary features, bag prior 0.35: predict used to
    disagree with ``proba[:, 1] >= threshold_`` on 15 rows."""
    rng = np.random.RandomState(0)
    X = rng.randint(0, 2, size=(120, 3)).astype(float)
    y = (X @ [1.0, -1.0, 0.5] + rng.normal(0, 0.7, 120) > 0.4).astype(int)
    bags = np.repeat(np.arange(12), 10)
    props = np.array([[1 - y[bags == b].mean(), y[bags == b].mean()] for b in bags])
    for name in ("llp", "meanmap"):
        est = _fit(name, "auto", X, bags, props)
        proba = est.predict_proba(X)
        assert len(np.unique(proba[:, 1])) <= 8  # tied probabilities
        np.testing.assert_array_equal(est.predict(X), documented(est, proba))
        assert est.threshold_ in set(proba[:, 1].tolist())
        gap = abs(est.predict(X).mean() - props[:, 1].mean())
        assert gap == pytest.approx(
            best_binary_gap(proba[:, 1], props[:, 1].mean(), np.ones(120)), abs=1e-12
        )


def test_short_fit_with_three_classes_matches_the_prior():
    """Item 4: a short fit returned all-zero offsets."""
    X, bags, props = _problem("continuous", 3, seed=5)
    est = _fit("llp", "prior", X, bags, props)
    assert est.decision_offsets_.any()
    certify(
        est.predict_proba(X),
        est.decision_offsets_,
        _prior(props, np.ones(150)),
        np.ones(150),
    )


def test_the_oscillating_case_converges():
    """Item 4: with discrete features the damped steps of the old fit left
    class rates [0, 0.49, 0.51] against a prior [0.23, 0.34, 0.43]."""
    rng = np.random.RandomState(16)
    n = 300
    X = rng.randint(0, 2, size=(n, 3)).astype(float)
    logits = X @ rng.normal(0, 1.5, size=(3, 3))
    y = np.array([rng.choice(3, p=np.exp(z) / np.exp(z).sum()) for z in logits])
    bags = rng.randint(0, 15, n)
    props = np.array(
        [np.bincount(y[bags == b], minlength=3) / (bags == b).sum() for b in bags]
    )
    est = _fit("meanmap", "prior", X, bags, props)
    proba = est.predict_proba(X)
    prior = est.class_prior_
    np.testing.assert_allclose(prior, [0.233, 0.34, 0.427], atol=1e-3)
    certify(proba, est.decision_offsets_, prior, np.ones(n))
    gap = np.abs(rates(est.predict(X), np.ones(n), 3) - prior).sum()
    assert gap < 0.05  # the old fit: 0.47


# ----------------------------------------------------------------------
# prior matching directly
# ----------------------------------------------------------------------


def test_prior_threshold_by_hand():
    p1 = np.array([0.1, 0.2, 0.2, 0.4, 0.9])
    # rates of the cuts 0.1, 0.2, 0.4, 0.9, above all: 1, .8, .4, .2, 0
    assert prior_threshold(p1, 0.5) == 0.4
    assert prior_threshold(p1, 0.45) == 0.4
    assert prior_threshold(p1, 0.85) == 0.2
    # equally close to 0.8 and 0.4: the lower cut (more positives)
    assert prior_threshold(p1, 0.6) == 0.2
    assert prior_threshold(p1, 0.3) == 0.4  # 0.4 and 0.2 equally close
    assert prior_threshold(p1, 1.0) == 0.1
    # closest to "no positive": a cut above every probability, exact in float32
    above = prior_threshold(p1, 0.05)
    assert above > 0.9 and float(np.float32(above)) == above
    assert not (p1.astype(np.float32) >= above).any()
    # weights move the rates; a zero weight row is no cut point
    w = np.array([1.0, 1.0, 1.0, 1.0, 6.0])  # rates 1, .9, .7, .6, 0
    assert prior_threshold(p1, 0.62, w) == 0.9
    w0 = np.array([1.0, 0.0, 0.0, 1.0, 1.0])  # no cut at 0.2: 1, 2/3, 1/3, 0
    assert prior_threshold(p1, 0.9, w0) == 0.1
    assert prior_threshold(p1, 0.8, w0) == 0.4


def test_binary_rule_compares_in_the_dtype_of_the_probabilities():
    proba = np.array([[0.7, 0.3], [0.6, 0.4]], dtype=np.float32)
    offsets, threshold = fit_decision("prior", proba, np.array([0.5, 0.5]))
    assert threshold == float(np.float32(0.4))  # a float32 value, not 0.4
    assert decide(proba, offsets, threshold).tolist() == [0, 1]
    assert (
        decide(proba, None, 0.3).tolist() == (proba[:, 1] >= 0.3).astype(int).tolist()
    )
    # a float threshold is NumPy's comparison: 0.3 as float32 for float32 rows
    assert decide(proba, None, 0.3).tolist() == [1, 1]


def test_prior_offsets_by_hand_one_group():
    """Identical rows: the transport optimum ties all three classes; the
    rows go, together, to the class that brings the rates closest."""
    proba = np.tile([0.5, 0.3, 0.2], (10, 1))
    offsets = prior_offsets(proba, [0.2, 0.3, 0.5])
    np.testing.assert_allclose(offsets, [0, np.log(5 / 3), np.log(5 / 2)], atol=1e-5)
    assert (decide(proba, offsets) == 2).all()


def test_prior_offsets_by_hand_two_groups():
    """Half the rows must go to class 1: group A ties 0 and 1, group B ties
    1 and 2 (offsets [0, log 2, 0]); one group goes to class 1."""
    proba = np.repeat([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]], 50, axis=0)
    offsets = prior_offsets(proba, [0.25, 0.5, 0.25])
    np.testing.assert_allclose(offsets, [0, np.log(2), 0], atol=1e-5)
    counts = np.bincount(decide(proba, offsets), minlength=3)
    assert sorted(counts.tolist()) == [0, 50, 50] and counts[1] == 50
    # the untied answer when the prior is the argmax rates
    offsets = prior_offsets(proba, [0.5, 0.0, 0.5])
    assert np.bincount(decide(proba, offsets), minlength=3).tolist() == [50, 0, 50]
    assert np.isfinite(offsets).all()


def test_a_class_of_prior_zero_is_never_predicted():
    rng = np.random.RandomState(0)
    proba = rng.dirichlet(np.ones(4), size=500)
    offsets = prior_offsets(proba, [0.4, 0.0, 0.35, 0.25])
    pred = decide(proba, offsets)
    assert not (pred == 1).any()
    assert np.isfinite(offsets).all() and offsets[0] == 0
    certify(proba, offsets, [0.4, 0.0, 0.35, 0.25], np.ones(500))


def test_zero_probabilities_cannot_be_offset():
    """log(0) = -inf loses to any finite score, whatever the offset: a row
    of probability 0 for the only class of the prior stays where it is."""
    proba = np.array([[1.0, 0.0, 0.0], [0.2, 0.5, 0.3]])
    offsets = prior_offsets(proba, [0.0, 1.0, 0.0])
    assert np.isfinite(offsets).all()
    assert decide(proba, offsets).tolist() == [0, 1]


@pytest.mark.parametrize("n_classes", [3, 4])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("tied", [False, True])
def test_multiclass_matching_within_ties(n_classes, weighted, tied):
    rng = np.random.RandomState(n_classes + 2 * weighted + 4 * tied)
    n = 3000
    if tied:  # 32 distinct rows, float32 like a network's
        protos = rng.dirichlet(np.ones(n_classes) * 0.7, size=32)
        proba = protos[rng.randint(0, 32, n)].astype(np.float32)
    else:
        proba = rng.dirichlet(np.ones(n_classes) * 0.7, size=n)
    weights = rng.choice([0.0, 0.5, 1.0, 2.0], n) if weighted else np.ones(n)
    prior = rng.dirichlet(np.ones(n_classes) * 2)
    offsets = prior_offsets(proba, prior, weights if weighted else None)
    before = np.abs(rates(np.argmax(proba, 1), weights, n_classes) - prior).sum()
    bound = certify(proba, offsets, prior, weights)
    after = np.abs(rates(decide(proba, offsets), weights, n_classes) - prior).sum()
    assert after <= bound + 1e-9 and after < before
    if not tied:
        assert after <= 2 * n_classes * 2.0 / weights.sum()  # a few rows
    # deterministic
    np.testing.assert_array_equal(
        offsets, prior_offsets(proba, prior, weights if weighted else None)
    )


@pytest.mark.parametrize("tied", [False, True])
def test_large_problems_take_the_subsample_path(tied):
    rng = np.random.RandomState(7)
    n, n_classes = 40_000, 5
    if tied:  # 8 binary features: 256 distinct rows
        X = rng.randint(0, 2, size=(n, 8))
        logits = X @ rng.normal(0, 1, size=(8, n_classes))
    else:
        logits = rng.normal(0, 2, size=(n, n_classes))
    proba = np.exp(logits - logits.max(1, keepdims=True))
    proba /= proba.sum(1, keepdims=True)
    prior = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    offsets = prior_offsets(proba, prior)
    certify(proba, offsets, prior, np.ones(n))
    if not tied:
        gap = np.abs(rates(decide(proba, offsets), np.ones(n), 5) - prior).sum()
        assert gap * n <= 2 * n_classes


# hypothesis: small, heavily tied problems

_probabilities = st.sampled_from(
    [0.0, 0.05, 0.1, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 1.0, 1 / 3, 0.30000001]
)


@settings(max_examples=150, deadline=None)
@given(
    p1=st.lists(_probabilities, min_size=1, max_size=40),
    prior_1=st.floats(0, 1),
    weights=st.one_of(st.none(), st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]))),
    float32=st.booleans(),
)
def test_binary_prior_matching_is_the_closest_cut(p1, prior_1, weights, float32):
    dtype = np.float32 if float32 else np.float64
    proba = np.column_stack([1 - np.array(p1), p1]).astype(dtype)
    n = len(proba)
    w = np.ones(n) if weights is None else np.resize(np.array(weights + [1.0]), n)
    if not (w > 0).any():
        w[0] = 1.0
    offsets, threshold = fit_decision(
        "prior", proba, np.array([1 - prior_1, prior_1]), w
    )
    assert type(threshold) is float
    pred = decide(proba, offsets, threshold)
    np.testing.assert_array_equal(pred, proba[:, 1] >= threshold)
    # exact in the dtype: the same in float64
    np.testing.assert_array_equal(pred, proba[:, 1].astype(np.float64) >= threshold)
    gap = abs(w[pred == 1].sum() / w.sum() - prior_1)
    assert gap == pytest.approx(best_binary_gap(proba[:, 1], prior_1, w), abs=1e-12)
    # equal probabilities, equal labels
    for value in np.unique(proba[:, 1]):
        assert len(set(pred[proba[:, 1] == value])) == 1


@settings(max_examples=100, deadline=None)
@given(
    n_classes=st.integers(3, 4),
    data=st.data(),
)
def test_multiclass_prior_matching_on_tied_matrices(n_classes, data):
    n_protos = data.draw(st.integers(1, 5))
    protos = np.array(
        data.draw(
            st.lists(
                st.lists(st.integers(1, 6), min_size=n_classes, max_size=n_classes),
                min_size=n_protos,
                max_size=n_protos,
            )
        ),
        dtype=float,
    )
    protos /= protos.sum(axis=1, keepdims=True)  # ties within and across rows
    rows = data.draw(st.lists(st.integers(0, n_protos - 1), min_size=1, max_size=60))
    proba = protos[rows]
    prior = np.array(
        data.draw(st.lists(st.integers(0, 5), min_size=n_classes, max_size=n_classes)),
        dtype=float,
    )
    prior[data.draw(st.integers(0, n_classes - 1))] += 1
    prior /= prior.sum()
    weights = np.array(
        data.draw(
            st.lists(
                st.sampled_from([0.5, 1.0, 2.0]), min_size=len(rows), max_size=len(rows)
            )
        )
    )
    offsets = prior_offsets(proba, prior, weights)
    assert np.isfinite(offsets).all()
    certify(proba, offsets, prior, weights)
    # rows with equal probabilities get equal labels
    pred = decide(proba, offsets)
    for r in set(rows):
        assert len(set(pred[np.array(rows) == r])) == 1
    assert not np.isin(pred, np.flatnonzero(prior == 0)).any()


# ----------------------------------------------------------------------
# the metrics and the callback use the same rule
# ----------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 3])
def test_metric_prior_decision_is_the_estimator_rule(n_classes):
    X, bags, props = _problem("discrete", n_classes, seed=2)
    est = _fit("meanmap", "prior", X, bags, props)
    proba = est.predict_proba(X)
    pred = np.searchsorted(est.classes_, est.predict(X))
    hard = np.eye(n_classes)[pred]
    expected = np.mean(
        [
            np.abs(hard[bags == b].mean(0) - props[bags == b][0]).sum()
            for b in np.unique(bags)
        ]
    )
    assert hard_l1_error(bags, props, proba, decision="prior") == pytest.approx(
        expected
    )


def _rare(n, rng):
    X = rng.normal(size=(n, 5))
    logit = 1.5 * X[:, 0] + 1.0 * X[:, 1] - 4.0
    y = (rng.random_sample(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return X, y


@pytest.fixture(scope="module")
def rare():
    rng = np.random.RandomState(0)
    X, y = _rare(3000, rng)
    # 30 groups by a noisy version of the informative feature: the rates
    # vary from 0 to 14 %, so the bags identify the classifier
    noisy = X[:, 0] + rng.normal(0, 1.5, len(X))
    groups = np.digitize(noisy, np.quantile(X[:, 0], np.linspace(0, 1, 31)[1:-1]))
    table = label_proportions(groups, y)
    X_test, y_test = _rare(3000, rng)
    return X, groups, table, X_test, y_test


def _fit_rare_class(rare, **params):
    X, groups, table, _, _ = rare
    defaults = dict(method="dllp", max_epochs=20, verbose=0, random_state=0)
    return LLPClassifier(**{**defaults, **params}).fit(X, groups, table)


def test_the_problem_is_rare_and_no_bag_holds_a_majority(rare):
    _, _, table, _, y_test = rare
    assert 0.03 < y_test.mean() < 0.08
    assert table[1].max() < 0.15


def test_prior_threshold_predicts_the_rare_class(rare):
    X, groups, table, X_test, y_test = rare
    clf = _fit_rare_class(rare)
    assert clf._decision_rule() == "prior"
    argmax = np.argmax(clf.predict_proba(X_test), axis=1)
    assert argmax.sum() == 0  # argmax never says yes: the trap
    assert f1_score(y_test, clf.predict(X_test)) > 0.15
    # the threshold makes the training rows' positive rate the bags' rate
    prior = np.average(table[1], weights=np.bincount(groups))
    assert clf.predict(X).mean() == pytest.approx(prior, abs=0.005)
    assert 0 < clf.threshold_ < 0.5
    # the same decision through scikit-learn's FixedThresholdClassifier
    fixed = FixedThresholdClassifier(clf, threshold=clf.threshold_)
    np.testing.assert_array_equal(fixed.predict(X_test), clf.predict(X_test))
    # predict_proba does not depend on the rule
    same = _fit_rare_class(rare, threshold="argmax")
    np.testing.assert_array_equal(same.predict_proba(X_test), clf.predict_proba(X_test))
    assert roc_auc_score(y_test, clf.predict_proba(X_test)[:, 1]) > 0.65


def test_checkpoint_does_not_keep_the_first_epoch(rare):
    argmax = _fit_rare_class(rare, threshold="argmax", validation_fraction=0.25)
    hard = argmax.history[:, "valid_hard_l1"]
    assert len(set(hard)) == 1  # every epoch ties under argmax
    prior = _fit_rare_class(rare, validation_fraction=0.25)
    for clf in (argmax, prior):
        best = [row["epoch"] for row in clf.history if row["valid_hard_l1_best"]]
        assert best[-1] > 3, best  # a trained epoch, by prior matching or tie-break
    assert len(set(prior.history[:, "valid_hard_l1"])) > 5


def test_grid_search_picks_a_trained_model(rare):
    X, groups, table, _, _ = rare
    scorer = make_bag_scorer("hard_l1", table=table)
    grid = {"max_epochs": [1, 20]}  # both predict no positive by argmax
    searches = {
        rule: GridSearchCV(
            LLPClassifier(method="dllp", verbose=0, random_state=0, threshold=rule),
            grid,
            scoring=scorer,
            cv=BagKFold(3),
            error_score="raise",
        ).fit(X, groups, props=table)
        for rule in ("argmax", "auto")
    }
    scores = searches["argmax"].cv_results_["mean_test_score"]
    assert scores[0] == scores[1]  # argmax: a tie, the first (untrained) wins
    assert searches["auto"].best_params_ == {"max_epochs": 20}


def test_hard_errors_with_prior_decisions(rare):
    X, groups, table, _, _ = rare
    proba = _fit_rare_class(rare).predict_proba(X)
    early = _fit_rare_class(rare, max_epochs=1).predict_proba(X)
    # argmax says "negative" everywhere for both: the same error
    assert hard_l1_error(groups, table, proba) == hard_l1_error(groups, table, early)
    assert hard_l1_error(groups, table, proba, decision="prior") < hard_l1_error(
        groups, table, early, decision="prior"
    )
    with pytest.raises(ValueError, match="decision must be"):
        hard_l1_error(groups, table, proba, decision="median")


def test_mean_map_uses_the_same_decision_rule(rare):
    from sklearn_llp.linear import MeanMapClassifier

    X, groups, table, X_test, y_test = rare
    prior = np.average(table[1], weights=np.bincount(groups))
    default = MeanMapClassifier().fit(X, groups, table)
    argmax = MeanMapClassifier(threshold="argmax").fit(X, groups, table)
    assert default.predict(X).mean() == pytest.approx(prior, abs=0.005)
    assert argmax.predict(X_test).sum() < default.predict(X_test).sum()
    assert f1_score(y_test, default.predict(X_test)) > f1_score(
        y_test, argmax.predict(X_test)
    )
