"""Input validation: every malformed input gets a clear error naming the argument.

The catalogue below lists malformed inputs a new user could plausibly pass,
one small function per input, registered with :func:`malformed` together
with where the input goes, what is wrong with it, the exception it must
raise and a regex its message must match -- naming the offending argument.
Each function is one case of ``test_malformed_input_gets_a_clear_error``.
An ``xfail`` reason marks an input the library does not yet refuse clearly;
such cases are strict xfails, so they fail (and the mark must go) once
fixed. ``docs/make_malformed_inputs_table.py`` renders the catalogue -- the
body of every function and the error it gets -- as
``docs/malformed_inputs.md``.

Malformed inputs that need more than one call, or whose check is more than
one error, are plain tests after the catalogue. What must *not* change with
how valid data is written down is in ``tests/test_equivalent_inputs.py``.
"""

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import torch
from sklearn.model_selection import cross_val_predict as sk_cross_val_predict
from skorch.callbacks import EpochScoring, ProgressBar

from sklearn_llp import LLPClassifier, LLPRegressor
from sklearn_llp.bags import (
    FeatureBagGenerator,
    KMeansBagGenerator,
    UniformBagGenerator,
    check_identifiability,
    expand_proportions,
    label_proportions,
)
from sklearn_llp.core import check_bags, check_fit_inputs
from sklearn_llp.linear import MeanMapClassifier
from sklearn_llp.metrics import (
    BagScorer,
    bag_errors,
    hard_l1_error,
    hard_l1_scorer,
    make_bag_scorer,
    soft_l1_error,
)
from sklearn_llp.model_selection import (
    BagKFold,
    BagShuffleSplit,
    cross_val_predict,
    subset_membership,
)
from sklearn_llp.plotting import plot_bag_calibration, plot_bag_sizes
from sklearn_llp.privacy import (
    dp_bag_means,
    dp_noise_scale,
    dp_proportions,
    project_to_simplex,
)


# ==========================================================================
# The catalogue and how a case is registered.
# ==========================================================================
@dataclass(frozen=True)
class Malformed:
    """One malformed input: ``call()`` must raise ``exception`` matching ``match``."""

    where: str
    description: str
    call: Callable[[], object]
    exception: type[Exception]
    match: str
    xfail: str | None = None

    @property
    def id(self):
        return re.sub(r"[^a-z0-9]+", "-", f"{self.where} {self.description}".lower())


CATALOGUE: list[Malformed] = []


def malformed(where, description, exception, match, *, xfail=None):
    """Register the decorated function as a case of the catalogue.

    Parameters
    ----------
    where : str
        The API the input goes to (``"fit"``, ``"metrics"``, ...): the group
        of the case in ``docs/malformed_inputs.md``.
    description : str
        What is wrong with the input. With ``where`` it makes the test id,
        which must be unique.
    exception : type
        ``ValueError``, ``TypeError`` or a subclass of one: what the call
        must raise.
    match : str
        A regex the message must match (``re.search``, dot matches newline).
    xfail : str, optional
        Why the library does not refuse this input clearly yet; the case is
        then a strict xfail.

    Raises
    ------
    ValueError
        At import, for a duplicate id or a regex that does not compile.
    TypeError
        At import, for an exception that is neither a ValueError nor a
        TypeError.
    """
    if not issubclass(exception, (ValueError, TypeError)):
        raise TypeError(f"{exception.__name__} is not a ValueError or TypeError")
    try:
        re.compile(match)
    except re.error as exc:
        raise ValueError(f"match={match!r} is not a regex: {exc}") from exc

    def register(call):
        case = Malformed(where, description, call, exception, match, xfail)
        if any(other.id == case.id for other in CATALOGUE):
            raise ValueError(f"duplicate catalogue id {case.id!r}")
        CATALOGUE.append(case)
        return call

    return register


# The data every case starts from: 4 bags of 2 rows, 2 classes.
_rng = np.random.RandomState(0)
X = _rng.normal(size=(8, 3))
Xdf = pd.DataFrame(X, columns=["a", "b", "c"])
bags = np.array([0, 0, 1, 1, 2, 2, 3, 3])
props = np.array(
    [[0.5, 0.5], [0.5, 0.5], [1, 0], [1, 0], [0, 1], [0, 1], [0.5, 0.5], [0.5, 0.5]]
)
table = pd.DataFrame(props[::2], index=[0, 1, 2, 3], columns=["no", "yes"])
lists = [np.array([0, 1, 2]), np.array([2, 3, 4]), np.array([5, 6, 7])]
per_bag = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
proba = np.tile([0.7, 0.3], (8, 1))
labels = np.array([0, 1, 0, 0, 1, 1, 0, 1])  # class labels behind props


def LLP(**params):
    """A tiny classifier; malformed input must fail before any training."""
    defaults = dict(module__hidden_sizes=(4,), max_epochs=1, verbose=0, random_state=0)
    return LLPClassifier(**{**defaults, **params})


@functools.cache
def fitted():
    return LLP().fit(X, bags, props)


@functools.cache
def fitted_df():
    return LLP().fit(Xdf, bags, props)


# fit: X --------------------------------------------------------------------
@malformed("fit", "X with NaN", ValueError, r"Input X contains NaN")
def _():
    LLP().fit(np.where(X > 1, np.nan, X), bags, props)


@malformed("fit", "X with infinity", ValueError, r"Input X contains infinity")
def _():
    LLP().fit(np.where(X > 1, np.inf, X), bags, props)


@malformed(
    "fit",
    "X DataFrame with a string column",
    ValueError,
    r"could not convert string to float",
)
def _():
    LLP().fit(pd.DataFrame({"a": list("xyxyxyxy"), "b": range(8)}), bags, props)


@malformed(
    "fit",
    "X of strings (categorical, not encoded)",
    ValueError,
    r"\bX\b.*could not convert string to float",
)
def _():
    LLP().fit(np.full((8, 3), "a"), bags, props)


@malformed("fit", "X 1-D", ValueError, r"\bX\b.*Expected 2D array")
def _():
    LLP().fit(X[:, 0], bags, props)


@malformed(
    "fit", "X empty (0 rows), bags and props empty", ValueError, r"\bX\b.*0 sample"
)
def _():
    LLP().fit(np.zeros((0, 3)), [], np.zeros((0, 2)))


@malformed("fit", "3-D X with the default MLP", ValueError, r"default MLP takes 2-D X")
def _():
    LLP().fit(np.zeros((8, 3, 2)), bags, props)


@malformed(
    "fit",
    "X DataFrame with a datetime column",
    TypeError,
    r"\bX\b",
)
def _():
    LLP().fit(Xdf.assign(a=pd.date_range("2020", periods=8)), bags, props)


# fit: bags -----------------------------------------------------------------
@malformed(
    "fit", "bags shorter than X", ValueError, r"bags has 7 entries but X has 8 rows"
)
def _():
    LLP().fit(X, bags[:7], props)


@malformed("fit", "bags 2-D", ValueError, r"bags must be 1-D")
def _():
    LLP().fit(X, bags.reshape(4, 2), props)


@malformed("fit", "bags with NaN", ValueError, r"bags contains NaN")
def _():
    LLP().fit(X, np.where(bags == 3, np.nan, bags), props)


@malformed("fit", "bags with None", ValueError, r"bags contains missing ids")
def _():
    LLP().fit(
        X, np.array(["a", "a", "b", "b", None, None, "c", "c"], dtype=object), props
    )


@malformed(
    "fit", "bags of non-integer floats", ValueError, r"bags holds non-integer floats"
)
def _():
    LLP().fit(X, bags + 0.5, props)


@malformed(
    "fit",
    "bags of mixed ints and strings (object array)",
    TypeError,
    r"bags mixes id types",
)
def _():
    LLP().fit(X, np.array([0, 0, 1, 1, "b", "b", "c", "c"], dtype=object), props)


@malformed(
    "fit", "bags as a Python list mixing 0 and '0'", TypeError, r"bags mixes id types"
)
def _():
    LLP().fit(
        X,
        [0, 0, "0", "0", 1, 1, 2, 2],
        np.array([[0.5, 0.5]] * 4 + [[1, 0]] * 2 + [[0, 1]] * 2),
    )


@malformed("fit", "bags=None with props given", TypeError, r"bags is None")
def _():
    LLP().fit(X, None, props)


@malformed("fit", "no bags and no props", ValueError, r"requires y to be passed")
def _():
    LLP().fit(X)


@malformed(
    "fit", "a single bag", ValueError, r"bags holds 1 bag\(s\); LLP needs at least 2"
)
def _():
    LLP().fit(X, np.zeros(8), np.tile([0.5, 0.5], (8, 1)))


# fit: props ----------------------------------------------------------------
@malformed(
    "fit",
    "props=None and bag ids that are one class (supervised)",
    ValueError,
    r"y holds a single class",
)
def _():
    LLP().fit(X, np.zeros(8))


@malformed("fit", "props shorter than X", ValueError, r"props has 7 rows but X has 8")
def _():
    LLP().fit(X, bags, props[:7])


@malformed("fit", "props with NaN", ValueError, r"props contains NaN or infinite")
def _():
    LLP().fit(X, bags, np.where(props == 1, np.nan, props))


@malformed("fit", "props with infinity", ValueError, r"props contains NaN or infinite")
def _():
    LLP().fit(X, bags, np.where(props == 1, np.inf, props))


@malformed("fit", "props negative", ValueError, r"props contains negative")
def _():
    LLP().fit(X, bags, props - 0.25)


@malformed(
    "fit",
    "props rows not summing to 1",
    ValueError,
    r"props rows must sum to 1 \(tolerance 0.01\)",
)
def _():
    LLP().fit(X, bags, props * 0.9)


@malformed("fit", "props as percentages", ValueError, r"props rows must sum to 1")
def _():
    LLP().fit(X, bags, props * 100)


@malformed("fit", "positive fraction above 1", ValueError, r"props contains negative")
def _():
    LLP().fit(X, bags, np.full(8, 1.5))


@malformed("fit", "props 3-D", ValueError, r"props must be 1-D or 2-D")
def _():
    LLP().fit(X, bags, props[:, :, None])


@malformed("fit", "props as a string", ValueError, r"props must be 1-D or 2-D")
def _():
    LLP().fit(X, bags, "0.5")


@malformed("fit", "props of non-numeric strings", TypeError, r"props must hold numbers")
def _():
    LLP().fit(X, bags, np.full((8, 2), "x"))


@malformed("fit", "props ragged list", TypeError, r"props must hold numbers")
def _():
    LLP().fit(X, bags, [[0.5, 0.5]] * 7 + [[1.0]])


@malformed(
    "fit", "props with one class column", ValueError, r"props has 1 class column"
)
def _():
    LLP().fit(X, bags, np.ones((8, 1)))


@malformed(
    "fit",
    "props that differ within a bag",
    ValueError,
    r"props differ between rows of the same bag",
)
def _():
    LLP().fit(X, bags, np.vstack([props[:1], [[0.2, 0.8]], props[2:]]))


@malformed(
    "fit",
    "props one row per bag as a plain array",
    ValueError,
    r"props has 4 rows but X has 8.*per-bag table",
)
def _():
    LLP().fit(X, bags, props[::2])


@malformed(
    "fit",
    "per-bag table missing a bag",
    ValueError,
    r"props \(a per-bag table\) has no row for 1 bag id\(s\).*\[3\]",
)
def _():
    LLP().fit(X, bags, table.iloc[:3])


@malformed(
    "fit",
    "per-bag table with a duplicated id",
    ValueError,
    r"props \(a per-bag table\) repeats a bag id",
)
def _():
    LLP().fit(X, bags, pd.concat([table, table.iloc[[3]]]))


@malformed(
    "fit",
    "per-bag table keyed by strings, bags are ints",
    ValueError,
    r"props \(a per-bag table\) has no row for 4 bag",
)
def _():
    LLP().fit(X, bags, {str(b): [0.5, 0.5] for b in range(4)})


@malformed(
    "fit",
    "per-bag dict of vectors of different lengths",
    ValueError,
    r"props dict must map every bag id",
)
def _():
    LLP().fit(X, bags, {0: [0.5, 0.5], 1: [1, 0], 2: [0, 1], 3: [1, 0, 0]})


@malformed(
    "fit",
    "classes param not matching the table columns",
    ValueError,
    r"props columns \['no', 'yes'\] do not match classes",
)
def _():
    LLP(classes=["x", "y"]).fit(X, bags, table)


@malformed(
    "fit",
    "classes param of the wrong length",
    ValueError,
    r"props has 2 classes .* classes has 3",
)
def _():
    LLP(classes=["a", "b", "c"]).fit(X, bags, props)


@malformed(
    "fit",
    "classes param with a duplicated label",
    ValueError,
    r"classes has duplicate labels",
)
def _():
    LLP(classes=["a", "a"]).fit(X, bags, props)


# fit: overlapping bags -----------------------------------------------------
@malformed(
    "fit",
    "index lists with an out-of-range row",
    ValueError,
    r"bags holds row indices outside \[0, 8\)",
)
def _():
    LLP().fit(X, [np.array([0, 1]), np.array([7, 8])], per_bag[:2])


@malformed(
    "fit",
    "index lists with a negative row",
    ValueError,
    r"bags holds row indices outside",
)
def _():
    LLP().fit(X, [np.array([-1, 1]), np.array([2, 3])], per_bag[:2])


@malformed("fit", "index lists with an empty bag", ValueError, r"bags has 1 empty bag")
def _():
    LLP().fit(X, [np.array([0, 1]), np.array([], dtype=int)], per_bag[:2])


@malformed(
    "fit",
    "index lists of float indices",
    TypeError,
    r"bags\[1\] must be a 1-D array of integer row indices",
)
def _():
    LLP().fit(X, [np.array([0, 1]), np.array([2.0, 3.5])], per_bag[:2])


@malformed(
    "fit",
    "index lists of 2-D arrays",
    TypeError,
    r"bags\[0\] must be a 1-D array of integer row indices",
)
def _():
    LLP().fit(X, [np.array([[0, 1]]), np.array([2, 3])], per_bag[:2])


@malformed(
    "fit",
    "index lists with sample-aligned props",
    ValueError,
    r"props must be \(n_bags, n_classes\) = \(3, n_classes\)",
)
def _():
    LLP().fit(X, lists, props)


@malformed(
    "fit",
    "membership matrix of the wrong shape",
    ValueError,
    r"bags \(a membership matrix\) has 6 rows but X has 8",
)
def _():
    LLP().fit(X, sp.eye(6, 3, format="csr"), per_bag)


@malformed(
    "fit", "membership matrix with an empty column", ValueError, r"bags has 1 empty bag"
)
def _():
    LLP().fit(X, sp.csr_matrix(np.eye(8, 4)[:, [0, 1, 2]] * [1, 1, 0]), per_bag)


# fit: parameters -----------------------------------------------------------
@malformed(
    "fit",
    "validation_fraction with all bags connected",
    ValueError,
    r"validation_fraction=0.5: BagShuffleSplit needs at least 2 bags .*got 1",
)
def _():
    LLP(validation_fraction=0.5).fit(X, [np.arange(5), np.arange(4, 8)], per_bag[:2])


@malformed("fit", "negative max_epochs", ValueError, r"'max_epochs' parameter")
def _():
    LLP(max_epochs=-1).fit(X, bags, props)


@malformed("fit", "max_bag_size 0", ValueError, r"'max_bag_size' parameter")
def _():
    LLP(max_bag_size=0).fit(X, bags, props)


@malformed("fit", "a negative method__eps", ValueError, r"'method__eps' parameter")
def _():
    LLP(method__eps=-1.0).fit(X, bags, props)


@malformed(
    "fit",
    "a module with the wrong output size",
    ValueError,
    r"module returned a tensor of shape \(\d+, 5\).*\(n_rows, 2\)",
)
def _():
    LLPClassifier(module=torch.nn.Linear(3, 5), max_epochs=1, verbose=0).fit(
        X, bags, props
    )


@malformed(
    "fit", "unknown method", ValueError, r"method='vta' is not a known method.*'vat'"
)
def _():
    LLP(method="vta").fit(X, bags, props)


@malformed(
    "partial_fit",
    "classes that differ from classes_",
    ValueError,
    r"classes must match classes_",
)
def _():
    fitted().partial_fit(X, bags, props, classes=[0, 1, 2])


@malformed(
    "partial_fit",
    "props of another number of classes",
    ValueError,
    r"props has 3 classes .* classes has 2",
)
def _():
    fitted().partial_fit(X, bags, np.column_stack([props, np.zeros(8)]))


@malformed(
    "fit",
    "device naming a GPU that is not there",
    ValueError,
    r"device='cuda:9'",
)
def _():
    LLP(device="cuda:9").fit(X, bags, props)


@malformed(
    "fit",
    "device that is not a torch device",
    ValueError,
    r"device='gpu'",
)
def _():
    LLP(device="gpu").fit(X, bags, props)


class OneValuePerRow(torch.nn.Module):
    """A module with one output per row instead of one per class."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 1)

    def forward(self, X):
        return self.linear(X)[:, 0]


class TupleOutput(torch.nn.Module):
    """A module that returns a tuple."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 2)

    def forward(self, X):
        return self.linear(X), X


@malformed(
    "fit",
    "a module returning one value per row",
    ValueError,
    r"module returned a tensor of shape \(\d+,\).*\(n_rows, 2\)",
)
def _():
    LLPClassifier(module=OneValuePerRow, max_epochs=1, verbose=0).fit(X, bags, props)


@malformed("fit", "a module returning a tuple", TypeError, r"module returned a tuple")
def _():
    LLPClassifier(module=TupleOutput, max_epochs=1, verbose=0).fit(X, bags, props)


# fit: silent wrong results (#13) -------------------------------------------
@malformed(
    "fit",
    "bags with the reserved id -1 (rows in no bag)",
    ValueError,
    r"bags holds the id -1, which marks rows in no bag",
)
def _():
    LLP().fit(X, np.array([0, 0, 1, 1, 2, 2, -1, -1]), props)


@malformed(
    "fit",
    "bags with a missing timestamp (NaT)",
    ValueError,
    r"bags contains missing ids \(NaT\)",
)
def _():
    LLP().fit(X, pd.to_datetime(["2020"] * 4 + ["2021"] * 3 + [None]), props)


@malformed("fit", "bags of frozensets", TypeError, r"bags holds ids of type frozenset")
def _():
    LLP().fit(X, pd.Series([frozenset({b}) for b in bags]), props)


@malformed(
    "fit",
    "composite keys of different lengths",
    TypeError,
    r"bags mixes composite keys \(tuples\) of different lengths",
)
def _():
    LLP().fit(X, [(0, "a")] * 4 + [(1,)] * 4, props)


@malformed(
    "fit",
    "sample-aligned props DataFrame not subset with X",
    ValueError,
    r"props has 8 rows but X has 6",
)
def _():
    LLP().fit(X[:6], bags[:6], pd.DataFrame(props))


@malformed(
    "fit",
    "props with duplicate class columns",
    ValueError,
    r"props has duplicate class columns",
)
def _():
    LLP().fit(X, bags, pd.DataFrame(props, columns=["yes", "yes"]))


@malformed(
    "fit",
    "a method hyperparameter the method does not take",
    ValueError,
    r"\['method__alpha'\] are not hyperparameters of DLLP",
)
def _():
    LLP(method="dllp", method__alpha=0.1).fit(X, bags, props)


@malformed(
    "fit",
    "a method hyperparameter out of range",
    ValueError,
    r"'method__alpha' parameter of VAT",
)
def _():
    LLP(method="vat", method__alpha=float("nan")).fit(X, bags, props)


@malformed(
    "fit",
    "a fixed threshold with three classes",
    ValueError,
    r"threshold=0.3 is a probability threshold of the second class.*there are 3",
)
def _():
    LLP(threshold=0.3).fit(X, bags, np.tile([0.2, 0.3, 0.5], (8, 1)))


@malformed(
    "fit",
    "sample_weight zero everywhere",
    ValueError,
    r"sample_weight is zero for every row",
)
def _():
    LLP().fit(X, bags, props, sample_weight=np.zeros(8))


@malformed(
    "fit",
    "EpochScoring callback (scores against labels)",
    TypeError,
    r"callbacks: EpochScoring .* validation_fraction",
)
def _():
    LLP(callbacks=[EpochScoring("accuracy")]).fit(X, bags, props)


@malformed(
    "fit",
    "ProgressBar counting batches of rows",
    TypeError,
    r"ProgressBar\(batches_per_epoch='auto'\).*ProgressBar\('count'\)",
)
def _():
    LLP(callbacks=[ProgressBar()]).fit(X, bags, props)


@malformed(
    "fit",
    "scikit-learn's cross_val_predict with predict_proba",
    TypeError,
    r"sklearn_llp.model_selection.cross_val_predict",
)
def _():
    sk_cross_val_predict(
        LLP(), X, bags, cv=BagKFold(2), params={"props": props}, method="predict_proba"
    )


@malformed(
    "fit",
    "initialize() of a model never fitted, without sizes",
    ValueError,
    r"module__n_features=<number of columns of X>",
)
def _():
    LLP().initialize()


# fit: sample weights, held-out bags, method requirements -------------------
@malformed("fit", "sample_weight negative", ValueError, r"sample_weight .*non-negative")
def _():
    LLP().fit(X, bags, props, sample_weight=-np.ones(8))


@malformed("fit", "sample_weight with NaN", ValueError, r"sample_weight .*finite")
def _():
    LLP().fit(X, bags, props, sample_weight=np.full(8, np.nan))


@malformed(
    "fit",
    "sample_weight of the wrong length",
    ValueError,
    r"sample_weight has shape \(7,\) but X has 8 rows",
)
def _():
    LLP().fit(X, bags, props, sample_weight=np.ones(7))


@malformed(
    "fit",
    "validation_fraction that leaves one training bag",
    ValueError,
    r"validation_fraction=0.1.*train on",
)
def _():
    LLP(validation_fraction=0.1).fit(X[:4], bags[:4], props[:4])


@malformed(
    "fit",
    "early_stopping=True with too few bags to hold out",
    ValueError,
    r"validation_fraction=0.1 \(early_stopping",
)
def _():
    LLP(early_stopping=True).fit(X[:4], bags[:4], props[:4])


@malformed(
    "fit",
    "method='llpfc' with overlapping bags",
    ValueError,
    r"llpfc.*disjoint bags",
)
def _():
    LLP(method="llpfc").fit(X, lists, per_bag)


@malformed(
    "fit",
    "method='llpfc' with fewer bags than classes",
    ValueError,
    r"at least 3 training bags; got 2",
)
def _():
    LLP(method="llpfc").fit(X, bags // 2, np.tile([0.5, 0.3, 0.2], (8, 1)))


@malformed(
    "fit",
    "a regression method for the classifier",
    ValueError,
    r"regression method, not one for LLPClassifier",
)
def _():
    LLP(method="bag").fit(X, labels)


# predict -------------------------------------------------------------------
@malformed(
    "predict",
    "wrong number of features",
    ValueError,
    r"X has 2 features, but LLPClassifier is expecting 3",
)
def _():
    fitted().predict(X[:, :2])


@malformed(
    "predict",
    "DataFrame with an unseen column",
    ValueError,
    r"feature names should match.*unseen at fit time:\n- d",
)
def _():
    fitted_df().predict(Xdf.rename(columns={"c": "d"}))


@malformed("predict", "X with NaN", ValueError, r"Input X contains NaN")
def _():
    fitted().predict(np.full((2, 3), np.nan))


@malformed("predict", "one row as a 1-D array", ValueError, r"\bX\b.*Expected 2D array")
def _():
    fitted().predict(X[0])


@malformed(
    "predict",
    "3-D X for a model fitted on 2-D X",
    ValueError,
    r"X has rows of shape \(3, 2\), but the model was fitted on rows of shape \(3,\)",
)
def _():
    fitted().predict(np.zeros((2, 3, 2)))


@malformed("predict", "before fit", ValueError, r"not fitted yet")
def _():
    LLP().predict(X)


# score ---------------------------------------------------------------------
@malformed("score", "X None", TypeError, r"^X: Expected sequence or array-like")
def _():
    fitted().score(None, bags, props)


@malformed(
    "score",
    "bags shorter than X",
    ValueError,
    r"bags has 7 entries but (X|y_proba) has 8 rows",
)
def _():
    fitted().score(X, bags[:7], props)


@malformed(
    "score", "props of another number of classes", ValueError, r"props has 3 classes"
)
def _():
    fitted().score(X, bags, np.column_stack([props, np.zeros(8)]))


@malformed(
    "score",
    "no props for a model fitted on bags",
    ValueError,
    r"score\(X, y\) got no props, but the model was fitted on bags",
)
def _():
    fitted().score(X, bags)


@malformed(
    "score",
    "sample_weight of the wrong length",
    ValueError,
    r"sample_weight has shape \(7,\) but X has 8 rows",
)
def _():
    fitted().score(X, bags, props, sample_weight=np.ones(7))


# check_bags ----------------------------------------------------------------
@malformed("check_bags", "bags=None", TypeError, r"bags is None")
def _():
    check_bags(None, np.ones((4, 2)) / 2, n_samples=4)


@malformed(
    "check_bags",
    "one props row per sample indexed by shuffled bag ids",
    ValueError,
    r"props has one row per sample .* reads both as sample-aligned",
)
def _():
    ambiguous = pd.DataFrame([[1, 0], [0, 1], [0.0, 1.0]], index=["c", "a", "b"])
    check_bags(["a", "b", "c"], ambiguous, n_samples=3)


@malformed(
    "check_bags",
    "bags with a missing timestamp (NaT)",
    ValueError,
    r"bags contains missing ids \(NaT\)",
)
def _():
    check_bags(pd.to_datetime(["2020", "2020", None, "2021"]), n_samples=4)


@malformed(
    "check_bags", "bags of frozensets", TypeError, r"bags holds ids of type frozenset"
)
def _():
    check_bags(
        pd.Series([frozenset({1}), frozenset({1}), frozenset({2}), frozenset({2})]),
        n_samples=4,
    )


@malformed(
    "check_bags", "bags with the reserved id -1", ValueError, r"bags holds the id -1"
)
def _():
    check_bags(np.array([0, 0, -1, -1]), n_samples=4)


@malformed(
    "check_bags", "composite keys mixed with a single id", TypeError, r"composite keys"
)
def _():
    check_bags([("a", 1), ("a", 1), ("b", 1), "b"], n_samples=4)


@malformed(
    "check_bags",
    "props with duplicate class columns",
    ValueError,
    r"props has duplicate class columns",
)
def _():
    check_bags([0, 0, 1, 1], pd.DataFrame([[0.5, 0.5]] * 4, columns=["yes", "yes"]))


@malformed(
    "check_bags", "index lists with an empty bag", ValueError, r"bags has 1 empty bag"
)
def _():
    check_bags([np.array([0, 1]), np.array([], dtype=int)], np.eye(2), n_samples=4)


@malformed(
    "check_bags",
    "index lists with an out-of-range row",
    ValueError,
    r"bags holds row indices outside \[0, 4\)",
)
def _():
    check_bags([np.array([0, 9])], [[1.0, 0.0]], n_samples=4)


@malformed(
    "check_bags",
    "index lists with fewer props rows than bags",
    ValueError,
    r"props must be \(n_bags, n_classes\)",
)
def _():
    check_bags([np.array([0, 1]), np.array([2, 3])], [[1.0, 0.0]], n_samples=4)


@malformed(
    "check_bags", "index lists of float indices", TypeError, r"integer row indices"
)
def _():
    check_bags([np.array([0.5, 1]), np.array([2, 3])], np.eye(2), n_samples=4)


@malformed(
    "check_bags",
    "membership matrix of the wrong shape",
    ValueError,
    r"bags \(a membership matrix\) has 3 rows",
)
def _():
    check_bags(sp.eye(3, 2, format="csr"), np.eye(2), n_samples=4)


@malformed(
    "check_bags",
    "membership matrix with an empty column",
    ValueError,
    r"1 empty bag.*subset_membership",
)
def _():
    check_bags(sp.csr_matrix(np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0]])))


# check_fit_inputs ----------------------------------------------------------
@malformed("check_fit_inputs", "y=None", ValueError, r"requires y to be passed")
def _():
    check_fit_inputs(None, n_samples=4)


@malformed(
    "check_fit_inputs",
    "labels of a single class",
    ValueError,
    r"y holds a single class",
)
def _():
    check_fit_inputs(np.zeros(4), n_samples=4)


@malformed(
    "check_fit_inputs",
    "sample_weight leaving one class",
    ValueError,
    r"sample_weight leaves rows of a single class",
)
def _():
    check_fit_inputs([0, 0, 1, 1], n_samples=4, sample_weight=[1.0, 1.0, 0.0, 0.0])


@malformed("check_fit_inputs", "a single bag", ValueError, r"LLP needs at least 2")
def _():
    check_fit_inputs([0, 0, 0, 0], np.ones((4, 2)) / 2, n_samples=4)


# identifiability -----------------------------------------------------------
@malformed("identifiability", "props=None", TypeError, r"props is None")
def _():
    check_identifiability([0, 0, 1, 1], None)


@malformed(
    "identifiability",
    "props shorter than bags",
    ValueError,
    r"props has 3 rows but X has 4",
)
def _():
    check_identifiability([0, 0, 1, 1], [0.5, 0.5, 0.2])


@malformed("identifiability", "props negative", ValueError, r"props contains negative")
def _():
    check_identifiability([0, 0, 1, 1], [0.5, 0.5, -0.2, -0.2])


@malformed(
    "identifiability",
    "props that differ within a bag",
    ValueError,
    r"props differ between rows of the same bag",
)
def _():
    check_identifiability([0, 0, 1, 1], [0.5, 0.4, 0.2, 0.2])


@malformed(
    "identifiability",
    "X of another length",
    ValueError,
    r"bags has 4 entries but X has 3 rows",
)
def _():
    check_identifiability([0, 0, 1, 1], [0.5, 0.5, 0.2, 0.2], np.zeros((3, 2)))


@malformed(
    "identifiability", "bags with None", ValueError, r"bags contains missing ids"
)
def _():
    check_identifiability([0, 0, 1, None], [0.5, 0.5, 0.2, 0.2])


@malformed(
    "identifiability", "per-bag props missing a bag", ValueError, r"no row for 1 bag"
)
def _():
    check_identifiability([0, 0, 1, 1], {0: 0.5})


@malformed(
    "identifiability",
    "negative sample_weight",
    ValueError,
    r"sample_weight must be finite and non-negative",
)
def _():
    check_identifiability(
        [0, 0, 1, 1], [0.5, 0.5, 0.2, 0.2], sample_weight=[1, 1, -1, 1]
    )


# metrics -------------------------------------------------------------------
@malformed(
    "metrics",
    "y_proba with the wrong number of rows",
    ValueError,
    r"bags has 8 entries but y_proba has 7 rows",
)
def _():
    hard_l1_error(bags, props, proba[:7])


@malformed(
    "metrics",
    "y_proba with the wrong number of columns",
    ValueError,
    r"y_proba has 3 columns but props has 2 classes",
)
def _():
    hard_l1_error(bags, props, np.full((8, 3), 1 / 3))


@malformed(
    "metrics",
    "decision scores instead of probabilities",
    ValueError,
    r"y_proba contains negative values",
)
def _():
    soft_l1_error(bags, props, proba - 0.5)


@malformed("metrics", "y_proba of strings", TypeError, r"y_proba must hold numbers")
def _():
    hard_l1_error(bags, props, np.full((8, 2), "x"))


@malformed("metrics", "props shorter than bags", ValueError, r"props has 7 rows")
def _():
    hard_l1_error(bags, props[:7], proba)


@malformed("metrics", "unknown metric name", ValueError, r"metrics must be among")
def _():
    bag_errors(bags, props, proba, metrics=["accuracy"])


@malformed(
    "metrics",
    "index lists with an out-of-range row",
    ValueError,
    r"bags holds row indices outside \[0, 8\)",
)
def _():
    hard_l1_error([np.array([0, 9])], [[1.0, 0.0]], proba)


@malformed(
    "metrics",
    "membership matrix of the wrong shape",
    ValueError,
    r"bags \(a membership matrix\) has 6 rows but y_proba has 8",
)
def _():
    hard_l1_error(sp.eye(6, 3, format="csr"), per_bag, proba)


@malformed(
    "metrics",
    "y_proba rows not summing to 1",
    ValueError,
    r"y_proba rows must sum to 1",
)
def _():
    soft_l1_error(bags, props, proba * 2)


@malformed("metrics", "y_proba with NaN", ValueError, r"y_proba contains NaN")
def _():
    soft_l1_error(bags, props, np.full((8, 2), np.nan))


@malformed(
    "metrics",
    "per-bag props missing a bag",
    ValueError,
    r"props \(a per-bag table\) has no row for 3 bag",
)
def _():
    soft_l1_error(bags, {0: 0.5}, proba)


@malformed("metrics", "props=None", TypeError, r"props is None")
def _():
    soft_l1_error(bags, None, proba)


@malformed("metrics", "bags mixing 0 and '0'", TypeError, r"bags mixes id types")
def _():
    hard_l1_error([0, 0, "0", "0"], proba[:4], proba[:4])


# scorers -------------------------------------------------------------------
@malformed("scorers", "unknown metric", ValueError, r"metric must be one of")
def _():
    BagScorer("accuracy")


@malformed(
    "scorers",
    "table as a sample-aligned array",
    TypeError,
    r"table must be a per-bag table",
)
def _():
    make_bag_scorer("hard_l1", table=props)


@malformed("scorers", "bags without props", ValueError, r"Pass both bags and props")
def _():
    make_bag_scorer("hard_l1", bags=bags)


@malformed(
    "scorers", "called without y", ValueError, r"needs y, the bag id of every row of X"
)
def _():
    hard_l1_scorer(fitted(), X)


@malformed(
    "scorers",
    "called without props (routing off)",
    ValueError,
    r"received no label proportions",
)
def _():
    hard_l1_scorer(fitted(), X, bags)


# splitters -----------------------------------------------------------------
@malformed(
    "splitters",
    "more folds than bags",
    ValueError,
    r"BagKFold needs at least 5 bags .* in y form 4",
)
def _():
    next(BagKFold(5).split(X, bags))


@malformed(
    "splitters", "no bags given", ValueError, r"needs the bag id of every sample"
)
def _():
    next(BagKFold(2).split(X))


@malformed(
    "splitters",
    "groups shorter than X",
    ValueError,
    r"groups has 7 entries but X has 8 rows",
)
def _():
    next(BagKFold(2).split(X, groups=bags[:7]))


@malformed(
    "splitters",
    "2-D groups",
    ValueError,
    r"groups must be 1-D with one bag id per row of X; got shape \(8, 8\)",
)
def _():
    next(BagShuffleSplit(2).split(X, groups=np.eye(8)))


@malformed(
    "splitters",
    "overlapping bags all connected, 2 folds",
    ValueError,
    r"bags in groups form 1:",
)
def _():
    next(BagKFold(2).split(X, groups=[np.arange(5), np.arange(4, 8)]))


@malformed(
    "splitters",
    "membership matrix of the wrong shape",
    ValueError,
    r"groups \(a membership matrix\) has 6 rows but X has 8",
)
def _():
    next(BagKFold(2).split(X, groups=sp.eye(6, 3, format="csr")))


@malformed(
    "splitters",
    "subset_membership of bag ids",
    TypeError,
    r"bags must be overlapping bags",
)
def _():
    subset_membership(bags, np.arange(4))


@malformed(
    "splitters",
    "subset_membership with repeated rows",
    ValueError,
    r"rows holds repeated indices",
)
def _():
    subset_membership(lists, np.array([0, 0, 1]))


@malformed(
    "splitters",
    "BagShuffleSplit without bags",
    ValueError,
    r"needs the bag id of every sample",
)
def _():
    next(BagShuffleSplit(2).split(X))


@malformed(
    "splitters",
    "BagKFold with 2-D y",
    ValueError,
    r"y must be 1-D with one bag id per row",
)
def _():
    next(BagKFold(2).split(X, np.zeros((8, 2))))


@malformed(
    "splitters",
    "BagShuffleSplit with 2-D y",
    ValueError,
    r"y must be 1-D with one bag id per row",
)
def _():
    next(BagShuffleSplit(2).split(X, np.zeros((8, 2))))


@malformed(
    "splitters",
    "test_size=0.0",
    ValueError,
    r"test_size must be a float in \(0, 1\).*got 0.0",
)
def _():
    next(BagShuffleSplit(1, test_size=0.0).split(X, bags))


@malformed(
    "splitters",
    "test_size=1.0",
    ValueError,
    r"test_size must be a float in \(0, 1\).*got 1.0",
)
def _():
    next(BagShuffleSplit(1, test_size=1.0).split(X, bags))


@malformed(
    "splitters",
    "train_size=1.5",
    ValueError,
    r"train_size must be a float in \(0, 1\).*got 1.5",
)
def _():
    next(BagShuffleSplit(1, test_size=None, train_size=1.5).split(X, bags))


@malformed(
    "splitters",
    "test_size=0 (an int)",
    ValueError,
    r"test_size=0 bags must be at least 1",
)
def _():
    next(BagShuffleSplit(1, test_size=0).split(X, bags))


@malformed(
    "splitters",
    "test_size larger than the number of bags",
    ValueError,
    r"test_size=10 bags must be at least 1 and fewer than the 4 bags",
)
def _():
    next(BagShuffleSplit(1, test_size=10).split(X, bags))


@malformed(
    "splitters",
    "test_size=True",
    ValueError,
    r"test_size must be a float in \(0, 1\).*got True",
)
def _():
    next(BagShuffleSplit(1, test_size=True).split(X, bags))


@malformed("splitters", "min_train_bags=0", ValueError, r"min_train_bags")
def _():
    next(BagShuffleSplit(1).split_bags(check_bags(bags), min_train_bags=0))


@malformed("splitters", "min_train_bags=-1", ValueError, r"min_train_bags")
def _():
    next(BagShuffleSplit(1).split_bags(check_bags(bags), min_train_bags=-1))


@malformed("splitters", "min_train_bags=1.5", ValueError, r"min_train_bags")
def _():
    next(BagShuffleSplit(1).split_bags(check_bags(bags), min_train_bags=1.5))


@malformed("splitters", "min_train_bags=True", ValueError, r"min_train_bags")
def _():
    next(BagShuffleSplit(1).split_bags(check_bags(bags), min_train_bags=True))


@malformed("splitters", "min_train_bags=None", ValueError, r"min_train_bags")
def _():
    next(BagShuffleSplit(1).split_bags(check_bags(bags), min_train_bags=None))


@malformed("cross_val_predict", "cv a string", TypeError, r"cv must be None, an int")
def _():
    cross_val_predict(LLP(), X, bags, props, cv="5")


# bag generators ------------------------------------------------------------
@malformed("generators", "bag_size 0", ValueError, r"'bag_size' parameter")
def _():
    UniformBagGenerator(0).fit(X)


@malformed(
    "generators",
    "bag_size larger than the data",
    ValueError,
    r"bag_size=20 exceeds the number of samples",
)
def _():
    UniformBagGenerator(20).fit(X)


@malformed("generators", "more clusters than rows", ValueError, r"n_clusters=20")
def _():
    KMeansBagGenerator(20, random_state=0).fit(X)


@malformed("generators", "unknown grouping column", ValueError, r"Unknown column 'z'")
def _():
    FeatureBagGenerator(["z"]).fit(Xdf)


@malformed(
    "generators",
    "make_bags with y of another length",
    ValueError,
    r"y has 6 labels but X has 8 rows",
)
def _():
    UniformBagGenerator(2, random_state=0).make_bags(X, [0, 1] * 3)


@malformed(
    "generators",
    "make_bags with y containing NaN",
    ValueError,
    r"y contains missing labels",
)
def _():
    UniformBagGenerator(2, random_state=0).make_bags(
        X, np.r_[0, 1, np.nan, 1, 0, 1, 0, 1]
    )


@malformed("generators", "make_bags with 2-D y", ValueError, r"y must be 1-D")
def _():
    UniformBagGenerator(2, random_state=0).make_bags(X, np.zeros((8, 2)))


@malformed("generators", "bag_size not an integer", ValueError, r"'bag_size' parameter")
def _():
    UniformBagGenerator(2.5).fit(X)


@malformed("generators", "drop_last not a bool", ValueError, r"'drop_last' parameter")
def _():
    UniformBagGenerator(4, drop_last="yes").fit(X)


@malformed(
    "generators", "random_state not a seed", ValueError, r"'random_state' parameter"
)
def _():
    UniformBagGenerator(4, random_state="x").fit(X)


@malformed("generators", "n_clusters 0", ValueError, r"'n_clusters' parameter")
def _():
    KMeansBagGenerator(0).fit(X)


@malformed("generators", "n_components 0", ValueError, r"'n_components' parameter")
def _():
    KMeansBagGenerator(3, n_components=0).fit(X)


@malformed("generators", "minibatch not a bool", ValueError, r"'minibatch' parameter")
def _():
    KMeansBagGenerator(3, minibatch="x").fit(X)


@malformed(
    "generators",
    "KMeans transform with fewer features",
    ValueError,
    r"X has 2 features",
)
def _():
    KMeansBagGenerator(3, random_state=0).fit(X).transform(X[:, :2])


@malformed("generators", "unknown column position", ValueError, r"Unknown column 9")
def _():
    FeatureBagGenerator(9).fit(Xdf)


@malformed(
    "generators",
    "a column name with X an array",
    ValueError,
    r"needs X as a pandas DataFrame",
)
def _():
    FeatureBagGenerator("a").fit(X)


@malformed("generators", "no grouping columns", ValueError, r"columns is empty")
def _():
    FeatureBagGenerator([]).fit(Xdf)


@malformed(
    "generators", "a grouping column twice", ValueError, r"columns repeats a column"
)
def _():
    FeatureBagGenerator(["a", "a"]).fit(Xdf)


@malformed(
    "generators", "a float as a column", TypeError, r"names \(str\) or positions"
)
def _():
    FeatureBagGenerator([1.5]).fit(Xdf)


@malformed("generators", "columns=None", ValueError, r"'columns' parameter")
def _():
    FeatureBagGenerator(None).fit(Xdf)


@malformed("generators", "n_bins 0", ValueError, r"'n_bins' parameter")
def _():
    FeatureBagGenerator("a", n_bins=0).fit(Xdf)


@malformed(
    "generators",
    "n_bins for a non-numeric column",
    ValueError,
    r"n_bins asks to bin column 's', which is not numeric",
)
def _():
    FeatureBagGenerator(["s"], n_bins={"s": 3}).fit(Xdf.assign(s=list("xyxyxyxy")))


@malformed(
    "generators",
    "n_bins for a column that does not group",
    ValueError,
    r"not grouping columns",
)
def _():
    FeatureBagGenerator(["a"], n_bins={"b": 3}).fit(Xdf)


@malformed(
    "generators",
    "1-D X",
    ValueError,
    r"X must be 2-D \(n_samples, n_features\); got shape \(5,\)",
)
def _():
    FeatureBagGenerator(0).fit(np.arange(5))


@malformed(
    "generators",
    "a ragged list of rows",
    ValueError,
    r"X must be 2-D \(n_samples, n_features\); got shape \(2,\)",
)
def _():
    FeatureBagGenerator(0).fit([[1, 2], [3]])


@malformed(
    "generators",
    "a list of numbers as X",
    ValueError,
    r"X must be 2-D \(n_samples, n_features\); got shape \(3,\)",
)
def _():
    FeatureBagGenerator(0).fit([1, 2, 3])


# proportions ---------------------------------------------------------------
@malformed(
    "proportions",
    "label_proportions with a label outside classes",
    ValueError,
    r"not in classes",
)
def _():
    label_proportions([0, 0, 1], ["a", "b", "z"], classes=["a", "b"])


@malformed(
    "proportions",
    "label_proportions with y shorter than bags",
    ValueError,
    r"bags has 3 entries but y has 2 labels",
)
def _():
    label_proportions([0, 0, 1], ["a", "b"])


@malformed(
    "proportions",
    "label_proportions with every row in no bag",
    ValueError,
    r"Every row has bag id -1",
)
def _():
    label_proportions([-1, -1], ["a", "b"])


@malformed(
    "proportions",
    "label_proportions with a missing label",
    ValueError,
    r"y contains missing labels",
)
def _():
    label_proportions([0, 1], ["a", None])


@malformed(
    "proportions",
    "label_proportions with a class twice",
    ValueError,
    r"classes repeats a label",
)
def _():
    label_proportions([0, 1], ["a", "b"], classes=["a", "a", "b"])


@malformed(
    "proportions",
    "expand_proportions with bags missing from the table",
    ValueError,
    r"no row for 2 bag id\(s\).*\[4, 5\]",
)
def _():
    expand_proportions(table, [0, 1, 4, 5, 4])


@malformed(
    "proportions",
    "expand_proportions with a table as long as bags",
    ValueError,
    r"no row for 1 bag id\(s\).*\[7\]",
)
def _():
    expand_proportions(table.iloc[:2], [0, 7])


@malformed(
    "proportions", "expand_proportions of a plain array", TypeError, r"table must be"
)
def _():
    expand_proportions(table.to_numpy(), [0, 1])


@malformed(
    "proportions",
    "expand_proportions of rows not summing to 1",
    ValueError,
    r"table rows must sum to 1",
)
def _():
    expand_proportions(table * 2, [0, 1])


@malformed(
    "proportions",
    "expand_proportions with every row in no bag",
    ValueError,
    r"Every entry of bags is -1",
)
def _():
    expand_proportions(table, [-1, -1])


@malformed(
    "proportions", "expand_proportions with 2-D bags", ValueError, r"bags must be 1-D"
)
def _():
    expand_proportions(table, [[0, 1]])


@malformed(
    "proportions",
    "project_to_simplex with NaN",
    ValueError,
    r"props contains NaN or infinite",
)
def _():
    project_to_simplex([[0.5, np.nan]])


@malformed(
    "proportions",
    "project_to_simplex with infinity",
    ValueError,
    r"props contains NaN or infinite",
)
def _():
    project_to_simplex([[np.inf, 0.0]])


@malformed(
    "proportions",
    "project_to_simplex of a scalar",
    ValueError,
    r"props must have at least one class along its last axis",
)
def _():
    project_to_simplex(3.0)


@malformed(
    "proportions",
    "project_to_simplex of no classes",
    ValueError,
    r"props must have at least one class along its last axis",
)
def _():
    project_to_simplex(np.empty((2, 0)))


@malformed(
    "identifiability",
    "X of strings",
    ValueError,
    r"\bX\b.*could not convert string to float",
)
def _():
    check_identifiability(bags, props, np.full((8, 3), "a"))


# privacy -------------------------------------------------------------------
@malformed(
    "privacy",
    "dp_proportions with epsilon=0",
    ValueError,
    r"epsilon must be a positive number",
)
def _():
    dp_proportions(bags, labels, epsilon=0)


@malformed(
    "privacy",
    "dp_proportions with a negative epsilon (discrete Laplace)",
    ValueError,
    r"epsilon must be a positive number",
)
def _():
    dp_proportions(bags, labels, epsilon=-0.5, mechanism="discrete_laplace")


@malformed(
    "privacy",
    "dp_proportions with epsilon=NaN (discrete Gaussian)",
    ValueError,
    r"epsilon must be a positive number",
)
def _():
    dp_proportions(
        bags, labels, epsilon=np.nan, mechanism="discrete_gaussian", delta=1e-05
    )


@malformed(
    "privacy",
    "dp_proportions with epsilon too small for the discrete Laplace",
    ValueError,
    r"epsilon=.*too small",
)
def _():
    dp_proportions(bags, labels, epsilon=1e-13, mechanism="discrete_laplace")


@malformed(
    "privacy",
    "dp_proportions with delta with a pure-DP mechanism",
    ValueError,
    r"delta=1e-05 is only used by the Gaussian mechanisms",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, mechanism="discrete_laplace", delta=1e-05)


@malformed(
    "privacy",
    "dp_proportions with no delta for the discrete Gaussian",
    ValueError,
    r"delta must be a number in \(0, 1\).*got None",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, mechanism="discrete_gaussian")


@malformed(
    "privacy",
    "dp_proportions with delta above 1",
    ValueError,
    r"delta must be a number in \(0, 1\).*got 1.5",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, mechanism="discrete_gaussian", delta=1.5)


@malformed(
    "privacy",
    "dp_proportions with min_bag_size=0",
    ValueError,
    r"min_bag_size must be a positive integer or None; got 0",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, min_bag_size=0)


@malformed(
    "privacy",
    "dp_proportions with min_bag_size negative",
    ValueError,
    r"min_bag_size must be a positive integer or None; got -3",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, min_bag_size=-3)


@malformed(
    "privacy",
    "dp_proportions with min_bag_size=2.5",
    ValueError,
    r"min_bag_size must be a positive integer or None; got 2.5",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, min_bag_size=2.5)


@malformed(
    "privacy",
    "dp_proportions with min_bag_size=True",
    ValueError,
    r"min_bag_size must be a positive integer or None; got True",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, min_bag_size=True)


@malformed(
    "privacy",
    "dp_proportions with min_bag_size as a string",
    ValueError,
    r"min_bag_size must be a positive integer or None; got '5'",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, min_bag_size="5")


@malformed(
    "privacy",
    "dp_proportions with min_bag_size that withholds every bag",
    ValueError,
    r"min_bag_size=10000 withholds",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, min_bag_size=10000)


@malformed(
    "privacy",
    "dp_proportions with max_contributions=0",
    ValueError,
    r"max_contributions",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, max_contributions=0)


@malformed(
    "privacy",
    "dp_proportions with max_contributions=1.5",
    ValueError,
    r"max_contributions",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, max_contributions=1.5)


@malformed(
    "privacy",
    "dp_proportions with max_contributions=None",
    ValueError,
    r"max_contributions",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, max_contributions=None)


@malformed(
    "privacy",
    "dp_proportions with clamp not a bool",
    ValueError,
    r"clamp must be True or False",
)
def _():
    dp_proportions(bags, labels, epsilon=1.0, clamp="yes")


@malformed(
    "privacy",
    "dp_bag_means with empty bounds",
    ValueError,
    r"bounds must be a pair \(lo, hi\) of finite numbers",
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(1.0, 1.0))


@malformed(
    "privacy",
    "dp_bag_means with bounds in the wrong order",
    ValueError,
    r"bounds must be a pair \(lo, hi\) of finite numbers",
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(2.0, 1.0))


@malformed(
    "privacy",
    "dp_bag_means with an infinite bound",
    ValueError,
    r"bounds must be a pair \(lo, hi\) of finite numbers",
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(0.0, np.inf))


@malformed(
    "privacy",
    "dp_bag_means with bounds=None",
    ValueError,
    r"bounds must be a pair \(lo, hi\) of finite numbers",
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=None)


@malformed(
    "privacy",
    "dp_bag_means with three bounds",
    ValueError,
    r"bounds must be a pair \(lo, hi\) of finite numbers",
)
def _():
    dp_bag_means(
        [0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(0.0, 1.0, 2.0)
    )


@malformed(
    "privacy",
    "dp_bag_means with a string bound",
    ValueError,
    r"bounds must be a pair \(lo, hi\) of finite numbers",
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=("a", 1.0))


@malformed(
    "privacy",
    "dp_bag_means with epsilon=0",
    ValueError,
    r"epsilon must be a positive number",
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=0.0, bounds=(0, 1))


@malformed(
    "privacy",
    "dp_bag_means with a negative epsilon",
    ValueError,
    r"epsilon must be a positive number",
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=-1, bounds=(0, 1))


@malformed(
    "privacy",
    "dp_bag_means with a discrete mechanism for real targets",
    ValueError,
    r"mechanism must be one of",
)
def _():
    dp_bag_means(
        [0, 0, 1, 1],
        [0.1, 0.2, 0.3, 0.4],
        epsilon=1.0,
        bounds=(0, 1),
        mechanism="discrete_laplace",
    )


@malformed(
    "privacy",
    "dp_bag_means with the Gaussian mechanism without delta",
    ValueError,
    r"delta must be a number in \(0, 1\).*got None",
)
def _():
    dp_bag_means(
        [0, 0, 1, 1],
        [0.1, 0.2, 0.3, 0.4],
        epsilon=1.0,
        bounds=(0, 1),
        mechanism="gaussian",
    )


@malformed(
    "privacy",
    "dp_bag_means with delta with the Laplace mechanism",
    ValueError,
    r"delta=1e-05 is only used by the Gaussian mechanisms",
)
def _():
    dp_bag_means(
        [0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(0, 1), delta=1e-05
    )


@malformed(
    "privacy", "dp_bag_means with max_contributions=0", ValueError, r"max_contributions"
)
def _():
    dp_bag_means(
        [0, 0, 1, 1],
        [0.1, 0.2, 0.3, 0.4],
        epsilon=1.0,
        bounds=(0, 1),
        max_contributions=0,
    )


@malformed(
    "privacy",
    "dp_bag_means with min_bag_size=0",
    ValueError,
    r"min_bag_size must be a positive integer or None; got 0",
)
def _():
    dp_bag_means(
        [0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(0, 1), min_bag_size=0
    )


@malformed(
    "privacy",
    "dp_bag_means with min_bag_size that withholds every bag",
    ValueError,
    r"min_bag_size=1000 withholds every bag",
)
def _():
    dp_bag_means(
        [0, 0, 1, 1],
        [0.1, 0.2, 0.3, 0.4],
        epsilon=1.0,
        bounds=(0, 1),
        min_bag_size=1000,
    )


@malformed(
    "privacy",
    "dp_bag_means with clamp not a bool",
    ValueError,
    r"clamp must be True or False",
)
def _():
    dp_bag_means(
        [0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(0, 1), clamp=1
    )


@malformed(
    "privacy", "dp_bag_means with y with NaN", ValueError, r"y contains NaN or infinite"
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.0, np.nan, 1.0, 1.0], epsilon=1.0, bounds=(0, 1))


@malformed(
    "privacy",
    "dp_bag_means with y shorter than bags",
    ValueError,
    r"y must be 1-D with one value per row of bags \(4\)",
)
def _():
    dp_bag_means([0, 0, 1, 1], [0.0, 1.0], epsilon=1.0, bounds=(0, 1))


@malformed(
    "privacy", "dp_bag_means with y of strings", ValueError, r"y must be numeric"
)
def _():
    dp_bag_means([0, 0, 1, 1], ["a", "b", "c", "d"], epsilon=1.0, bounds=(0, 1))


@malformed(
    "privacy",
    "dp_bag_means with bags=None",
    TypeError,
    r"bags is None",
)
def _():
    dp_bag_means(None, [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(0, 1))


# plotting ------------------------------------------------------------------
@malformed(
    "plotting",
    "plot_bag_sizes with every row in no bag",
    ValueError,
    r"bags holds no bag",
)
def _():
    plot_bag_sizes([-1, -1])


@malformed("plotting", "plot_bag_sizes with 2-D bags", ValueError, r"bags must be 1-D")
def _():
    plot_bag_sizes([[0, 1]])


@malformed(
    "plotting",
    "plot_bag_calibration with bags shorter than y_proba",
    ValueError,
    r"bags has 7 entries but y_proba has 8",
)
def _():
    plot_bag_calibration(bags[:7], props[:7], proba)


@malformed(
    "plotting",
    "plot_bag_calibration with y_proba rows not summing to 1",
    ValueError,
    r"y_proba rows must sum to 1",
)
def _():
    plot_bag_calibration(bags, props, proba * 2)


@malformed(
    "plotting",
    "plot_bag_calibration with y_proba of another number of classes",
    ValueError,
    r"y_proba has 3 columns",
)
def _():
    plot_bag_calibration(bags, props, np.full((8, 3), 1 / 3))


@malformed(
    "plotting", "plot_bag_calibration with props=None", TypeError, r"props is None"
)
def _():
    plot_bag_calibration(bags, None, proba)


@malformed(
    "plotting",
    "plot_bag_calibration with an unknown class_index",
    ValueError,
    r"class_index='maybe' is not one of",
)
def _():
    plot_bag_calibration(bags, props, proba, classes=["no", "yes"], class_index="maybe")


@malformed(
    "plotting",
    "plot_bag_calibration with rows in no bag",
    ValueError,
    r"bags holds the id -1",
)
def _():
    plot_bag_calibration([0, 0, 1, 1, 2, 2, -1, -1], props, proba)


# MeanMapClassifier ---------------------------------------------------------
@malformed(
    "MeanMapClassifier",
    "props rows not summing to 1",
    ValueError,
    r"props rows must sum to 1",
)
def _():
    MeanMapClassifier().fit(X, bags, props * 2)


@malformed(
    "MeanMapClassifier",
    "bags shorter than X",
    ValueError,
    r"bags has 7 entries but X has 8",
)
def _():
    MeanMapClassifier().fit(X, bags[:7], props)


@malformed(
    "MeanMapClassifier",
    "props shorter than X",
    ValueError,
    r"props has 7 rows but X has 8",
)
def _():
    MeanMapClassifier().fit(X, bags, props[:7])


@malformed(
    "MeanMapClassifier",
    "a single bag",
    ValueError,
    r"bags holds 1 bag\(s\); LLP needs at least 2",
)
def _():
    MeanMapClassifier().fit(X, np.zeros(8, int), np.tile([0.5, 0.5], (8, 1)))


@malformed(
    "MeanMapClassifier",
    "props that differ within a bag",
    ValueError,
    r"props differ between rows",
)
def _():
    MeanMapClassifier().fit(X, bags, np.vstack([[[1.0, 0.0]], props[1:]]))


@malformed(
    "MeanMapClassifier",
    "per-bag table missing a bag",
    ValueError,
    r"has no row for 1 bag id",
)
def _():
    MeanMapClassifier().fit(X, bags, table.iloc[1:])


@malformed(
    "MeanMapClassifier", "props of one class only", ValueError, r"only one class"
)
def _():
    MeanMapClassifier().fit(X, bags, np.tile([1.0, 0.0], (8, 1)))


@malformed("MeanMapClassifier", "X with NaN", ValueError, r"X contains NaN")
def _():
    MeanMapClassifier().fit(np.where(X > 1, np.nan, X), bags, props)


@malformed(
    "MeanMapClassifier", "no bags and no props", ValueError, r"requires y to be passed"
)
def _():
    MeanMapClassifier().fit(X, None)


@malformed(
    "MeanMapClassifier",
    "sample_weight of the wrong length",
    ValueError,
    r"sample_weight has shape \(5,\)",
)
def _():
    MeanMapClassifier().fit(X, bags, props, sample_weight=np.ones(5))


@malformed(
    "MeanMapClassifier",
    "sample_weight zero on all bags but one",
    ValueError,
    r"sample_weight 0.*LLP needs at least 2",
)
def _():
    MeanMapClassifier().fit(X, bags, props, sample_weight=np.where(bags == 0, 1.0, 0.0))


@malformed(
    "MeanMapClassifier",
    "sample_weight zero on all bags but one of a Bags object",
    ValueError,
    r"sample_weight 0.*LLP needs at least 2",
)
def _():
    MeanMapClassifier().fit(
        X, check_bags(bags, props), sample_weight=np.where(bags == 0, 1.0, 0.0)
    )


@malformed(
    "MeanMapClassifier",
    "scikit-learn's cross_val_predict with predict_proba",
    TypeError,
    r"sklearn_llp.model_selection.cross_val_predict",
)
def _():
    sk_cross_val_predict(
        MeanMapClassifier(),
        X,
        bags,
        cv=BagKFold(2),
        method="predict_proba",
        params={"props": props},
    )


# LLPRegressor --------------------------------------------------------------
@malformed("LLPRegressor", "instance targets with NaN", ValueError, r"y contains NaN")
def _():
    LLPRegressor(max_epochs=1, verbose=0).fit(X, np.full(8, np.nan))


@malformed("LLPRegressor", "no targets", ValueError, r"requires y to be passed")
def _():
    LLPRegressor(max_epochs=1, verbose=0).fit(X)


@malformed(
    "LLPRegressor", "a classification method", ValueError, r"classification method"
)
def _():
    LLPRegressor(method="vat", max_epochs=1, verbose=0).fit(X, X[:, 0])


def _params():
    """The catalogue as pytest params; an ``xfail`` reason makes a strict xfail."""
    return [
        pytest.param(
            case,
            id=case.id,
            marks=[pytest.mark.xfail(strict=True, reason=case.xfail)]
            if case.xfail
            else [],
        )
        for case in CATALOGUE
    ]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", _params())
def test_malformed_input_gets_a_clear_error(case):
    with pytest.raises((ValueError, TypeError)) as info:
        case.call()
    assert isinstance(info.value, case.exception), repr(info.value)
    assert re.search(case.match, str(info.value), flags=re.S), str(info.value)


# ==========================================================================
# Malformed inputs that do not fit one call and one error.
# ==========================================================================
@pytest.mark.parametrize("estimator", ["llp", "meanmap"])
def test_labels_path_is_checked_once_for_both_estimators(estimator):
    """``fit(X, y)`` (instance labels) goes through one validator
    (``check_labels``) in LLPClassifier and MeanMapClassifier alike: wrong
    length, a label outside ``classes`` and a duplicated class are errors."""
    y = np.array(["a", "b"] * 4)
    make = {
        "llp": lambda **kw: LLPClassifier(max_epochs=1, device="cpu", **kw),
        "meanmap": lambda **kw: MeanMapClassifier(**kw),
    }[estimator]
    with pytest.raises(ValueError, match="one class label per row"):
        make().fit(X, y[:5])
    with pytest.raises(ValueError, match="not in classes"):
        make(classes=["a", "c"]).fit(X, y)
    with pytest.raises(ValueError, match="duplicate labels"):
        make(classes=["a", "b", "a"]).fit(X, y)
    model = make(classes=["b", "a"]).fit(X, y)
    assert model.classes_.tolist() == ["b", "a"]


@pytest.mark.parametrize(
    "epsilon, mechanism, delta",
    [
        (1e-300, "laplace", None),
        (5e-324, "laplace", None),
        (1e-160, "laplace", None),
        (1e-300, "gaussian", 1e-5),
    ],
)
def test_tiny_epsilon_is_refused_naming_epsilon(epsilon, mechanism, delta):
    ids = np.repeat(np.arange(3), 5)
    y = np.tile([0, 1, 1, 0, 1], 3)
    with pytest.raises(ValueError, match="epsilon=.*too small"):
        dp_proportions(ids, y, epsilon, mechanism=mechanism, delta=delta)
    with pytest.raises(ValueError, match="epsilon=.*too small"):
        dp_noise_scale(epsilon, mechanism, delta=delta)


@pytest.mark.parametrize(
    "table, match",
    [
        (pd.DataFrame({"sum": [1.0, 2.0]}, index=["a", "b"]), "'sum' and 'size'"),
        (pd.DataFrame({"sum": [1.0, 2.0], "size": [1, 0]}, index=["a", "b"]), "size"),
        (
            pd.DataFrame({"mean": [1.0, 2.0], "total": [1, 2]}, index=["a", "b"]),
            "columns",
        ),
        (pd.DataFrame({"sum": [1.0, np.nan], "size": [1, 1]}, index=["a", "b"]), "sum"),
    ],
)
def test_bad_sum_tables_name_what_is_wrong(table, match):
    with pytest.raises(ValueError, match=match):  # read as a per-bag table
        check_bags(["a", "a", "b"], targets=table)
    with pytest.raises(ValueError, match=match):  # read by row
        check_bags(["a", "b"], targets=table.reset_index(drop=True))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_identifiability_refuses_non_finite_X(bad):
    rng = np.random.RandomState(0)
    bags = np.repeat(np.arange(40), 20)
    props = rng.uniform(0.1, 0.9, 40)[bags]
    X = rng.normal(size=(len(bags), 3))
    X[5, 1] = bad
    for form in (X, X.tolist(), sp.csr_matrix(X), X.astype(np.float32)):
        with pytest.raises(ValueError, match="X"):
            check_identifiability(bags, props, form)
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    with pytest.raises(ValueError, match="X has NaN or infinite values in column 'b'"):
        check_identifiability(bags, props, frame)
