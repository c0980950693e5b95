"""The label-free decision rules do what the docs say."""

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
from sklearn_llp.core import decide, fit_decision
from sklearn_llp.core._decision import prior_offsets, prior_threshold
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.metrics import hard_l1_error, make_bag_scorer
from sklearn_llp.model_selection import BagKFold


def best_binary_gap(proba_1, prior_1, weights):
    """Smallest |positive rate - prior| over every cut point."""
    cuts = np.append(np.unique(proba_1[weights > 0]), np.inf)
    total = weights.sum()
    return min(abs(weights[proba_1 >= c].sum() / total - prior_1) for c in cuts)


def certify(proba, offsets, prior, weights):
    """The guarantee of ``prior_offsets`` (returns the L1 miss): (1) no class
    set S gets more than its share from rows sure to be in S (transport
    optimum up to 1e-6 ties); (2) the L1 miss is at most twice the weight of
    rows whose two best scores are within 1e-6, + 1e-9 W; (3) a class of
    prior 0 never wins."""
    n_classes = proba.shape[1]
    with np.errstate(divide="ignore"):
        adjusted = np.log(proba.astype(np.float64)) + offsets
    total = weights.sum()
    target = np.asarray(prior) / np.sum(prior) * total
    near = adjusted >= (adjusted.max(axis=1) - 1e-6)[:, None]
    for size in range(1, n_classes):
        for subset in itertools.combinations(range(n_classes), size):
            sure = ~np.delete(near, subset, axis=1).any(axis=1)
            share = target[list(subset)].sum()
            assert weights[sure].sum() <= share + 1e-9 * total, subset
    ordered = np.sort(adjusted, axis=1)
    tied = weights[ordered[:, -1] - ordered[:, -2] < 1e-6].sum()
    pred = decide(proba, offsets)
    miss = np.abs(np.bincount(pred, weights, n_classes) - target).sum()
    assert miss <= 2 * tied + 1e-9 * total, (miss, tied)
    assert not np.isin(pred[weights > 0], np.flatnonzero(target == 0)).any()
    return miss


def _problem(features, n_classes, seed=0, n=150):
    rng = np.random.RandomState(seed)
    if features == "discrete":  # at most 8 distinct rows: tied probabilities
        X = rng.randint(0, 2, size=(n, 3)).astype(float)
    else:
        X = rng.normal(size=(n, 3))
    logits = X @ rng.normal(0, 1.5, size=(3, n_classes))
    logits += rng.normal(0, 0.5, size=(n, n_classes)) + rng.gumbel(size=(n, n_classes))
    bags = np.repeat(np.arange(n // 10), 10)
    props = np.eye(n_classes)[np.argmax(logits, axis=1)]
    return X, bags, props.reshape(-1, 10, n_classes).mean(axis=1)[bags]


def _fit(name, threshold, X, bags, props, sample_weight=None):
    net = dict(device="cpu", verbose=0, max_epochs=3, random_state=0)
    est = MeanMapClassifier() if name == "meanmap" else LLPClassifier(**net)
    est.set_params(threshold=threshold)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # identifiability / convergence
        return est.fit(X, bags, props, sample_weight=sample_weight)


@pytest.mark.parametrize("name", ["meanmap", "llp"])
@pytest.mark.parametrize("features", ["discrete", "continuous"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.slow
def test_weighted_prior_matching_keeps_its_guarantee(name, features, n_classes):
    """Weighted fits on tied (discrete) rows; every threshold's documented
    rule: test_conformance.py::test_predict_follows_the_documented_decision_rule."""
    X, bags, props = _problem(features, n_classes)
    if n_classes != 2:
        with pytest.raises(ValueError, match="two classes"):
            _fit(name, 0.3, X, bags, props)
    weights = np.random.RandomState(0).choice([0.5, 1.0, 3.0], len(X))
    est = _fit(name, "prior", X, bags, props, weights)
    train, prior = est.predict_proba(X), weights @ props / weights.sum()
    if n_classes != 2:
        certify(train, est.decision_offsets_, prior, weights)
        return
    positive = weights[est.predict(X) == est.classes_[1]].sum() / weights.sum()
    best = best_binary_gap(train[:, 1], prior[1], weights)
    assert abs(positive - prior[1]) == pytest.approx(best, abs=1e-12)
    fixed = FixedThresholdClassifier(FrozenEstimator(est), threshold=est.threshold_)
    pred = est.predict(X)
    np.testing.assert_array_equal(fixed.fit(X, pred).predict(X), pred)


def test_the_oscillating_case_converges():
    """Damped steps of an early multi-class fit left class rates [0, 0.49,
    0.51] against a prior [0.23, 0.34, 0.43] (discrete features, bags of
    unequal sizes)."""
    rng = np.random.RandomState(16)
    X = rng.randint(0, 2, size=(300, 3)).astype(float)
    logits = X @ rng.normal(0, 1.5, size=(3, 3))
    y = np.array([rng.choice(3, p=np.exp(z) / np.exp(z).sum()) for z in logits])
    bags = rng.randint(0, 15, 300)
    props = np.array([np.bincount(y[bags == b], minlength=3) for b in bags])
    est = _fit("meanmap", "prior", X, bags, props / props.sum(1, keepdims=True))
    np.testing.assert_allclose(est.class_prior_, [0.233, 0.34, 0.427], atol=1e-3)
    proba, offsets = est.predict_proba(X), est.decision_offsets_
    assert certify(proba, offsets, est.class_prior_, np.ones(300)) < 15  # old: 141


def test_binary_rule_by_hand():
    p1 = np.array([0.1, 0.2, 0.2, 0.4, 0.9])
    # rates of the cuts 0.1, 0.2, 0.4, 0.9, above all: 1, .8, .4, .2, 0
    for prior_1, cut in [(0.5, 0.4), (0.45, 0.4), (0.85, 0.2), (1.0, 0.1)]:
        assert prior_threshold(p1, prior_1) == cut
    # equally close to two cuts: the lower (more rows in classes_[1])
    assert prior_threshold(p1, 0.6) == 0.2 and prior_threshold(p1, 0.3) == 0.4
    # closest to "no positive": a cut above every probability, exact in float32
    above = prior_threshold(p1, 0.05)
    assert above > 0.9 and float(np.float32(above)) == above
    assert not (p1.astype(np.float32) >= above).any()
    # weights move the rates; a zero weight row is no cut point
    assert prior_threshold(p1, 0.62, [1, 1, 1, 1, 6.0]) == 0.9  # 1, .9, .7, .6, 0
    w0 = np.array([1.0, 0.0, 0.0, 1.0, 1.0])  # no cut at 0.2: 1, 2/3, 1/3, 0
    assert prior_threshold(p1, 0.9, w0) == 0.1 and prior_threshold(p1, 0.8, w0) == 0.4
    # the binary rule compares in the dtype of the probabilities
    proba = np.array([[0.7, 0.3], [0.6, 0.4]], dtype=np.float32)
    offsets, threshold = fit_decision("prior", proba, np.array([0.5, 0.5]))
    assert threshold == float(np.float32(0.4))  # a float32 value, not 0.4
    assert decide(proba, offsets, threshold).tolist() == [0, 1]
    # a float threshold is NumPy's comparison: 0.3 as float32 for float32 rows
    assert decide(proba, None, 0.3).tolist() == [1, 1]
    assert [fit_decision(r, proba)[1] for r in ("argmax", 0.3)] == [0.5, 0.3]


@pytest.mark.parametrize(
    "proba, prior, offsets, pred",
    [
        # identical rows: soft shares are the prior; all go to the largest
        (np.tile([0.5, 0.3, 0.2], (10, 1)), [0.2, 0.3, 0.5],
         [0, np.log(5 / 3), np.log(5 / 2)], [2] * 10),
        # group A ties 0 and 1, group B ties 1 and 2 (half to class 1)
        (np.repeat([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]], 50, axis=0),
         [0.25, 0.5, 0.25], [0, np.log(2), 0], None),
        # the prior is the argmax rates: the argmax stays, class 1 never wins
        (np.repeat([[0.6, 0.3, 0.1], [0.1, 0.3, 0.6]], 50, axis=0),
         [0.5, 0.0, 0.5], None, [0] * 50 + [2] * 50),
        (np.random.RandomState(0).dirichlet(np.ones(4), size=500),
         [0.4, 0.0, 0.35, 0.25], None, None),
        # a distant optimum: all rows near-certain of class 0 (~480 nats)
        (np.array([[1, 1e-200, 1e-250], [1, 1e-250, 1e-200], [1, 1e-225, 1e-225]]),
         [1 / 3, 1 / 3, 1 / 3], None, [1, 2, 0]),
        # log(0) loses to any finite score: the row stays in class 0
        (np.array([[1.0, 0.0, 0.0], [0.2, 0.5, 0.3]]), [0.0, 1.0, 0.0], None, [0, 1]),
    ],
)  # fmt: skip
def test_prior_offsets_by_hand(proba, prior, offsets, pred):
    found = prior_offsets(proba, prior)
    assert np.isfinite(found).all() and found[np.flatnonzero(prior)[0]] == 0
    if offsets is not None:
        np.testing.assert_allclose(found, offsets, atol=1e-6)
    if pred is not None:
        assert decide(proba, found).tolist() == pred
    if proba.all():  # the guarantee is for positive probabilities
        certify(proba, found, prior, np.ones(len(proba)))


@pytest.mark.parametrize(
    "n, n_classes, weighted, tied",
    [(3000, c, w, t) for c in (3, 4) for w in (False, True) for t in (False, True)]
    + [(40_000, 5, False, False), (40_000, 5, False, True)],
)
@pytest.mark.slow
def test_multiclass_matching(n, n_classes, weighted, tied):
    rng = np.random.RandomState(n_classes + 2 * weighted + 4 * tied)
    if tied:  # 32 distinct rows, float32 like a network's
        protos = rng.dirichlet(np.ones(n_classes) * 0.7, size=32)
        proba = protos[rng.randint(0, 32, n)].astype(np.float32)
    else:
        proba = rng.dirichlet(np.ones(n_classes) * 0.7, size=n)
    weights = rng.choice([0.0, 0.5, 1.0, 2.0], n) if weighted else np.ones(n)
    prior = rng.dirichlet(np.ones(n_classes) * 2)
    offsets = prior_offsets(proba, prior, weights if weighted else None)
    before = np.bincount(np.argmax(proba, 1), weights, n_classes)
    miss = certify(proba, offsets, prior, weights)
    assert miss < np.abs(before - prior * weights.sum()).sum()
    if not tied:
        assert miss <= 2 * n_classes * weights.max()  # a few rows
    again = prior_offsets(proba, prior, weights if weighted else None)
    np.testing.assert_array_equal(offsets, again)  # deterministic


_PROBABILITIES = st.sampled_from(
    [0.0, 0.05, 0.1, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 1.0, 1 / 3, 0.30000001]
)


@settings(max_examples=150, deadline=None)
@given(
    p1=st.lists(_PROBABILITIES, min_size=1, max_size=40),
    prior_1=st.floats(0, 1),
    weights=st.one_of(st.none(), st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.5]))),
    dtype=st.sampled_from([np.float32, np.float64]),
)
@pytest.mark.slow
def test_binary_prior_matching_is_the_closest_cut(p1, prior_1, weights, dtype):
    proba = np.column_stack([1 - np.array(p1), p1]).astype(dtype)
    n = len(proba)
    w = np.ones(n) if weights is None else np.resize(np.array(weights + [1.0]), n)
    w[0] = w[0] if (w > 0).any() else 1.0
    prior = np.array([1 - prior_1, prior_1])
    offsets, threshold = fit_decision("prior", proba, prior, w)
    assert type(threshold) is float
    pred = decide(proba, offsets, threshold)
    np.testing.assert_array_equal(pred, proba[:, 1] >= threshold)
    # exact in the dtype: the same in float64
    np.testing.assert_array_equal(pred, proba[:, 1].astype(np.float64) >= threshold)
    gap = abs(w[pred == 1].sum() / w.sum() - prior_1)
    assert gap == pytest.approx(best_binary_gap(proba[:, 1], prior_1, w), abs=1e-12)


@settings(max_examples=100, deadline=None)
@given(n_classes=st.integers(3, 10), float32=st.booleans(), data=st.data())
@pytest.mark.slow
def test_multiclass_prior_matching_keeps_its_guarantee(n_classes, float32, data):
    """Rows from a few integer prototypes (ties within and across rows, and
    duplicates), some with tiny probabilities; weights (zeros included);
    classes of prior 0."""
    values = [1, 2, 3, 5] if float32 else [1, 2, 3, 5, 1e-12, 1e-200]

    def draw(elements, size):
        return np.array(data.draw(st.lists(elements, min_size=size, max_size=size)))

    n_protos = data.draw(st.integers(1, 5))
    protos = [draw(st.sampled_from(values), n_classes) for _ in range(n_protos)]
    protos = np.array(protos, dtype=float) / np.sum(protos, axis=1, keepdims=True)
    rows = draw(st.integers(0, len(protos) - 1), data.draw(st.integers(1, 50)))
    proba = protos[rows].astype(np.float32 if float32 else np.float64)
    prior = draw(st.integers(0, 5), n_classes).astype(float)
    prior[data.draw(st.integers(0, n_classes - 1))] += 1
    weights = draw(st.sampled_from([0.0, 0.5, 1.0, 2.0]), len(rows))
    weights[0] = max(weights[0], 1.0)
    offsets = prior_offsets(proba, prior / prior.sum(), weights)
    assert np.isfinite(offsets).all()
    certify(proba, offsets, prior, weights)
    again = prior_offsets(proba, prior / prior.sum(), weights)
    np.testing.assert_array_equal(offsets, again)


@pytest.fixture(scope="module")
def rare():
    """A 5 % class that no bag holds in majority: 30 groups by a noisy
    informative feature (rates 0 to 14 %: the bags identify the model)."""
    rng = np.random.RandomState(0)

    def draw(n):
        X = rng.normal(size=(n, 5))
        logit = 1.5 * X[:, 0] + 1.0 * X[:, 1] - 4.0
        return X, (rng.random_sample(n) < 1 / (1 + np.exp(-logit))).astype(int)

    X, y = draw(3000)
    noisy = X[:, 0] + rng.normal(0, 1.5, len(X))
    groups = np.digitize(noisy, np.quantile(X[:, 0], np.linspace(0, 1, 31)[1:-1]))
    table = label_proportions(groups, y)
    X_test, y_test = draw(3000)
    assert 0.03 < y_test.mean() < 0.08 and table[1].max() < 0.15
    return X, groups, table, X_test, y_test


def _fit_rare(rare, estimator="llp", **params):
    X, groups, table, _, _ = rare
    if estimator == "meanmap":
        return MeanMapClassifier(**params).fit(X, groups, table)
    defaults = dict(method="dllp", max_epochs=20, verbose=0, random_state=0)
    return LLPClassifier(**{**defaults, **params}).fit(X, groups, table)


@pytest.mark.parametrize("estimator", ["llp", "meanmap"])
@pytest.mark.slow
def test_prior_threshold_predicts_the_rare_class(rare, estimator):
    X, groups, table, X_test, y_test = rare
    clf = _fit_rare(rare, estimator)
    argmax = _fit_rare(rare, estimator, threshold="argmax")
    assert clf._decision_rule() == "prior" and 0 < clf.threshold_ < 0.5
    # the training rows' positive rate is the bags' rate
    prior = np.average(table[1], weights=np.bincount(groups))
    assert clf.predict(X).mean() == pytest.approx(prior, abs=0.005)
    f1, f1_argmax = (f1_score(y_test, e.predict(X_test)) for e in (clf, argmax))
    assert argmax.predict(X_test).sum() < clf.predict(X_test).sum() and f1 > f1_argmax
    # scikit-learn's FixedThresholdClassifier agrees; predict_proba is the same
    fixed = FixedThresholdClassifier(clf, threshold=clf.threshold_)
    np.testing.assert_array_equal(fixed.predict(X_test), clf.predict(X_test))
    proba = clf.predict_proba(X_test)
    np.testing.assert_array_equal(argmax.predict_proba(X_test), proba)
    if estimator == "llp":
        assert argmax.predict(X_test).sum() == 0  # argmax never says yes: the trap
        assert f1 > 0.15 and roc_auc_score(y_test, proba[:, 1]) > 0.65


@pytest.mark.slow
def test_checkpoint_does_not_keep_the_first_epoch(rare):
    argmax = _fit_rare(rare, threshold="argmax", validation_fraction=0.25)
    assert len(set(argmax.history[:, "valid_hard_l1"])) == 1  # argmax: all tie
    prior = _fit_rare(rare, validation_fraction=0.25)
    for clf in (argmax, prior):
        best = [row["epoch"] for row in clf.history if row["valid_hard_l1_best"]]
        assert best[-1] > 3, best  # a trained epoch, by prior matching or tie-break
    assert len(set(prior.history[:, "valid_hard_l1"])) > 5


@pytest.mark.slow
def test_grid_search_picks_a_trained_model(rare):
    X, groups, table, _, _ = rare
    searches = {
        rule: GridSearchCV(
            LLPClassifier(method="dllp", verbose=0, random_state=0, threshold=rule),
            {"max_epochs": [1, 20]},  # both predict no positive by argmax
            scoring=make_bag_scorer("hard_l1", table=table),
            cv=BagKFold(3),
            error_score="raise",
        ).fit(X, groups, props=table)
        for rule in ("argmax", "auto")
    }
    scores = searches["argmax"].cv_results_["mean_test_score"]
    assert scores[0] == scores[1]  # argmax: a tie, the first (untrained) wins
    assert searches["auto"].best_params_ == {"max_epochs": 20}


@pytest.mark.slow
def test_hard_errors_with_prior_decisions(rare):
    X, groups, table, _, _ = rare
    proba = _fit_rare(rare).predict_proba(X)
    early = _fit_rare(rare, max_epochs=1).predict_proba(X)
    # argmax says "negative" everywhere for both: the same error
    assert hard_l1_error(groups, table, proba) == hard_l1_error(groups, table, early)
    prior = [hard_l1_error(groups, table, p, decision="prior") for p in (proba, early)]
    assert prior[0] < prior[1]
    with pytest.raises(ValueError, match="decision must be"):
        hard_l1_error(groups, table, proba, decision="median")


@pytest.mark.parametrize("name", ["meanmap", "llp"])
@pytest.mark.parametrize("size, rule", [(511, "argmax"), (512, "prior")])
def test_auto_matches_the_prior_of_many_classes_from_bags_of_512_rows(name, size, rule):
    # decision_ceiling.md: prior matching lifts ten classes in bags of 512
    # and 1,024 rows and costs a little in bags of 256
    rng = np.random.RandomState(0)
    y = rng.randint(3, size=4 * size)
    X = rng.normal(size=(len(y), 3)) + np.eye(3)[y]
    bags = np.repeat(np.arange(4), size)
    props = np.eye(3)[y].reshape(4, size, 3).mean(axis=1)[bags]
    est = _fit(name, "auto", X, bags, props)
    assert est._decision_rule() == rule
    assert est.decision_offsets_.any() == (rule == "prior")
