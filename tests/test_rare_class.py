"""A rare class that no bag holds in majority (issue 14, items 1 and 2).

With 5 % positives and every bag at most 14 % positive, a model trained on
proportions ranks the rows but ``argmax`` predicts the common class for
every row: F1 is 0, and the held-out hard L1 is the same at every epoch, so
``Checkpoint(monitor="valid_hard_l1_best")`` and a grid search over the hard
L1 cannot tell a trained model from an untrained one. The default decision
rule (prior matching for two classes) and the soft tie-break fix both.
"""

import numpy as np
import pytest
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.model_selection import FixedThresholdClassifier, GridSearchCV

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import label_proportions
from sklearn_llp.metrics import hard_l1_error, make_bag_scorer
from sklearn_llp.model_selection import BagKFold


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


def _fit(rare, **params):
    X, groups, table, _, _ = rare
    defaults = dict(method="dllp", max_epochs=20, verbose=0, random_state=0)
    return LLPClassifier(**{**defaults, **params}).fit(X, groups, table)


def test_the_problem_is_rare_and_no_bag_holds_a_majority(rare):
    _, _, table, _, y_test = rare
    assert 0.03 < y_test.mean() < 0.08
    assert table[1].max() < 0.15


def test_prior_threshold_predicts_the_rare_class(rare):
    X, groups, table, X_test, y_test = rare
    clf = _fit(rare)
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
    same = _fit(rare, threshold="argmax")
    np.testing.assert_array_equal(same.predict_proba(X_test), clf.predict_proba(X_test))
    assert roc_auc_score(y_test, clf.predict_proba(X_test)[:, 1]) > 0.65


def test_checkpoint_does_not_keep_the_first_epoch(rare):
    argmax = _fit(rare, threshold="argmax", validation_fraction=0.25)
    hard = argmax.history[:, "valid_hard_l1"]
    assert len(set(hard)) == 1  # every epoch ties under argmax
    prior = _fit(rare, validation_fraction=0.25)
    for clf in (argmax, prior):
        best = [row["epoch"] for row in clf.history if row["valid_hard_l1_best"]]
        assert best[-1] > 3, best  # a trained epoch, by prior matching or tie-break
    assert len(set(prior.history[:, "valid_hard_l1"])) > 5


def test_grid_search_picks_a_trained_model(rare):
    X, groups, table, _, _ = rare
    scorer = make_bag_scorer("hard_l1", props_table=table)
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
    proba = _fit(rare).predict_proba(X)
    early = _fit(rare, max_epochs=1).predict_proba(X)
    # argmax says "negative" everywhere for both: the same error
    assert hard_l1_error(groups, table, proba) == hard_l1_error(groups, table, early)
    assert hard_l1_error(groups, table, proba, decision="prior") < hard_l1_error(
        groups, table, early, decision="prior"
    )
    with pytest.raises(ValueError, match="decision must be"):
        hard_l1_error(groups, table, proba, decision="median")


def test_a_fixed_threshold_needs_two_classes(small_bags):
    X, bags, props, _ = small_bags
    with pytest.raises(ValueError, match="threshold=0.3 .* (there are|have) 3"):
        LLPClassifier(threshold=0.3, max_epochs=1, verbose=0).fit(X, bags, props)


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
