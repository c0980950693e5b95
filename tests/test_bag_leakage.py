"""Bag scorers warn (``BagLeakageWarning``) when a fold scores bags it trained on."""

import contextlib
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.model_selection import cross_val_score, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp.exceptions import BagLeakageWarning
from sklearn_llp.metrics import hard_l1_scorer, make_bag_scorer
from sklearn_llp.model_selection import BagKFold


def small():
    clf = LLPClassifier(module__hidden_sizes=(8,), max_epochs=2, verbose=0)
    return clf.set_params(random_state=0, device="cpu")


@contextlib.contextmanager
def quiet():
    """A context in which a BagLeakageWarning fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", BagLeakageWarning)
        yield


@pytest.mark.parametrize("routing", [False, True])
@pytest.mark.slow
def test_cv5_on_bag_ids_warns_naming_bagkfold_and_bagkfold_is_quiet(problem, routing):
    # (KFold, for both tasks: tests/test_conformance.py)
    X, bags, props, _ = problem
    table_scorer = make_bag_scorer("hard_l1", bags=bags, props=props)
    scorer = hard_l1_scorer if routing else table_scorer
    params = dict(scoring=scorer, params={"props": props})
    with sklearn.config_context(enable_metadata_routing=routing):
        with pytest.warns(BagLeakageWarning, match=r"cv=BagKFold\(5\)"):
            cross_val_score(small(), X, bags, cv=5, **params)
        with quiet():
            # whole training bags: not a leak, for a scorer that knows the
            # bags' sizes (a routed one cannot tell, and warns)
            kw = dict(return_train_score=not routing, error_score="raise", **params)
            results = cross_validate(small(), X, bags, cv=BagKFold(5), **kw)
    assert np.isfinite(results["test_score"]).all()
    assert routing or np.isfinite(results["train_score"]).all()


def test_a_pipeline_is_looked_into(problem):
    X, bags, props, _ = problem
    pipeline = make_pipeline(StandardScaler(), small())
    pipeline.fit(X[:30], bags[:30], llpclassifier__props=props[:30])
    assert set(pipeline[-1].train_bag_ids_) == {0, 1, 2, 3, 4}
    scorer = make_bag_scorer("hard_l1", bags=bags, props=props)
    with pytest.warns(BagLeakageWarning, match="1 of the 2 bags"):
        scorer(pipeline, X[27:36], bags[27:36])  # half of bag 4, bag 5
    with quiet():
        scorer(pipeline, X[:30], bags[:30])  # the whole training bags
        scorer(pipeline, X[30:], bags[30:])  # held-out bags


def test_a_model_fitted_on_labels_is_never_warned_about(problem):
    X, bags, props, y = problem
    clf = small().fit(X, y)
    assert clf.train_bag_ids_ is None
    with quiet():
        make_bag_scorer("hard_l1", bags=bags, props=props)(clf, X[:3], bags[:3])
