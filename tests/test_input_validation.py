"""Input validation: every malformed input gets a clear error naming the argument.

``CATALOGUE``: one :class:`Case` per malformed input (where it goes, what is
wrong, the call, the exception and a regex its message must match); a strict
``xfail`` marks one not yet refused clearly. ``docs/make_malformed_inputs_table.py``
renders it as ``docs/malformed_inputs.md``; ``MORE`` holds inputs refused with
a row's message. Behaviour that takes more than one call follows the catalogue.
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
from _releases import dp_proportions
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
from sklearn_llp.privacy import dp_bag_means, dp_noise_scale, project_to_simplex

# The data every case starts from: 4 bags of 2 rows, 2 classes.
X = np.random.RandomState(0).normal(size=(8, 3))
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
ab = np.array(["a", "b"] * 4)  # string class labels


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


class OneValuePerRow(torch.nn.Module):
    """A module with one output per row instead of one per class."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 1)

    def forward(self, X):
        return self.linear(X)[:, 0]


class TupleOutput(OneValuePerRow):
    def forward(self, X):
        return self.linear(X), X


@dataclass(frozen=True)
class Case:
    """One malformed input: ``call()`` must raise ``exception`` (a ValueError or
    TypeError) with a message matching ``match`` (``re.search``, dot matches
    newline). ``where`` (the API) and ``description`` make the test id."""

    where: str
    description: str
    exception: type[Exception]
    match: str
    call: Callable[[], object]
    xfail: str | None = None

    def __post_init__(self):
        if not issubclass(self.exception, (ValueError, TypeError)):
            raise TypeError(f"{self.exception.__name__} is not a ValueError/TypeError")
        re.compile(self.match)

    @property
    def id(self):
        return re.sub(r"[^a-z0-9]+", "-", f"{self.where} {self.description}".lower())


# One row a case: Case(where, description, exception, match, lambda: call).
# fmt: off
CATALOGUE = [
    # fit: X --------------------------------------------------------------------
    Case("fit", "X with NaN", ValueError, r"Input X contains NaN",
         lambda: LLP().fit(np.where(X > 1, np.nan, X), bags, props)),
    Case("fit", "X with infinity", ValueError, r"Input X contains infinity",
         lambda: LLP().fit(np.where(X > 1, np.inf, X), bags, props)),
    Case("fit", "X DataFrame with a string column",
         ValueError, r"could not convert string to float",
         lambda: LLP().fit(pd.DataFrame({"a": list("xyxyxyxy"), "b": range(8)}), bags,
                   props)),
    Case("fit", "X of strings (categorical, not encoded)",
         ValueError, r"\bX\b.*could not convert string to float",
         lambda: LLP().fit(np.full((8, 3), "a"), bags, props)),
    Case("fit", "X 1-D", ValueError, r"\bX\b.*Expected 2D array",
         lambda: LLP().fit(X[:, 0], bags, props)),
    Case("fit", "X empty (0 rows), bags and props empty",
         ValueError, r"\bX\b.*0 sample",
         lambda: LLP().fit(np.zeros((0, 3)), [], np.zeros((0, 2)))),
    Case("fit", "3-D X with the default MLP", ValueError, r"default MLP takes 2-D X",
         lambda: LLP().fit(np.zeros((8, 3, 2)), bags, props)),
    Case("fit", "X DataFrame with a datetime column", TypeError, r"\bX\b",
         lambda: LLP().fit(Xdf.assign(a=pd.date_range("2020", periods=8)), bags,
                   props)),
    # fit: bags -----------------------------------------------------------------
    Case("fit", "bags shorter than X",
         ValueError, r"bags has 7 entries but X has 8 rows",
         lambda: LLP().fit(X, bags[:7], props)),
    Case("fit", "bags 2-D", ValueError, r"bags must be 1-D",
         lambda: LLP().fit(X, bags.reshape(4, 2), props)),
    Case("fit", "bags with NaN", ValueError, r"bags contains NaN",
         lambda: LLP().fit(X, np.where(bags == 3, np.nan, bags), props)),
    Case("fit", "bags with None", ValueError, r"bags contains missing ids",
         lambda: LLP().fit(X,
                   np.array(["a", "a", "b", "b", None, None, "c", "c"], dtype=object),
                   props)),
    Case("fit", "composite keys with a missing value",
         ValueError, r"missing ids .* row 4: \(nan, 'b'\).*fillna",
         lambda: LLP().fit(X, pd.DataFrame(
             {"k": [1.0, 1, 2, 2, np.nan, np.nan, 3, 3], "s": list("aabbbbcc")}),
             props)),
    Case("fit", "sample-aligned props whose index is in another order than X's",
         ValueError, r"props differ between rows of the same bag \(bag 1: "
         r"\[0.0, 1.0\] and \[1.0, 0.0\]\).*index is in the order of X",
         lambda: LLP().fit(Xdf, bags, pd.DataFrame(
             props[[1, 2, 3, 4, 5, 6, 7, 0]], index=[11, 12, 13, 14, 15, 16, 17, 10]))),
    Case("fit", "bags of non-integer floats",
         ValueError, r"bags holds non-integer floats",
         lambda: LLP().fit(X, bags + 0.5, props)),
    Case("fit", "bags as a Python list mixing 0 and '0'",
         TypeError, r"bags mixes id types",
         lambda: LLP().fit(X, [0, 0, "0", "0", 1, 1, 2, 2],
                   np.array([[0.5, 0.5]] * 4 + [[1, 0]] * 2 + [[0, 1]] * 2))),
    Case("fit", "bags=None with props given", TypeError, r"bags is None",
         lambda: LLP().fit(X, None, props)),
    Case("fit", "a Bags of bag means (regression) for the classifier",
         ValueError, r"bags carries bag means .* label proportions are needed here",
         lambda: LLP().fit(X, check_bags(bags, targets=props[:, 1]))),
    Case("fit", "no bags and no props", ValueError, r"requires y to be passed",
         lambda: LLP().fit(X)),
    Case("fit", "a single bag",
         ValueError, r"bags holds 1 bag\(s\); LLP needs at least 2",
         lambda: LLP().fit(X, np.zeros(8), np.tile([0.5, 0.5], (8, 1)))),
    # fit: props ----------------------------------------------------------------
    Case("fit", "props=None and bag ids that are one class (supervised)",
         ValueError, r"y holds a single class", lambda: LLP().fit(X, np.zeros(8))),
    Case("fit", "props with NaN", ValueError, r"props contains NaN or infinite",
         lambda: LLP().fit(X, bags, np.where(props == 1, np.nan, props))),
    Case("fit", "props negative", ValueError, r"props contains negative",
         lambda: LLP().fit(X, bags, props - 0.25)),
    Case("fit", "props as percentages",
         ValueError, r"props rows must sum to 1 \(tolerance 0.01\)",
         lambda: LLP().fit(X, bags, props * 100)),
    Case("fit", "positive fraction above 1", ValueError, r"must lie in \[0, 1\]",
         lambda: LLP().fit(X, bags, np.full(8, 1.5))),
    Case("fit", "props 3-D", ValueError, r"props must be 1-D or 2-D",
         lambda: LLP().fit(X, bags, props[:, :, None])),
    Case("fit", "props of non-numeric strings", TypeError, r"props must hold numbers",
         lambda: LLP().fit(X, bags, np.full((8, 2), "x"))),
    Case("fit", "props with one class column", ValueError, r"props has 1 class column",
         lambda: LLP().fit(X, bags, np.ones((8, 1)))),
    Case("fit", "props that differ within a bag",
         ValueError, r"props differ between rows of the same bag",
         lambda: LLP().fit(X, bags, np.vstack([props[:1], [[0.2, 0.8]], props[2:]]))),
    Case("fit", "props one row per bag as a plain array",
         ValueError, r"props has 4 rows but X has 8.*per-bag table",
         lambda: LLP().fit(X, bags, props[::2])),
    Case("fit", "per-bag table with a duplicated id",
         ValueError, r"props \(a per-bag table\) repeats a bag id",
         lambda: LLP().fit(X, bags, pd.concat([table, table.iloc[[3]]]))),
    Case("fit", "per-bag table keyed by strings, bags are ints", ValueError,
         r"props \(a per-bag table\) has no row for 4 bag id.*\[0, 1, 2, 3\]",
         lambda: LLP().fit(X, bags, {str(b): [0.5, 0.5] for b in range(4)})),
    Case("fit", "per-bag dict of vectors of different lengths",
         ValueError, r"props dict must map every bag id",
         lambda: LLP().fit(X, bags,
                   {0: [0.5, 0.5], 1: [1, 0], 2: [0, 1], 3: [1, 0, 0]})),
    Case("fit", "classes param not matching the table columns",
         ValueError, r"props columns \['no', 'yes'\] do not match classes",
         lambda: LLP(classes=["x", "y"]).fit(X, bags, table)),
    Case("fit", "classes param of the wrong length",
         ValueError, r"props has 2 classes .* but 3 are expected",
         lambda: LLP(classes=["a", "b", "c"]).fit(X, bags, props)),
    Case("fit", "classes param with a duplicated label",
         ValueError, r"classes has duplicate labels",
         lambda: LLP(classes=["a", "a"]).fit(X, bags, props)),
    Case("fit", "labels shorter than X (props=None)",
         ValueError, r"one class label per row", lambda: LLP().fit(X, ab[:5])),
    Case("fit", "classes param missing a label of y",
         ValueError, r"y holds labels that are not in classes",
         lambda: LLP(classes=["a", "c"]).fit(X, ab)),
    # fit: overlapping bags -----------------------------------------------------
    Case("fit", "index lists with a negative row",
         ValueError, r"bags holds row indices outside \[0, 8\)",
         lambda: LLP().fit(X, [np.array([-1, 1]), np.array([2, 3])], per_bag[:2])),
    Case("fit", "index lists of 2-D arrays",
         TypeError, r"bags\[0\] must be a 1-D array of integer row indices",
         lambda: LLP().fit(X, [np.array([[0, 1]]), np.array([2, 3])], per_bag[:2])),
    Case("fit", "membership matrix of the wrong shape",
         ValueError, r"bags \(a membership matrix\) has 6 rows but X has 8",
         lambda: LLP().fit(X, sp.eye(6, 3, format="csr"), per_bag)),
    Case("fit", "membership matrix with an empty column",
         ValueError, r"bags has 1 empty bag.*subset_membership",
         lambda: LLP().fit(X, sp.csr_matrix(np.eye(8, 4)[:, [0, 1, 2]] * [1, 1, 0]),
                   per_bag)),
    # fit: parameters -----------------------------------------------------------
    Case("fit", "validation_fraction with all bags connected", ValueError,
         r"validation_fraction=0.5: BagShuffleSplit needs at least 2 bags .*got 1",
         lambda: LLP(validation_fraction=0.5)
         .fit(X, [np.arange(5), np.arange(4, 8)], per_bag[:2])),
    Case("fit", "negative max_epochs", ValueError, r"'max_epochs' parameter",
         lambda: LLP(max_epochs=-1).fit(X, bags, props)),
    Case("fit", "max_bag_size 0", ValueError, r"'max_bag_size' parameter",
         lambda: LLP(max_bag_size=0).fit(X, bags, props)),
    Case("fit", "a module with the wrong output size",
         ValueError, r"module returned a tensor of shape \(\d+, 5\).*\(n_rows, 2\)",
         lambda: LLPClassifier(module=torch.nn.Linear(3, 5), max_epochs=1, verbose=0)
         .fit(X, bags, props)),
    Case("fit", "unknown method",
         ValueError, r"method='vta' is not a known method.*'vat'",
         lambda: LLP(method="vta").fit(X, bags, props)),
    Case("partial_fit", "classes that differ from classes_",
         ValueError, r"classes must match classes_",
         lambda: fitted().partial_fit(X, bags, props, classes=[0, 1, 2])),
    Case("partial_fit", "props of another number of classes",
         ValueError, r"props has 3 classes .* but 2 are expected",
         lambda: fitted().partial_fit(X, bags, np.column_stack([props, np.zeros(8)]))),
    Case("fit", "device naming a GPU that is not there", ValueError, r"device='cuda:9'",
         lambda: LLP(device="cuda:9").fit(X, bags, props)),
    Case("fit", "device that is not a torch device", ValueError, r"device='gpu'",
         lambda: LLP(device="gpu").fit(X, bags, props)),
    Case("fit", "a module returning one value per row",
         ValueError, r"module returned a tensor of shape \(\d+,\).*\(n_rows, 2\)",
         lambda: LLPClassifier(module=OneValuePerRow, max_epochs=1, verbose=0)
         .fit(X, bags, props)),
    Case("fit", "a module returning a tuple", TypeError, r"module returned a tuple",
         lambda: LLPClassifier(module=TupleOutput, max_epochs=1, verbose=0)
         .fit(X, bags, props)),
    # fit: silent wrong results (#13) -------------------------------------------
    Case("fit", "bags with a missing timestamp (NaT)",
         ValueError, r"bags contains missing ids \(NaT\)",
         lambda: LLP().fit(X, pd.to_datetime(["2020"] * 4 + ["2021"] * 3 + [None]),
                   props)),
    Case("fit", "bags of frozensets", TypeError, r"bags holds ids of type frozenset",
         lambda: LLP().fit(X, pd.Series([frozenset({b}) for b in bags]), props)),
    Case("fit", "sample-aligned props DataFrame not subset with X",
         ValueError, r"props has 8 rows but X has 6",
         lambda: LLP().fit(X[:6], bags[:6], pd.DataFrame(props))),
    Case("fit", "props with duplicate class columns",
         ValueError, r"props has duplicate class columns",
         lambda: LLP().fit(X, bags, pd.DataFrame(props, columns=["yes", "yes"]))),
    Case("fit", "a method hyperparameter the method does not take",
         ValueError, r"\['method__alpha'\] are not hyperparameters of DLLP",
         lambda: LLP(method="dllp", method__alpha=0.1).fit(X, bags, props)),
    Case("fit", "a method hyperparameter out of range",
         ValueError, r"'method__alpha' parameter of VAT",
         lambda: LLP(method="vat", method__alpha=float("nan")).fit(X, bags, props)),
    Case("fit", "a fixed threshold with three classes", ValueError,
         r"threshold=0.3 is a probability threshold of the second class.*there are 3",
         lambda: LLP(threshold=0.3).fit(X, bags, np.tile([0.2, 0.3, 0.5], (8, 1)))),
    Case("fit", "sample_weight zero everywhere",
         ValueError, r"sample_weight is zero for every row",
         lambda: LLP().fit(X, bags, props, sample_weight=np.zeros(8))),
    Case("fit", "EpochScoring callback (scores against labels)",
         TypeError, r"callbacks: EpochScoring .* validation_fraction",
         lambda: LLP(callbacks=[EpochScoring("accuracy")]).fit(X, bags, props)),
    Case("fit", "ProgressBar counting batches of rows",
         TypeError, r"ProgressBar\(batches_per_epoch='auto'\).*ProgressBar\('count'\)",
         lambda: LLP(callbacks=[ProgressBar()]).fit(X, bags, props)),
    Case("fit", "scikit-learn's cross_val_predict with predict_proba",
         TypeError, r"sklearn_llp.model_selection.cross_val_predict",
         lambda: sk_cross_val_predict(LLP(), X, bags, cv=BagKFold(2),
                              params={"props": props}, method="predict_proba")),
    Case("fit", "initialize() of a model never fitted, without sizes",
         ValueError, r"module__n_features=<number of columns of X>",
         lambda: LLP().initialize()),
    # fit: sample weights, held-out bags, method requirements -------------------
    Case("fit", "sample_weight with NaN", ValueError, r"sample_weight .*finite",
         lambda: LLP().fit(X, bags, props, sample_weight=np.full(8, np.nan))),
    Case("fit", "sample_weight of the wrong length",
         ValueError, r"sample_weight has shape \(7,\) but there are 8 rows",
         lambda: LLP().fit(X, bags, props, sample_weight=np.ones(7))),
    Case("fit", "validation_fraction that leaves one training bag",
         ValueError, r"validation_fraction=0.1.*train on",
         lambda: LLP(validation_fraction=0.1).fit(X[:4], bags[:4], props[:4])),
    Case("fit", "early_stopping=True with too few bags to hold out",
         ValueError, r"validation_fraction=0.1 \(early_stopping",
         lambda: LLP(early_stopping=True).fit(X[:4], bags[:4], props[:4])),
    Case("fit", "method='llpfc' with overlapping bags",
         ValueError, r"llpfc.*disjoint bags",
         lambda: LLP(method="llpfc").fit(X, lists, per_bag)),
    Case("fit", "method='llpfc' with fewer bags than classes",
         ValueError, r"at least 3 training bags; got 2",
         lambda: LLP(method="llpfc").fit(X, bags // 2,
                                 np.tile([0.5, 0.3, 0.2], (8, 1)))),
    Case("fit", "a regression method for the classifier",
         ValueError, r"regression method, not one for LLPClassifier",
         lambda: LLP(method="bag").fit(X, labels)),
    Case("predict", "wrong number of features",
         ValueError, r"X has 2 features, but LLPClassifier is expecting 3",
         lambda: fitted().predict(X[:, :2])),
    Case("predict", "DataFrame with an unseen column",
         ValueError, r"feature names should match.*unseen at fit time:\n- d",
         lambda: fitted_df().predict(Xdf.rename(columns={"c": "d"}))),
    Case("predict", "one row as a 1-D array", ValueError, r"\bX\b.*Expected 2D array",
         lambda: fitted().predict(X[0])),
    Case("predict", "3-D X for a model fitted on 2-D X",
         ValueError, r"X has rows of shape \(3, 2\), but the model was fitted on rows "
         r"of shape \(3,\)",
         lambda: fitted().predict(np.zeros((2, 3, 2)))),
    Case("predict", "before fit", ValueError, r"not fitted yet",
         lambda: LLP().predict(X)),
    Case("score", "X None", TypeError, r"^X: Expected sequence or array-like",
         lambda: fitted().score(None, bags, props)),
    Case("score", "no props for a model fitted on bags",
         ValueError, r"score\(X, y\) got no props, but the model was fitted on bags",
         lambda: fitted().score(X, bags)),
    Case("check_bags", "one props row per sample indexed by shuffled bag ids",
         ValueError, r"props has one row per sample .* reads both as sample-aligned",
         lambda: check_bags(["a", "b", "c"],
                    pd.DataFrame([[1, 0], [0, 1], [0.0, 1.0]], index=["c", "a", "b"]),
                    n_samples=3)),
    Case("check_bags", "composite keys mixed with a single id",
         TypeError, r"composite keys",
         lambda: check_bags([("a", 1), ("a", 1), ("b", 1), "b"], n_samples=4)),
    Case("check_bags", "index lists with fewer props rows than bags",
         ValueError, r"props must be \(n_bags, n_classes\)",
         lambda: check_bags([np.array([0, 1]), np.array([2, 3])], [[1.0, 0.0]],
                    n_samples=4)),
    Case("check_bags", "per-bag targets table with 'sum' without 'size'",
         ValueError, r"targets has columns \['sum'\].*'sum' and 'size'",
         lambda: check_bags(["a", "a", "b"], targets=pd.DataFrame(
             {"sum": [1.0, 2.0]}, index=["a", "b"]))),
    Case("check_bags", "per-bag targets table with a zero 'size'",
         ValueError, r"targets\['size'\] must be positive",
         lambda: check_bags(["a", "a", "b"], targets=pd.DataFrame(
             {"sum": [1.0, 2.0], "size": [1, 0]}, index=["a", "b"]))),
    Case("check_bags", "per-bag targets table with unknown columns",
         ValueError, r"targets has columns \['mean', 'total'\]",
         lambda: check_bags(["a", "a", "b"], targets=pd.DataFrame(
             {"mean": [1.0, 2.0], "total": [1, 2]}, index=["a", "b"]))),
    Case("check_bags", "per-bag targets table with a NaN 'sum'",
         ValueError, r"targets\['sum'\] contains NaN",
         lambda: check_bags(["a", "a", "b"], targets=pd.DataFrame(
             {"sum": [1.0, np.nan], "size": [1, 1]}, index=["a", "b"]))),
    Case("check_fit_inputs", "sample_weight leaving one class",
         ValueError, r"sample_weight leaves rows of a single class",
         lambda: check_fit_inputs([0, 0, 1, 1], n_samples=4,
                          sample_weight=[1.0, 1.0, 0.0, 0.0])),
    Case("identifiability", "props shorter than bags",
         ValueError, r"props has 3 rows but bags has 4",
         lambda: check_identifiability(None, [0, 0, 1, 1], [0.5, 0.5, 0.2])),
    Case("metrics", "y_proba with the wrong number of rows",
         ValueError, r"bags has 8 entries but y_proba has 7 rows",
         lambda: hard_l1_error(bags, props, proba[:7])),
    Case("metrics", "y_proba with the wrong number of columns",
         ValueError, r"y_proba has 3 columns but props has 2 classes",
         lambda: hard_l1_error(bags, props, np.full((8, 3), 1 / 3))),
    Case("metrics", "decision scores instead of probabilities",
         ValueError, r"y_proba contains negative values",
         lambda: soft_l1_error(bags, props, proba - 0.5)),
    Case("metrics", "y_proba of strings", TypeError, r"y_proba must hold numbers",
         lambda: hard_l1_error(bags, props, np.full((8, 2), "x"))),
    Case("metrics", "unknown metric name", ValueError, r"metrics must be among",
         lambda: bag_errors(bags, props, proba, metrics=["accuracy"])),
    Case("metrics", "y_proba rows not summing to 1",
         ValueError, r"y_proba rows must sum to 1",
         lambda: soft_l1_error(bags, props, proba * 2)),
    Case("metrics", "y_proba with NaN", ValueError, r"y_proba contains NaN",
         lambda: soft_l1_error(bags, props, np.full((8, 2), np.nan))),
    Case("metrics", "props=None", TypeError, r"props is None",
         lambda: soft_l1_error(bags, None, proba)),
    Case("scorers", "unknown metric", ValueError, r"metric must be one of",
         lambda: BagScorer("accuracy")),
    Case("scorers", "table as a sample-aligned array",
         TypeError, r"table must be a per-bag table",
         lambda: make_bag_scorer("hard_l1", table=props)),
    Case("scorers", "bags without props", ValueError, r"Pass both bags and props",
         lambda: make_bag_scorer("hard_l1", bags=bags)),
    Case("scorers", "called without y",
         ValueError, r"needs y, the bag id of every row of X",
         lambda: hard_l1_scorer(fitted(), X)),
    Case("scorers", "called without props (routing off)",
         ValueError, r"received no label proportions",
         lambda: hard_l1_scorer(fitted(), X, bags)),
    Case("splitters", "more folds than bags",
         ValueError, r"BagKFold needs at least 5 bags .* in y form 4",
         lambda: next(BagKFold(5).split(X, bags))),
    Case("splitters", "no bags given", ValueError, r"needs the bag id of every sample",
         lambda: next(BagKFold(2).split(X))),
    Case("splitters", "groups shorter than X",
         ValueError, r"groups has 7 entries but X has 8 rows",
         lambda: next(BagKFold(2).split(X, groups=bags[:7]))),
    Case("splitters", "2-D groups", ValueError,
         r"groups must be 1-D with one bag id per row of X; got shape \(8, 8\)",
         lambda: next(BagShuffleSplit(2).split(X, groups=np.eye(8)))),
    Case("splitters", "overlapping bags all connected, 2 folds",
         ValueError, r"bags in groups form 1:",
         lambda: next(BagKFold(2).split(X, groups=[np.arange(5), np.arange(4, 8)]))),
    Case("splitters", "membership matrix of the wrong shape",
         ValueError, r"groups \(a membership matrix\) has 6 rows but X has 8",
         lambda: next(BagKFold(2).split(X, groups=sp.eye(6, 3, format="csr")))),
    Case("splitters", "subset_membership of bag ids",
         TypeError, r"bags must be overlapping bags",
         lambda: subset_membership(bags, np.arange(4))),
    Case("splitters", "subset_membership with repeated rows",
         ValueError, r"rows holds repeated indices",
         lambda: subset_membership(lists, np.array([0, 0, 1]))),
    Case("splitters", "BagKFold with 2-D y",
         ValueError, r"y must be 1-D with one bag id per row",
         lambda: next(BagKFold(2).split(X, np.zeros((8, 2))))),
    Case("splitters", "test_size=0.0",
         ValueError, r"test_size must be a float in \(0, 1\).*got 0.0",
         lambda: next(BagShuffleSplit(1, test_size=0.0).split(X, bags))),
    Case("splitters", "train_size=1.5",
         ValueError, r"train_size must be a float in \(0, 1\).*got 1.5",
         lambda: next(
             BagShuffleSplit(1, test_size=None, train_size=1.5).split(X, bags))),
    Case("splitters", "test_size=0 (an int)",
         ValueError, r"test_size=0 bags must be at least 1",
         lambda: next(BagShuffleSplit(1, test_size=0).split(X, bags))),
    Case("splitters", "min_train_bags=0", ValueError, r"min_train_bags",
         lambda: next(
             BagShuffleSplit(1).split_bags(check_bags(bags), min_train_bags=0))),
    Case("cross_val_predict", "cv a string", TypeError, r"cv must be None, an int",
         lambda: cross_val_predict(LLP(), X, bags, props, cv="5")),
    Case("generators", "bag_size 0", ValueError, r"'bag_size' parameter",
         lambda: UniformBagGenerator(0).fit(X)),
    Case("generators", "bag_size larger than the data",
         ValueError, r"bag_size=20 exceeds the number of samples",
         lambda: UniformBagGenerator(20).fit(X)),
    Case("generators", "more clusters than rows", ValueError, r"n_clusters=20",
         lambda: KMeansBagGenerator(20, random_state=0).fit(X)),
    Case("generators", "unknown grouping column", ValueError, r"Unknown column 'z'",
         lambda: FeatureBagGenerator(["z"]).fit(Xdf)),
    Case("generators", "make_bags with y of another length",
         ValueError, r"y has 6 labels but X has 8 rows",
         lambda: UniformBagGenerator(2, random_state=0).make_bags(X, [0, 1] * 3)),
    Case("generators", "make_bags with y containing NaN",
         ValueError, r"y contains missing labels",
         lambda: UniformBagGenerator(2, random_state=0).make_bags(
             X, np.r_[0, 1, np.nan, 1, 0, 1, 0, 1])),
    Case("generators", "make_bags with 2-D y", ValueError, r"y must be 1-D",
         lambda: UniformBagGenerator(2, random_state=0).make_bags(X, np.zeros((8, 2)))),
    Case("generators", "drop_last not a bool", ValueError, r"'drop_last' parameter",
         lambda: UniformBagGenerator(4, drop_last="yes").fit(X)),
    Case("generators", "random_state not a seed",
         ValueError, r"'random_state' parameter",
         lambda: UniformBagGenerator(4, random_state="x").fit(X)),
    Case("generators", "n_clusters 0", ValueError, r"'n_clusters' parameter",
         lambda: KMeansBagGenerator(0).fit(X)),
    Case("generators", "n_components 0", ValueError, r"'n_components' parameter",
         lambda: KMeansBagGenerator(3, n_components=0).fit(X)),
    Case("generators", "minibatch not a bool", ValueError, r"'minibatch' parameter",
         lambda: KMeansBagGenerator(3, minibatch="x").fit(X)),
    Case("generators", "KMeans transform with fewer features",
         ValueError, r"X has 2 features",
         lambda: KMeansBagGenerator(3, random_state=0).fit(X).transform(X[:, :2])),
    Case("generators", "unknown column position", ValueError, r"Unknown column 9",
         lambda: FeatureBagGenerator(9).fit(Xdf)),
    Case("generators", "a column name with X an array",
         ValueError, r"needs X as a pandas DataFrame",
         lambda: FeatureBagGenerator("a").fit(X)),
    Case("generators", "no grouping columns", ValueError, r"columns is empty",
         lambda: FeatureBagGenerator([]).fit(Xdf)),
    Case("generators", "a grouping column twice",
         ValueError, r"columns repeats a column",
         lambda: FeatureBagGenerator(["a", "a"]).fit(Xdf)),
    Case("generators", "a float as a column", TypeError, r"names \(str\) or positions",
         lambda: FeatureBagGenerator([1.5]).fit(Xdf)),
    Case("generators", "columns=None", ValueError, r"'columns' parameter",
         lambda: FeatureBagGenerator(None).fit(Xdf)),
    Case("generators", "n_bins 0", ValueError, r"'n_bins' parameter",
         lambda: FeatureBagGenerator("a", n_bins=0).fit(Xdf)),
    Case("generators", "n_bins for a non-numeric column",
         ValueError, r"n_bins asks to bin column 's', which is not numeric",
         lambda: FeatureBagGenerator(["s"], n_bins={"s": 3}).fit(
             Xdf.assign(s=list("xyxyxyxy")))),
    Case("generators", "n_bins for a column that does not group",
         ValueError, r"not grouping columns",
         lambda: FeatureBagGenerator(["a"], n_bins={"b": 3}).fit(Xdf)),
    Case("generators", "1-D X",
         ValueError, r"X must be 2-D \(n_samples, n_features\); got shape \(5,\)",
         lambda: FeatureBagGenerator(0).fit(np.arange(5))),
    Case("proportions", "label_proportions with a label outside classes",
         ValueError, r"not in classes",
         lambda: label_proportions([0, 0, 1], ["a", "b", "z"], classes=["a", "b"])),
    Case("proportions", "label_proportions with y shorter than bags",
         ValueError, r"bags has 3 entries but y has 2 labels",
         lambda: label_proportions([0, 0, 1], ["a", "b"])),
    Case("proportions", "label_proportions with every row in no bag",
         ValueError, r"Every row has bag id -1",
         lambda: label_proportions([-1, -1], ["a", "b"])),
    Case("proportions", "label_proportions with a class twice",
         ValueError, r"classes repeats a label",
         lambda: label_proportions([0, 1], ["a", "b"], classes=["a", "a", "b"])),
    Case("proportions", "expand_proportions with bags missing from the table",
         ValueError, r"no row for 2 bag id\(s\).*\[4, 5\]",
         lambda: expand_proportions(table, [0, 1, 4, 5, 4])),
    Case("proportions", "expand_proportions of a plain array",
         TypeError, r"table must be",
         lambda: expand_proportions(table.to_numpy(), [0, 1])),
    Case("proportions", "expand_proportions of rows not summing to 1",
         ValueError, r"table rows must sum to 1",
         lambda: expand_proportions(table * 2, [0, 1])),
    Case("proportions", "expand_proportions with every row in no bag",
         ValueError, r"Every entry of bags is -1",
         lambda: expand_proportions(table, [-1, -1])),
    Case("proportions", "expand_proportions with 2-D bags",
         TypeError, r"bags is a list of row-index arrays .* one bag id per row",
         lambda: expand_proportions(table, [[0, 1]])),
    Case("proportions", "project_to_simplex with NaN",
         ValueError, r"props contains NaN or infinite",
         lambda: project_to_simplex([[0.5, np.nan]])),
    Case("proportions", "project_to_simplex of a scalar",
         ValueError, r"props must have at least one class along its last axis",
         lambda: project_to_simplex(3.0)),
    Case("identifiability", "X of strings",
         ValueError, r"\bX\b.*could not convert string to float",
         lambda: check_identifiability(np.full((8, 3), "a"), bags, props)),
    Case("identifiability", "X with NaN", ValueError, r"X contains NaN",
         lambda: check_identifiability(np.where(X > 1, np.nan, X), bags, props)),
    Case("identifiability", "X DataFrame with NaN",
         ValueError, r"X has NaN or infinite values in column 'b'",
         lambda: check_identifiability(Xdf.assign(b=np.nan), bags, props)),
    Case("privacy", "dp_proportions without classes (the public label domain)",
         ValueError, r"classes is required: the public label domain",
         lambda: dp_proportions(bags, labels, epsilon=1.0, classes=None)),
    Case("privacy", "dp_proportions with epsilon=0",
         ValueError, r"epsilon must be a positive number",
         lambda: dp_proportions(bags, labels, epsilon=0)),
    Case("privacy", "dp_proportions with epsilon too small for the discrete Laplace",
         ValueError, r"epsilon=.*too small",
         lambda: dp_proportions(bags, labels, epsilon=1e-13,
                        mechanism="discrete_laplace")),
    Case("privacy", "dp_proportions with delta with a pure-DP mechanism",
         ValueError, r"delta=1e-05 is only used by the Gaussian mechanisms",
         lambda: dp_proportions(bags, labels, epsilon=1.0, mechanism="discrete_laplace",
                        delta=1e-05)),
    Case("privacy", "dp_proportions with no delta for the discrete Gaussian",
         ValueError, r"delta must be a number in \(0, 1\).*got None",
         lambda: dp_proportions(bags, labels, epsilon=1.0,
                        mechanism="discrete_gaussian")),
    Case("privacy", "dp_proportions with min_bag_size=0",
         ValueError, r"min_bag_size must be a positive integer or None; got 0",
         lambda: dp_proportions(bags, labels, epsilon=1.0, min_bag_size=0)),
    Case("privacy", "dp_proportions with min_bag_size that withholds every bag",
         ValueError, r"min_bag_size=10000 withholds",
         lambda: dp_proportions(bags, labels, epsilon=1.0, min_bag_size=10000)),
    Case("privacy", "dp_proportions with max_contributions=0",
         ValueError, r"max_contributions",
         lambda: dp_proportions(bags, labels, epsilon=1.0, max_contributions=0)),
    Case("privacy", "dp_proportions with clamp not a bool",
         ValueError, r"clamp must be True or False",
         lambda: dp_proportions(bags, labels, epsilon=1.0, clamp="yes")),
    Case("privacy", "dp_bag_means with empty bounds",
         ValueError, r"bounds must be a pair \(lo, hi\) of finite numbers",
         lambda: dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0,
                      bounds=(1.0, 1.0))),
    Case("privacy", "dp_bag_means with a discrete mechanism for real targets",
         ValueError, r"mechanism must be one of",
         lambda: dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], epsilon=1.0,
                      bounds=(0, 1), mechanism="discrete_laplace")),
    Case("privacy", "dp_bag_means with y with NaN",
         ValueError, r"y contains NaN or infinite",
         lambda: dp_bag_means([0, 0, 1, 1], [0.0, np.nan, 1.0, 1.0], epsilon=1.0,
                      bounds=(0, 1))),
    Case("privacy", "dp_bag_means with y shorter than bags",
         ValueError, r"y must be 1-D with one value per row of bags \(4\)",
         lambda: dp_bag_means([0, 0, 1, 1], [0.0, 1.0], epsilon=1.0, bounds=(0, 1))),
    Case("privacy", "dp_bag_means with y of strings", ValueError, r"y must be numeric",
         lambda: dp_bag_means([0, 0, 1, 1], ["a", "b", "c", "d"], epsilon=1.0,
                      bounds=(0, 1))),
    Case("plotting", "plot_bag_sizes with every row in no bag",
         ValueError, r"bags holds no bag", lambda: plot_bag_sizes([-1, -1])),
    Case("plotting", "plot_bag_calibration with an unknown class_index",
         ValueError, r"class_index='maybe' is not one of",
         lambda: plot_bag_calibration(bags, props, proba, classes=["no", "yes"],
                              class_index="maybe")),
    Case("plotting", "plot_bag_calibration with rows in no bag",
         ValueError, r"bags holds the id -1",
         lambda: plot_bag_calibration([0, 0, 1, 1, 2, 2, -1, -1], props, proba)),
    Case("MeanMapClassifier", "props of one class only", ValueError, r"only one class",
         lambda: MeanMapClassifier().fit(X, bags, np.tile([1.0, 0.0], (8, 1)))),
    Case("MeanMapClassifier", "sample_weight zero on all bags but one",
         ValueError, r"sample_weight 0.*LLP needs at least 2",
         lambda: MeanMapClassifier().fit(X, bags, props,
                                 sample_weight=np.where(bags == 0, 1.0, 0.0))),
    Case("LLPRegressor", "instance targets with NaN", ValueError, r"y contains NaN",
         lambda: LLPRegressor(max_epochs=1, verbose=0).fit(X, np.full(8, np.nan))),
    Case("LLPRegressor", "a classification method",
         ValueError, r"classification method",
         lambda: LLPRegressor(method="vat", max_epochs=1, verbose=0).fit(X, X[:, 0])),
]
# fmt: on
assert len({case.id for case in CATALOGUE}) == len(CATALOGUE), "duplicate ids"


def means(**kw):
    """``dp_bag_means`` of two bags of two targets in [0, 1] at epsilon=1."""
    kw = {"epsilon": 1.0, "bounds": (0, 1), **kw}
    return dp_bag_means([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], **kw)


def non_finite(value):
    """``X`` with ``value`` in it, as an array, rows, sparse and float32."""
    X_bad = np.where(X > 1, value, X)
    return [X_bad, X_bad.tolist(), sp.csr_matrix(X_bad), X_bad.astype(np.float32)]


TINY = [dict(epsilon=e, mechanism="laplace") for e in (1e-300, 5e-324, 1e-160)]
TINY += [dict(epsilon=1e-300, mechanism="gaussian", delta=1e-05)]

# More inputs refused with the message of a catalogue row (the catalogue has one
# row a message): (row id, call of v, values[, pattern]). The pattern is the
# row's unless given; "{v}" in it stands for the value's repr.
# fmt: off
MORE = [
    ("fit-x-with-nan", lambda v: fitted().predict(v), [np.full((2, 3), np.nan)]),
    ("fit-bags-none-with-props-given",
     lambda v: dp_bag_means(v, [0.1, 0.2, 0.3, 0.4], epsilon=1.0, bounds=(0, 1)),
     [None]),
    ("fit-scikit-learn-s-cross-val-predict-with-predict-proba",
     lambda v: sk_cross_val_predict(v, X, bags, cv=BagKFold(2), params={"props": props},
                                    method="predict_proba"), [MeanMapClassifier()]),
    ("partial-fit-props-of-another-number-of-classes",
     lambda v: getattr(fitted(), v)(X, bags, np.column_stack([props, np.zeros(8)])),
     ["score"]),
    # the metrics' checks of y_proba (and of props) in the plots and the report
    ("metrics-y-proba-with-the-wrong-number-of-rows",
     lambda f: f(bags, props, proba[:7]), [plot_bag_calibration]),
    ("metrics-y-proba-with-the-wrong-number-of-columns",
     lambda f: f(bags, props, np.full((8, 3), 1 / 3)), [plot_bag_calibration]),
    ("metrics-y-proba-rows-not-summing-to-1", lambda f: f(bags, props, proba * 2),
     [plot_bag_calibration]),
    ("metrics-props-none",
     lambda f: f(X, bags, None) if f is check_identifiability else f(bags, None, proba),
     [plot_bag_calibration, check_identifiability]),
    ("fit-props-with-nan", lambda v: LLP().fit(X, bags, np.where(props == 1, v, props)),
     [np.inf]),
    ("fit-props-3-d", lambda v: LLP().fit(X, bags, v), ["0.5"]),
    ("fit-props-of-non-numeric-strings", lambda v: LLP().fit(X, bags, v),
     [[[0.5, 0.5]] * 7 + [[1.0]]]),
    # a targets table read by row (the default index) as one read by bag id
    ("check-bags-per-bag-targets-table-with-sum-without-size",
     lambda v: check_bags(["a", "b"], targets=pd.DataFrame(v)), [{"sum": [1.0, 2.0]}]),
    ("check-bags-per-bag-targets-table-with-a-zero-size",
     lambda v: check_bags(["a", "b"], targets=pd.DataFrame(v)),
     [{"sum": [1.0, 2.0], "size": [1, 0]}]),
    ("check-bags-per-bag-targets-table-with-unknown-columns",
     lambda v: check_bags(["a", "b"], targets=pd.DataFrame(v)),
     [{"mean": [1.0, 2.0], "total": [1, 2]}]),
    ("check-bags-per-bag-targets-table-with-a-nan-sum",
     lambda v: check_bags(["a", "b"], targets=pd.DataFrame(v)),
     [{"sum": [1.0, np.nan], "size": [1, 1]}]),
    ("splitters-no-bags-given", lambda v: next(v(2).split(X)), [BagShuffleSplit]),
    ("splitters-bagkfold-with-2-d-y", lambda v: next(v(2).split(X, np.zeros((8, 2)))),
     [BagShuffleSplit]),
    ("splitters-test-size-0-0",
     lambda v: next(BagShuffleSplit(1, test_size=v).split(X, bags)),
     [1.0, True], r"test_size must be a float in \(0, 1\).*got {v}"),
    ("splitters-test-size-0-an-int",
     lambda v: next(BagShuffleSplit(1, test_size=v).split(X, bags)), [10],
     r"test_size={v} bags must be at least 1 and fewer than the 4 bags"),
    ("splitters-min-train-bags-0",
     lambda v: next(BagShuffleSplit(1).split_bags(check_bags(bags), min_train_bags=v)),
     [-1, 1.5, True, None]),
    ("generators-bag-size-0", lambda v: UniformBagGenerator(v).fit(X), [2.5]),
    ("generators-1-d-x", lambda v: FeatureBagGenerator(0).fit(v),
     [[[1, 2], [3]], [1, 2, 3]],
     r"X must be 2-D \(n_samples, n_features\); got shape \([23],\)"),
    ("generators-make-bags-with-y-containing-nan",
     lambda v: label_proportions([0, 1], v), [["a", None]]),
    ("proportions-expand-proportions-with-bags-missing-from-the-table",
     lambda v: expand_proportions(table.iloc[:2], v), [[0, 7]],  # as long as the table
     r"no row for 1 bag id\(s\).*\[7\]"),
    ("proportions-expand-proportions-with-2-d-bags", plot_bag_sizes, [[[0, 1]]]),
    ("proportions-project-to-simplex-with-nan", project_to_simplex, [[[np.inf, 0.0]]]),
    ("proportions-project-to-simplex-of-a-scalar", project_to_simplex,
     [np.empty((2, 0))]),
    ("identifiability-x-with-nan", lambda v: check_identifiability(v, bags, props),
     non_finite(np.nan)[1:]),
    ("fit-x-with-infinity", lambda v: check_identifiability(v, bags, props),
     non_finite(np.inf) + non_finite(-np.inf)),
    ("identifiability-x-dataframe-with-nan",
     lambda v: check_identifiability(Xdf.assign(b=v), bags, props), [np.inf, -np.inf]),
    ("privacy-dp-proportions-with-epsilon-0",
     lambda v: dp_proportions(bags, labels, **v),
     [dict(epsilon=-0.5, mechanism="discrete_laplace"),
      dict(epsilon=np.nan, mechanism="discrete_gaussian", delta=1e-05)]),
    ("privacy-dp-proportions-with-epsilon-0", lambda v: means(epsilon=v), [0.0, -1]),
    ("privacy-dp-proportions-with-epsilon-too-small-for-the-discrete-laplace",
     lambda v: dp_proportions(bags, labels, **v), TINY),
    ("privacy-dp-proportions-with-epsilon-too-small-for-the-discrete-laplace",
     lambda v: dp_noise_scale(**v), TINY),
    ("privacy-dp-proportions-with-delta-with-a-pure-dp-mechanism",
     lambda v: means(delta=v), [1e-05]),
    ("privacy-dp-proportions-with-no-delta-for-the-discrete-gaussian",
     lambda v: means(mechanism="gaussian", delta=v), [None]),
    ("privacy-dp-proportions-with-no-delta-for-the-discrete-gaussian",
     lambda v: dp_proportions(bags, labels, epsilon=1.0, mechanism="discrete_gaussian",
                              delta=v),
     [1.5], r"delta must be a number in \(0, 1\).*got {v}"),
    ("privacy-dp-proportions-with-min-bag-size-0",
     lambda v: dp_proportions(bags, labels, epsilon=1.0, min_bag_size=v),
     [-3, 2.5, True, "5"], r"min_bag_size must be a positive integer or None; got {v}"),
    ("privacy-dp-proportions-with-min-bag-size-0", lambda v: means(min_bag_size=v),
     [0], r"min_bag_size must be a positive integer or None; got {v}"),
    ("privacy-dp-proportions-with-min-bag-size-that-withholds-every-bag",
     lambda v: means(min_bag_size=v), [1000], r"min_bag_size={v} withholds every bag"),
    ("privacy-dp-proportions-with-max-contributions-0",
     lambda v: dp_proportions(bags, labels, epsilon=1.0, max_contributions=v),
     [1.5, None], r"max_contributions must be a positive integer; got {v}"),
    ("privacy-dp-proportions-with-max-contributions-0",
     lambda v: means(max_contributions=v), [0]),
    ("privacy-dp-proportions-with-clamp-not-a-bool", lambda v: means(clamp=v), [1]),
    ("privacy-dp-bag-means-with-empty-bounds", lambda v: means(bounds=v),
     [(2.0, 1.0), (0.0, np.inf), None, (0.0, 1.0, 2.0), ("a", 1.0)]),
]
# fmt: on


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            id=case.id,
            marks=pytest.mark.xfail(strict=True, reason=case.xfail)
            if case.xfail
            else (),
        )
        for case in CATALOGUE
    ],
)
def test_malformed_input_gets_a_clear_error(case):
    with pytest.raises(case.exception) as info:
        case.call()
    assert re.search(case.match, str(info.value), flags=re.S), str(info.value)


ROWS = {case.id.strip("-"): case for case in CATALOGUE}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    ("row", "call", "value", "pattern"),
    [
        pytest.param(row, call, value, (*more, None)[0], id=f"{row}-{i}")
        for row, call, values, *more in MORE
        for i, value in enumerate(values)
    ],
)
def test_more_inputs_get_the_error_of_their_row(row, call, value, pattern):
    case = ROWS[row]
    with pytest.raises(case.exception) as info:
        call(value)
    pattern = (pattern or case.match).replace("{v}", re.escape(repr(value)))
    assert re.search(pattern, str(info.value), flags=re.S), str(info.value)


# --- Behaviour that takes more than one call
@pytest.mark.parametrize("make", [LLP, MeanMapClassifier])
def test_classes_orders_the_classes_of_instance_labels(make):
    """With ``fit(X, y)``, ``classes`` sets the order of ``classes_`` in both
    classifiers (they read labels through one validator)."""
    assert make(classes=["b", "a"]).fit(X, ab).classes_.tolist() == ["b", "a"]
