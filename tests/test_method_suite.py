"""Checks every registered training method passes, written once.

Like scikit-learn's ``parametrize_with_checks``: each check runs for every
name of :func:`~sklearn_llp.methods.available_methods`, and the tables below
must cover the registry, so a new method without its cases fails here. A
method's own maths (its loss against a hand computation) stays in its own
file (``test_losses.py``, ``test_methods.py``, ``test_easyllp.py``,
``test_llpfc.py``, ``test_noisy_proportions.py``); the answers every method
must give alike (same data in other forms, weights, seeds) are in
``test_conformance.py``.
"""

import copy
import re

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from sklearn_llp import LLPClassifier
from sklearn_llp.methods import (
    DLLP,
    BagLoss,
    _registry,
    available_methods,
    make_method,
    method_params,
    register_method,
)
from sklearn_llp.metrics import make_bag_scorer
from sklearn_llp.model_selection import BagKFold

#: Invalid ``method__*`` values of every method: (parameter, value). A
#: method without hyperparameters is given one it does not take.
BAD_PARAMETERS = {
    "dllp": [("eps", 2.0)],
    "vat": [("alpha", np.nan), ("alpha", -0.1), ("eps", -1.0), ("n_power", 0)],
    "pi": [("rampup", 2.0), ("noise_std", -1.0)],
    "rot": [("n_iter", 0), ("reg", 0.0), ("rot_alpha", 1.5)],
    "llpfc": [("regroup_every", v) for v in (0, -1, 1.5, "often")],
    "easyllp": [("loss", v) for v in ("abs", "Log", None, 1)],
    "noisy": [
        ("noise", "cauchy"),
        ("scale", -1.0),
        ("scale", "big"),
        ("weighting", "size"),
    ],
}
#: A grid of two valid values of one hyperparameter of every method.
GRIDS = {
    "dllp": {"lr": [1e-3, 1e-2]},
    "vat": {"method__alpha": [0.05, 0.2]},
    "pi": {"method__noise_std": [0.1, 0.3]},
    "rot": {"method__rot_alpha": [0.25, 0.75]},
    "llpfc": {"method__regroup_every": [1, None]},
    "easyllp": {"method__loss": ["log", "square"]},
    "noisy": {"method__scale": [0.0, 5.0]},
}


def _cases():
    return [
        pytest.param(method, name, value, id=f"{method}-{name}-{value!r}")
        for method, cases in BAD_PARAMETERS.items()
        for name, value in cases
    ]


def test_the_tables_cover_every_registered_method():
    assert set(BAD_PARAMETERS) == set(available_methods())
    assert set(GRIDS) == set(available_methods())


class NoTraining(Exception):
    pass


@pytest.mark.parametrize("method, name, value", _cases())
def test_bad_hyperparameters_name_the_parameter_before_training(
    small_bags, method, name, value, monkeypatch
):
    X, bags, props, _ = small_bags
    clf = LLPClassifier(method=method, verbose=0, **{f"method__{name}": value})

    def no_training(*args, **kwargs):
        raise NoTraining

    monkeypatch.setattr(LLPClassifier, "initialize", no_training)
    with pytest.raises((ValueError, TypeError), match=f"method__{name}"):
        clf.fit(X, bags, props)
    if name in method_params(method):  # the method object refuses it too
        with pytest.raises((ValueError, TypeError), match=f"method__{name}"):
            make_method(method, {name: value})


@pytest.mark.parametrize("method, name, value", _cases())
def test_a_method_object_with_a_bad_value_is_refused_by_fit(
    small_bags, method, name, value
):
    """``method=VAT(alpha=nan)``: the object is validated like ``method__*``."""
    if name not in method_params(method):
        pytest.skip(f"{method} takes no {name}")
    X, bags, props, _ = small_bags
    obj = type(make_method(method))(**{name: value})
    with pytest.raises((ValueError, TypeError), match=f"method__{name}"):
        LLPClassifier(method=obj, max_epochs=1, verbose=0).fit(X, bags, props)


@pytest.mark.parametrize("method", available_methods())
def test_hyperparameters_round_trip_get_params_and_clone(method):
    defaults = method_params(method)
    clf = LLPClassifier(method=method)
    params = clf.get_params()
    for name, value in defaults.items():
        assert params[f"method__{name}"] == value
    for name, values in GRIDS[method].items():
        changed = clone(clf.set_params(**{name: values[-1]}))
        assert changed.get_params()[name] == values[-1]
    assert make_method(method).get_params() == defaults


@pytest.mark.filterwarnings("ignore::sklearn_llp.exceptions.IdentifiabilityWarning")
@pytest.mark.filterwarnings("ignore::sklearn_llp.exceptions.NonRandomBagsWarning")
@pytest.mark.parametrize("method", available_methods())
def test_grid_search_with_the_bag_scorer_fits_the_chosen_method(small_bags, method):
    X, bags, props, _ = small_bags
    grid = GRIDS[method]
    clf = LLPClassifier(method=method, max_epochs=3, random_state=0, verbose=0)
    search = GridSearchCV(
        clf,
        grid,
        cv=BagKFold(2),
        scoring=make_bag_scorer("hard_l1", bags=bags, props=props),
        error_score="raise",
    ).fit(X, bags, props=props)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))
    best = search.best_estimator_
    assert type(best.method_) is type(make_method(method))
    for name, value in search.best_params_.items():
        if name.startswith("method__"):
            assert getattr(best.method_, name[len("method__") :]) == value
        else:
            assert best.get_params()[name] == value


# ---------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------
def test_unknown_method_names_list_the_known_ones(small_bags):
    X, bags, props, _ = small_bags
    known = re.escape(str(available_methods()))
    with pytest.raises(ValueError, match=f"'nope'.*{known}"):
        LLPClassifier(method="nope", verbose=0).fit(X, bags, props)
    with pytest.raises(ValueError, match=known):
        make_method("ROT")  # names are case-sensitive


def test_register_method_files_a_class_under_its_task(monkeypatch):
    monkeypatch.setattr(_registry, "_REGISTRIES", copy.deepcopy(_registry._REGISTRIES))

    class Halved(DLLP):
        pass

    class HalvedBagLoss(BagLoss):
        pass

    register_method("halved", Halved)
    register_method("halved_bag", HalvedBagLoss)
    assert "halved" in available_methods()
    assert "halved_bag" in available_methods("regression")
    assert type(make_method("halved", task="classification")) is Halved
    with pytest.raises(ValueError, match="taken by a regression method"):
        register_method("bag", Halved)
    with pytest.raises(ValueError, match="taken by a classification method"):
        register_method("vat", HalvedBagLoss)
    with pytest.raises(TypeError, match="subclass of LLPMethod"):
        register_method("plain", object)
