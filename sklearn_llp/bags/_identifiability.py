"""Can the bags identify an instance-level classifier (:ref:`identifiability`)?"""

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils import assert_all_finite

from ..core import Bags, check_bags, num_rows
from ..exceptions import IdentifiabilityWarning

#: Canonical correlations at or below this count as zero (numerical rank).
RANK_TOL = 1e-6
#: Rows of ``X`` for its effective dimension (evenly spaced, no RNG) ...
MAX_ROWS_FOR_DIMENSION = 2000
#: ... fewer for very wide ``X``: rows^2 x columns stays below this.
MAX_GRAM_FLOPS = 2e9
#: "Few" informative bags: fewer than this per effective dimension.
MIN_INFORMATIVE_BAGS_PER_DIMENSION = 2.0
#: With few informative bags, warn below this ``between_bag_share``.
MIN_BETWEEN_BAG_SHARE = 0.03
#: Warn below this many ``effective_labels`` per effective dimension.
MIN_LABELS_PER_DIMENSION = 2.0
#: The effective dimension assumed without ``X``.
DEFAULT_DIMENSION = 10.0


def _is_number(column):
    types = pd.api.types
    return types.is_numeric_dtype(column) and not types.is_bool_dtype(column)


def _n_columns(X):
    """Width of ``X`` as a model sees it (a DataFrame's other columns one-hot)."""
    if isinstance(X, pd.DataFrame):
        return sum(
            1 if _is_number(col) else max(int(col.nunique()), 1) for _, col in X.items()
        )
    shape = _shape(X)
    return int(np.prod(shape[1:])) if len(shape) > 1 else 1


def _shape(X):
    try:  # a ragged list (row lists of bags): 1-D
        return X.shape if hasattr(X, "shape") else np.shape(X)
    except ValueError:
        return (len(X),)


def _numeric_rows(X, rows):
    """Rows ``rows`` of ``X`` as a dense float matrix, categories one-hot."""
    if isinstance(X, pd.DataFrame):
        part = X.iloc[rows]
        numeric = part.select_dtypes("number")
        other = part.drop(columns=numeric.columns)
        blocks = [numeric.to_numpy(dtype=np.float64, na_value=np.nan)]
        if other.shape[1]:
            dummies = pd.get_dummies(other.astype(object), dummy_na=False)
            blocks.append(dummies.to_numpy(dtype=np.float64))
        return np.hstack(blocks)
    if sp.issparse(X):
        return sp.csr_matrix(X)[rows].toarray().astype(np.float64)
    return np.asarray(X)[rows].reshape(len(rows), -1).astype(np.float64)


def _check_finite_X(X):
    """Refuse NaN or infinite features, which the dimension would leave out."""
    fix = "check_identifiability needs finite features: impute or drop them first."
    if isinstance(X, pd.DataFrame):
        for name, column in X.items():  # categories: a missing value is no level
            if _is_number(column) and not np.all(
                np.isfinite(column.to_numpy(dtype=np.float64, na_value=np.nan))
            ):
                raise ValueError(
                    f"X has NaN or infinite values in column {name!r}; {fix}"
                )
        return
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.dtype.kind not in "biufc":  # numbers are checked as they are
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                "X must hold numbers (encode text columns first, or pass a "
                f"DataFrame whose text columns are categorical): {exc}"
            ) from None
    try:
        assert_all_finite(values, input_name="X")
    except ValueError as exc:
        raise ValueError(f"{exc} {fix}") from None


def _effective_dimension(X, n_samples):
    """Participation ratio of the covariance of evenly spaced rows of ``X``."""
    width = max(_n_columns(X), 1)
    affordable = int((MAX_GRAM_FLOPS / width) ** 0.5)  # fewer rows for a wide X
    n_rows = min(n_samples, MAX_ROWS_FOR_DIMENSION, affordable)
    rows = np.unique(np.linspace(0, n_samples - 1, max(n_rows, 2)).astype(np.int64))
    values = _numeric_rows(X, rows)
    values = values[:, np.all(np.isfinite(values), axis=0)]
    indicator = np.all((values == 0) | (values == 1), axis=0)
    values = values - values.mean(axis=0)
    std = values.std(axis=0)
    keep = std > 1e-12 * np.maximum(1.0, np.abs(values).max(axis=0, initial=0.0))
    values = values[:, keep] / np.where(indicator, 1.0, std)[keep]
    if values.shape[1] == 0 or len(values) < 2:
        return 0.0
    # trace(C)^2 / |C|_F^2, from the smaller Gram matrix
    gram = values @ values.T if len(values) < values.shape[1] else values.T @ values
    return float(np.trace(gram) ** 2 / np.sum(gram**2))


def _participation(values):
    """``(sum v)^2 / sum v^2`` of non-negative values; 0 if all are 0."""
    total = values.sum()
    return float(total**2 / (values**2).sum()) if total > 0 else 0.0


@dataclasses.dataclass(frozen=True, repr=False)
class IdentifiabilityReport:
    """What the bags and their proportions can and cannot pin down.

    Returned by :func:`check_identifiability`: ``ok`` when ``problems`` is
    empty; ``print(report)`` shows every number (:ref:`identifiability_numbers`).

    Attributes
    ----------
    n_samples, n_bags, n_classes, rank : int
        Bagged rows, bags, classes; rank of the proportion matrix.
    classes : tuple
        Class labels in column order (column numbers if ``positional_classes``).
    n_features, effective_dimension : int or None, float or None
        Width and effective dimension of ``X`` (None without ``X``).
    prior, proportion_std, relative_spread, canonical_correlations : tuple
    condition_number, effective_n_bags, informative_n_bags, effective_labels : float
    problems, notes : tuple of str
        One sentence per problem (these warn) or observation.
    positional_classes : bool
        Whether the proportions named no classes.
    """

    n_samples: int
    n_bags: int
    n_classes: int
    classes: tuple
    n_features: int | None
    effective_dimension: float | None
    prior: tuple
    proportion_std: tuple
    relative_spread: tuple
    canonical_correlations: tuple
    rank: int
    condition_number: float
    effective_n_bags: float
    informative_n_bags: float
    effective_labels: float
    problems: tuple = ()
    notes: tuple = ()
    positional_classes: bool = False

    @property
    def ok(self):
        """True when no problem was found."""
        return not self.problems

    @property
    def between_bag_share(self):
        """Share of the label variance between bags: the mean squared correlation."""
        correlations = np.asarray(self.canonical_correlations)
        return float(np.mean(correlations**2)) if correlations.size else 0.0

    def __repr__(self):
        verdict = "ok" if self.ok else f"{len(self.problems)} problem(s)"
        features = "" if self.n_features is None else f", n_features={self.n_features}"
        return (
            f"IdentifiabilityReport({verdict}: n_bags={self.n_bags}, "
            f"n_classes={self.n_classes}{features}, "
            f"between_bag_share={self.between_bag_share:.3g}, "
            f"informative_n_bags={self.informative_n_bags:.1f}, "
            f"effective_labels={self.effective_labels:.1f})"
        )

    def __str__(self):
        def floats(values, fmt="{:.3g}"):
            return ", ".join(fmt.format(v) for v in values)

        names = ", ".join(map(repr, self.classes))
        prior = floats(self.prior)
        if self.positional_classes:
            names = f"(unnamed: columns {names} of props; pass classes= to name them)"
        else:
            names = f"[{names}]"
            prior = ", ".join(f"{c}: {p:.3g}" for c, p in zip(self.classes, self.prior))
        verdict = "no problem found" if self.ok else f"{len(self.problems)} problem(s)"
        lines = [
            f"Identifiability report: {verdict}",
            f"  bags: {self.n_bags} over {self.n_samples} rows; effective number "
            f"{self.effective_n_bags:.1f} (sizes), informative "
            f"{self.informative_n_bags:.1f}",
            f"  classes: {self.n_classes} {names}",
        ]
        if self.n_features is not None:
            dimension = f"effective dimension {self.effective_dimension:.1f}"
            lines.append(f"  features: {self.n_features} ({dimension})")
        lines += [
            f"  prior: {prior}",
            f"  std across bags: {floats(self.proportion_std)} (relative "
            f"{floats(self.relative_spread, '{:.2f}')})",
            "  how well bags separate the classes (canonical correlations, 0: "
            f"not at all, 1: pure bags): {floats(self.canonical_correlations)} "
            f"(rank {self.rank}, condition {self.condition_number:.3g}); share "
            f"of the label variance between bags {self.between_bag_share:.3g}",
            f"  worth about {self.effective_labels:.1f} labelled rows per class "
            "contrast (a direction in which the classes differ)",
        ]
        lines += [f"  problem: {p}" for p in self.problems]
        return "\n".join(lines + [f"  note: {n}" for n in self.notes])


def _findings(report):
    """The problems and the notes of a report's numbers."""
    problems, notes = [], []
    n_contrasts = report.n_classes - 1
    if report.n_bags < report.n_classes:
        problems.append(
            f"{report.n_bags} bag(s) for {report.n_classes} classes: with fewer "
            "bags than classes the proportions cannot separate the classes (the "
            "bag x class proportion matrix has rank below the number of classes)."
        )
    elif report.rank < n_contrasts:
        problems.append(
            f"the bag proportions vary along only {report.rank} of the "
            f"{n_contrasts} class contrast(s) (rank-deficient proportion "
            "matrix): some classes keep the same proportions relative to each "
            "other in every bag, so no fit can tell them apart."
        )
    if report.effective_dimension is None:
        dimension = DEFAULT_DIMENSION
        source = f"{dimension:g}, the dimension assumed without X"
    else:
        dimension = report.effective_dimension
        source = f"the effective dimension of X ({dimension:.1f})"
    share = report.between_bag_share
    full_rank = report.rank == n_contrasts
    few = (
        f"only {report.informative_n_bags:.1f} of the {report.n_bags} bags carry "
        f"information (fewer than {MIN_INFORMATIVE_BAGS_PER_DIMENSION:g} per "
        f"dimension for {source})"
    )
    needed = MIN_INFORMATIVE_BAGS_PER_DIMENSION * dimension
    if full_rank and report.informative_n_bags < needed:
        if share < MIN_BETWEEN_BAG_SHARE:
            problems.append(
                f"{few} and they explain {100 * share:.2g} % of the label variance "
                f"(less than {100 * MIN_BETWEEN_BAG_SHARE:.0f} %): many classifiers "
                "reproduce every bag's proportions, and fits from different seeds can "
                "rank the instances differently while all match the bags."
            )
        else:
            notes.append(
                f"{few}: they do not pin the classifier down, which follows the "
                "directions in which the bags differ; their proportions differ "
                f"enough ({100 * share:.2g} % of the label variance between "
                "bags) that fits from different seeds tend to agree."
            )
    if full_rank and report.effective_labels < MIN_LABELS_PER_DIMENSION * dimension:
        problems.append(
            "the proportions differ so little from bag to bag that they are worth "
            f"about {report.effective_labels:.0f} labelled rows per class contrast, "
            f"less than {MIN_LABELS_PER_DIMENSION:g} per dimension for {source}."
        )
    return tuple(problems), tuple(notes)


def check_identifiability(X, bags, props=None, *, sample_weight=None, classes=None):
    """Check whether bags and their proportions can identify a classifier.

    How much the proportions vary across bags against the classes and the effective
    dimension of ``X`` (:ref:`identifiability_report`); arguments as in ``fit``.

    Parameters
    ----------
    X : array-like, DataFrame or sparse matrix of shape (n_samples, ...) or None
        The instances (finite), for the effective dimension; None: 10.
    bags, props : array-like, DataFrame, sparse matrix, list of arrays or Bags
        The bags and their label proportions (:ref:`data_model`); ``props``
        None when ``bags`` is a ``Bags`` that holds them.
    sample_weight : array-like of shape (n_samples,), default=None
    classes : array-like of shape (n_classes,), default=None
        Names of the proportions' columns, shown in the report.

    Returns
    -------
    report : IdentifiabilityReport

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.bags import check_identifiability
    >>> bags = np.repeat(np.arange(6), 5000)  # 6 groups, rates of 3 to 6 %
    >>> rates = np.array([0.03, 0.035, 0.04, 0.05, 0.055, 0.06])
    >>> X = np.random.RandomState(0).normal(size=(30000, 20))
    >>> report = check_identifiability(X, bags, rates[bags])
    >>> report.ok, round(report.between_bag_share, 4)
    (False, 0.0027)
    """
    if isinstance(X, Bags) or (X is not None and len(_shape(X)) < 2):
        raise TypeError(
            "check_identifiability takes (X, bags, props), the order of fit; "
            f"its first argument X is {'a Bags' if isinstance(X, Bags) else '1-D'}"
            " (bags first was the earlier order). Call "
            "check_identifiability(X, bags, props) (X=None: no features)."
        )
    if X is not None:
        _check_finite_X(X)
    n_samples = None if X is None else num_rows(X)
    given = dict(classes=classes, sample_weight=sample_weight, require_props=True)
    validated = check_bags(bags, props, n_samples=n_samples, **given)
    props = validated.props
    n_bags, n_classes = props.shape
    totals = validated.total_weights()
    share = totals / totals.sum()
    prior = share @ props
    centred = props - prior
    std = np.sqrt(share @ centred**2)
    present = prior > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(present, std / prior, np.nan)
    n_contrasts = n_classes - 1
    scaled = np.sqrt(share)[:, None] * centred[:, present] / np.sqrt(prior[present])
    _, singular, vt = np.linalg.svd(scaled, full_matrices=False)
    correlations = np.zeros(n_contrasts)
    n_found = min(len(singular), int(present.sum()) - 1, n_contrasts)
    correlations[:n_found] = np.clip(singular[:n_found], 0.0, 1.0)
    correlations[correlations <= RANK_TOL] = 0.0  # rounding, not variation
    rank = int(np.sum(correlations > 0))
    full_rank = rank == n_contrasts
    condition = float(correlations[0] / correlations[-1]) if full_rank else math.inf
    # every bag's contribution to the weakest class contrast
    weakest = (scaled @ vt[n_contrasts - 1]) ** 2 if full_rank else np.zeros(n_bags)
    pairs, weights = validated.members, validated.weights  # Kish's rows:
    n_rows = _participation(np.ones(len(pairs)) if weights is None else weights[pairs])
    report = IdentifiabilityReport(
        n_samples=len(validated.distinct_rows()),
        n_bags=int(n_bags),
        n_classes=int(n_classes),
        classes=tuple(validated.classes.tolist()),
        positional_classes=bool(validated.positional_classes),
        n_features=None if X is None else _n_columns(X),
        effective_dimension=None if X is None else _effective_dimension(X, n_samples),
        prior=tuple(prior.tolist()),
        proportion_std=tuple(std.tolist()),
        relative_spread=tuple(relative.tolist()),
        canonical_correlations=tuple(correlations.tolist()),
        rank=rank,
        condition_number=condition,
        effective_n_bags=_participation(totals),
        informative_n_bags=_participation(weakest),
        effective_labels=float(n_rows * np.sum(correlations**2) / n_contrasts),
    )
    problems, notes = _findings(report)
    return dataclasses.replace(report, problems=problems, notes=notes)


def warn_if_unidentifiable(report, stacklevel=2):
    """Warn with ``report.problems``, if any, and return whether it warned."""
    if report.ok:
        return False
    remedy = ""
    if report.n_classes == 2 and report.rank == 1:
        # measured in benchmarks/accuracy.py (Adult, 10 and 25 random bags)
        remedy = (
            " With few large bags of two classes, method='easyllp' and "
            "sklearn_llp.linear.MeanMapClassifier measured far better than "
            "the proportion loss (user guide, 'Methods')."
        )
    warnings.warn(
        "The bags may not identify an instance-level classifier: "
        + " ".join(f"({i}) {p}" for i, p in enumerate(report.problems, 1))
        + remedy
        + " Call sklearn_llp.bags.check_identifiability(X, bags, props) for "
        "the full report.",
        IdentifiabilityWarning,
        stacklevel=stacklevel + 1,
    )
    return True
