"""Do the bags identify an instance-level classifier?

:func:`check_identifiability` reads the bag sizes and label proportions (and
``X``, if given) and says, in milliseconds, whether an LLP fit on them can be
trusted to recover *one* instance-level classifier, or whether many
classifiers reproduce every bag's proportions equally well, so that fits
from different seeds can rank the instances differently although all of
them match the bags.

Theory it rests on
------------------
* Quadrianto, Smola, Caetano & Le (2009), "Estimating labels from label
  proportions", JMLR 10: under conditional independence of ``x`` and the
  bag given the class, the bag means are ``Pi`` times the class means, and
  the class means are recovered by solving that linear system; it needs
  the ``n_bags x n_classes`` proportion matrix ``Pi`` to have full column
  rank (at least as many bags as classes) and its error bound grows as
  ``Pi``'s smallest singular value shrinks. Here: problems 1 and 2 and
  ``canonical_correlations`` (the singular values of ``Pi``, centred and
  scaled so that they do not depend on the prior).
* Scott & Zhang (2020), "Learning from label proportions: a mutual
  contamination framework", NeurIPS: bags are paired and every pair's
  contribution is weighted by the difference of their proportions; bags
  with equal proportions carry no information, and the bound degrades as
  the proportions approach each other. Here: the between-bag share of the
  label variance (squared canonical correlations) and
  ``informative_n_bags``, the number of bags that actually differ.
* Yu, Choromanski, Kumar, Jebara & Chang (2014), "On learning from label
  proportions" (EPRM), and Busa-Fekete et al. (2023), "Easy learning from
  label proportions", NeurIPS: the number of bags plays the role of the
  number of examples (random bags of ``k`` rows are worth about ``n / k``
  labelled rows), compared with the capacity of the model. Here:
  ``effective_labels`` (Pearson's chi-square per degree of freedom of the
  bag x class table, about ``n_bags`` for random bags) against the
  effective dimension of ``X``.

Thresholds
----------
Chosen with ``benchmarks/studies/identifiability.py`` (DLLP, 5 model seeds per
grouping with the bags fixed, 35 groupings: synthetic logistic data with 6 %
positives and 20 features, and UCI Adult with 24 % positives; table in
``benchmarks/results/identifiability.md``). Seeds "disagree" when the mean
pairwise Spearman correlation of their test scores is below 0.9 or their
test AUCs differ by more than 0.05. With the values below the report warned
on all 15 groupings whose seeds disagreed and on 1 of the 20 whose seeds
agreed (Adult by race). The thresholds were set on these same groupings, so
this is agreement on the calibration data, not a held-out test.

* :data:`MIN_INFORMATIVE_BAGS_PER_DIMENSION` = 2 says when bags are few.
  Random and K-means bags whose seeds agreed had at least 3.0 informative
  bags per dimension (synthetic K-means bags; Adult random bags of 256:
  3.2). Those that disagreed had at most 1.7 (synthetic random bags of 256
  and 100 groups of a weak feature).
* :data:`MIN_BETWEEN_BAG_SHARE` = 0.03 applies to few bags. There, seeds
  agreed when the bags explained at least 4.7 % of the label variance
  (Adult: 2 groups by sex 4.7 %, 6 by relationship 21 %; synthetic: 6
  groups of the strongest feature 6.7 %). They disagreed up to 2.6 %
  (synthetic 6 groups of feature x2: 2.6 %, of x3: 1.4 %, of the weak x5:
  0.18 %, the case of issue 14; Adult random groups: at most 0.18 %). The
  exception is Adult's 5 groups by race (1.0 %): its seeds agreed, and the
  report still warns. Digits in random bags of 16 (10 classes) have few
  informative bags (21.5 for a dimension of 19.8) but share 6.6 %, so the
  report stays quiet.
* :data:`MIN_LABELS_PER_DIMENSION` = 2 catches many bags with nearly
  identical proportions. 300 synthetic bags stratified by class had 0.43
  labelled rows per dimension and stayed at chance. Groupings past rule 3
  whose seeds agreed had at least 8.3 (Adult random bags of 256).
* Without ``X`` the dimension is taken as :data:`DEFAULT_DIMENSION` = 10.

The outcome also depends on the model and its training budget. With the
benchmark's short fits, synthetic random bags of 256 disagreed (Spearman
0.64); trained 6 times longer, their seeds agreed (0.95, AUC 0.80).
Adult's correlated features let even 2 groups by sex give fits that agree
(AUC 0.78 against 0.91 with instance labels). Those fits follow the
grouping variables; the bags do not identify the classifier, which the
report mentions in ``notes``.
"""

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils import assert_all_finite

from ..core import check_bags
from ..exceptions import IdentifiabilityWarning

#: Canonical correlations at or below this count as zero (numerical rank).
RANK_TOL = 1e-6

#: Rows of ``X`` used for its effective dimension (evenly spaced, no RNG).
MAX_ROWS_FOR_DIMENSION = 2000

#: Fewer rows for very wide ``X``: rows^2 x columns stays below this.
MAX_GRAM_FLOPS = 2e9

#: Bags are "few" when fewer than this many per effective dimension of
#: ``X`` carry information (``informative_n_bags``).
MIN_INFORMATIVE_BAGS_PER_DIMENSION = 2.0

#: With few informative bags, warn when the bags explain less than this
#: share of the label variance (``between_bag_share``).
MIN_BETWEEN_BAG_SHARE = 0.03

#: Warn when the proportions are worth fewer labelled rows per class
#: contrast (``effective_labels``) than this many per effective dimension.
MIN_LABELS_PER_DIMENSION = 2.0

#: The effective dimension assumed when no ``X`` is given.
DEFAULT_DIMENSION = 10.0


def _n_columns(X):
    """Width of ``X`` as a model sees it: one-hot levels for non-numeric
    DataFrame columns."""
    if isinstance(X, pd.DataFrame):
        width = 0
        for _, column in X.items():
            if pd.api.types.is_bool_dtype(column) or not (
                pd.api.types.is_numeric_dtype(column)
            ):
                width += max(int(column.nunique(dropna=True)), 1)
            else:
                width += 1
        return width
    if sp.issparse(X):
        return int(X.shape[1])
    X = np.asarray(X)
    return int(np.prod(X.shape[1:])) if X.ndim > 1 else 1


def _numeric_rows(X, rows):
    """Rows ``rows`` of ``X`` as a dense float matrix (one-hot for
    non-numeric DataFrame columns)."""
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
    X = np.asarray(X)
    return X[rows].reshape(len(rows), -1).astype(np.float64)


def _check_finite_X(X):
    """Refuse NaN or infinite values in ``X`` (its numeric columns, for a
    DataFrame): the effective dimension would silently leave such columns
    out."""
    if isinstance(X, pd.DataFrame):
        for name, column in X.items():
            if not pd.api.types.is_numeric_dtype(column) or (
                pd.api.types.is_bool_dtype(column)
            ):
                continue  # categories: missing values are a level of none
            values = column.to_numpy(dtype=np.float64, na_value=np.nan)
            if not np.all(np.isfinite(values)):
                raise ValueError(
                    f"X has NaN or infinite values in column {name!r}; "
                    "check_identifiability needs finite features: impute or "
                    "drop them first."
                )
        return
    values = X.data if sp.issparse(X) else np.asarray(X)
    if values.dtype.kind not in "fc":
        if values.dtype.kind in "biu":
            return  # integers, booleans: finite
        try:
            values = values.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"X must hold numbers (encode text columns first, or pass a "
                f"DataFrame whose text columns are categorical): {exc}"
            ) from None
    try:
        assert_all_finite(values, input_name="X")
    except ValueError as exc:
        raise ValueError(
            f"{exc} check_identifiability needs finite features in X: impute "
            "or drop the rows or columns with NaN or infinite values first."
        ) from None


def _effective_dimension(X, n_samples):
    """Participation ratio of the covariance spectrum of ``X``.

    ``(sum l)^2 / sum l^2`` over the eigenvalues ``l`` of the covariance
    matrix of (at most :data:`MAX_ROWS_FOR_DIMENSION` evenly spaced rows of)
    ``X``, every column standardised except 0/1 indicator columns (one-hot
    levels), which keep their variance ``q (1 - q)``, so that a rare level
    weighs little: ``d`` for ``d`` uncorrelated standardised features, 1
    when every column is a copy of one. Constant and non-finite columns are
    left out. About 20 for the 20 features of the synthetic benchmark data
    and for the 64 pixels of scikit-learn's digits, 13 for Adult's 108
    encoded columns (6 scaled numerics, 102 one-hot levels).
    """
    width = max(_n_columns(X), 1)
    # at most MAX_ROWS_FOR_DIMENSION rows, fewer for very wide X (images), so
    # that the Gram matrix costs at most about MAX_GRAM_FLOPS
    n_rows = int(
        min(n_samples, MAX_ROWS_FOR_DIMENSION, (MAX_GRAM_FLOPS / width) ** 0.5)
    )
    rows = np.unique(np.linspace(0, n_samples - 1, max(n_rows, 2)).astype(np.int64))
    values = _numeric_rows(X, rows)
    values = values[:, np.all(np.isfinite(values), axis=0)]
    indicator = np.all((values == 0) | (values == 1), axis=0)
    values = values - values.mean(axis=0)
    std = values.std(axis=0)
    keep = std > 1e-12 * np.maximum(1.0, np.abs(values).max(axis=0, initial=0.0))
    scale = np.where(indicator, 1.0, std)
    values = values[:, keep] / scale[keep]
    if values.shape[1] == 0 or len(values) < 2:
        return 0.0
    # (sum l)^2 / sum l^2 = trace(C)^2 / |C|_F^2, from the smaller Gram matrix
    gram = values @ values.T if len(values) < values.shape[1] else values.T @ values
    return float(np.trace(gram) ** 2 / np.sum(gram**2))


def _participation(values):
    """``(sum v)^2 / sum v^2`` of non-negative values; 0 if all are 0."""
    total = values.sum()
    return float(total**2 / (values**2).sum()) if total > 0 else 0.0


@dataclasses.dataclass(frozen=True, repr=False)
class IdentifiabilityReport:
    """What the bags and their proportions can and cannot pin down.

    Returned by :func:`check_identifiability`; every number comes from the
    bag sizes (or total sample weights) and proportions, and from ``X``
    where given. ``ok`` is True when no problem was found; ``str(report)``
    prints all of it.

    Attributes
    ----------
    n_samples : int
        Distinct rows that belong to some bag.
    n_bags : int
        Number of bags.
    n_classes : int
        Number of classes (columns of the proportions).
    classes : tuple
        Class labels, in column order: the names given (``classes=``, the
        columns of a ``props`` DataFrame, the keys of a dict) or, for
        unnamed proportions, the column numbers ``0..n_classes-1``.
    n_features : int or None
        Columns of ``X`` (a DataFrame's non-numeric columns counted as their
        number of levels, as after one-hot encoding); None without ``X``.
    effective_dimension : float or None
        Participation ratio of the covariance spectrum of ``X`` (columns
        standardised, 0/1 indicator columns kept as they are): about how
        many directions a model of ``X`` has to pin down. None without
        ``X``.
    prior : tuple of float
        Overall class proportions (bags weighed by their size or total
        sample weight).
    proportion_std : tuple of float
        Standard deviation of every class's proportion across bags (bags
        weighed as in ``prior``).
    relative_spread : tuple of float
        ``proportion_std / prior`` per class (NaN for a class absent from
        every bag).
    canonical_correlations : tuple of float
        The ``n_classes - 1`` canonical correlations between bag membership
        and class, largest first: the singular values of the centred
        proportion matrix, rows scaled by the square root of the bag shares
        and columns by one over the square root of the prior
        (correspondence analysis of the bag x class table). Their squares
        sum to Pearson's mean square contingency; with two classes the one
        value squared is the share of the label variance that lies between
        bags, ``Var_bags(p) / (p_bar (1 - p_bar))``: 1 for pure bags, 0 when
        every bag has the prior, about ``1 / k`` for random bags of ``k``.
    rank : int
        Numerical rank of that matrix (values above :data:`RANK_TOL`);
        below ``n_classes - 1``, some class contrast never varies.
    condition_number : float
        Largest over smallest canonical correlation (inf when rank
        deficient).
    effective_n_bags : float
        ``(sum n_B)^2 / sum n_B^2`` over bag sizes (or total weights): the
        number of equal bags with the same spread of sizes.
    informative_n_bags : float
        Participation ratio of the bags' contributions to the weakest class
        contrast: how many bags carry its information (all ``B`` for ``B``
        bags equally far from the prior, about a third of them for random
        bags, 1 when a single bag differs from all the others).
    effective_labels : float
        Pearson's chi-square of the bag x class table per degree of freedom
        (``n_classes - 1``), with the Kish effective number of rows under
        ``sample_weight``: roughly how many labelled rows the proportions
        are worth per class contrast (about ``n_bags - 1`` for random bags,
        ``n_samples`` for pure bags, 0 for identical proportions).
    problems : tuple of str
        One sentence per problem; empty when ``ok``. These make
        :func:`warn_if_unidentifiable` warn.
    notes : tuple of str
        Observations that do not warn (e.g. few but very different bags).
    positional_classes : bool
        True when the proportions named no classes, so ``classes`` holds
        column numbers; ``str(report)`` then says how to name them.
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
        """True when no identifiability problem was found."""
        return not self.problems

    @property
    def between_bag_share(self):
        """Mean squared canonical correlation: the share of the label
        variance that lies between bags, per class contrast (Pearson's mean
        square contingency over ``n_classes - 1``; for two classes
        ``Var_bags(p) / (p_bar (1 - p_bar))``)."""
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

    def _class_names(self):
        names = ", ".join(map(repr, self.classes))
        if self.positional_classes:
            return f"(unnamed: columns {names} of props; pass classes= to name them)"
        return f"[{names}]"

    def __str__(self):
        def floats(values, fmt="{:.3g}"):
            return ", ".join(fmt.format(v) for v in values)

        prior = floats(self.prior)
        if not self.positional_classes:
            prior = ", ".join(f"{c}: {p:.3g}" for c, p in zip(self.classes, self.prior))
        verdict = "no problem found" if self.ok else f"{len(self.problems)} problem(s)"
        lines = [
            f"Identifiability report: {verdict}",
            f"  bags: {self.n_bags} over {self.n_samples} rows; effective number "
            f"{self.effective_n_bags:.1f} (sizes), informative "
            f"{self.informative_n_bags:.1f}",
            f"  classes: {self.n_classes} {self._class_names()}",
        ]
        if self.n_features is not None:
            lines.append(
                f"  features: {self.n_features} (effective dimension "
                f"{self.effective_dimension:.1f})"
            )
        lines += [
            f"  prior: {prior}",
            f"  std across bags: {floats(self.proportion_std)} (relative "
            f"{floats(self.relative_spread, '{:.2f}')})",
            f"  canonical correlations bag-class: "
            f"{floats(self.canonical_correlations)} (rank {self.rank}, "
            f"condition {self.condition_number:.3g}); between-bag share of "
            f"the label variance {self.between_bag_share:.3g}",
            f"  effective labels per class contrast: {self.effective_labels:.1f}",
        ]
        lines += [f"  problem: {problem}" for problem in self.problems]
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)


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
    needed = MIN_INFORMATIVE_BAGS_PER_DIMENSION * dimension
    few = report.informative_n_bags < needed
    if report.rank == n_contrasts and few and share < MIN_BETWEEN_BAG_SHARE:
        problems.append(
            f"only {report.informative_n_bags:.1f} of the {report.n_bags} bags "
            f"carry information (fewer than {MIN_INFORMATIVE_BAGS_PER_DIMENSION:g} "
            f"per dimension for {source}) and they explain "
            f"{100 * share:.2g} % of the label variance (less than "
            f"{100 * MIN_BETWEEN_BAG_SHARE:.0f} %): many classifiers reproduce "
            "every bag's proportions, and fits from different seeds can rank "
            "the instances differently while all match the bags."
        )
    elif report.rank == n_contrasts and few:
        notes.append(
            f"only {report.informative_n_bags:.1f} of the {report.n_bags} bags "
            f"carry information (fewer than {MIN_INFORMATIVE_BAGS_PER_DIMENSION:g} "
            f"per dimension for {source}): they do not pin the classifier down, "
            "which follows the directions in which the bags differ; their "
            f"proportions differ enough ({100 * share:.2g} % of the label "
            "variance between bags) that fits from different seeds tend to agree."
        )
    if report.rank == n_contrasts and (
        report.effective_labels < MIN_LABELS_PER_DIMENSION * dimension
    ):
        problems.append(
            f"the proportions differ so little from bag to bag that they are "
            f"worth about {report.effective_labels:.0f} labelled rows per class "
            f"contrast, less than {MIN_LABELS_PER_DIMENSION:g} per dimension for "
            f"{source}."
        )
    return tuple(problems), tuple(notes)


def check_identifiability(bags, props, X=None, *, sample_weight=None, classes=None):
    """Check whether bags and their proportions can identify a classifier.

    Cheap diagnostics (milliseconds for 10^5 rows) of whether fitting an
    instance classifier to these bags is well posed: the number of bags
    against the number of classes and the dimension of ``X``, how much the
    proportions vary from bag to bag (canonical correlations between bag
    and class, the rank and condition of the proportion matrix), how many
    bags carry that variation, and how many labelled rows it is worth. See
    the module documentation for the theory and for the measurements that
    set the thresholds. :func:`warn_if_unidentifiable` turns the problems
    into an :class:`~sklearn_llp.exceptions.IdentifiabilityWarning`.

    The report flags:

    1. fewer bags than classes;
    2. a rank-deficient proportion matrix (a class contrast that never
       varies);
    3. fewer than :data:`MIN_INFORMATIVE_BAGS_PER_DIMENSION` informative
       bags per effective dimension of ``X`` whose proportions explain less
       than :data:`MIN_BETWEEN_BAG_SHARE` of the label variance (few groups
       with near-equal rates, the case that fits from different seeds
       disagree on);
    4. proportions worth fewer than :data:`MIN_LABELS_PER_DIMENSION`
       labelled rows per effective dimension (many bags, nearly identical
       proportions).

    Without ``X`` the dimension is :data:`DEFAULT_DIMENSION`. A clean report
    is no guarantee: the classifier must still be able to fit, and
    feature-defined groups only inform along the directions in which they
    differ.

    Parameters
    ----------
    bags : array-like, DataFrame, sparse matrix, list of arrays or Bags
        The bag of every row, in any form
        :func:`~sklearn_llp.core.check_bags` accepts (one id per row,
        composite keys, a membership matrix, lists of row indices).
    props : array-like, DataFrame, Series or dict
        The bags' label proportions: sample-aligned, a positive-class
        fraction, or a per-bag table indexed by bag id; None if ``bags`` is
        a :class:`~sklearn_llp.core.Bags` carrying them.
    X : array-like, DataFrame or sparse matrix, default=None
        The instances; its effective dimension is what the bags are
        compared with. A DataFrame's non-numeric columns count as one-hot
        levels.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every row: bags are weighed by their total weight, and
        ``effective_labels`` uses the Kish effective number of rows
        ``(sum w)^2 / sum w^2``.
    classes : array-like of shape (n_classes,), default=None
        Names of the proportions' columns (e.g. ``FeatureBagGenerator``'s
        ``classes_``), shown in the report. Defaults to the columns of a
        ``props`` DataFrame, else the column numbers.

    Returns
    -------
    report : IdentifiabilityReport

    Raises
    ------
    ValueError, TypeError
        For invalid bags or proportions, as
        :func:`~sklearn_llp.core.check_bags` raises them; a ValueError
        naming ``X`` when it holds NaN or infinite values (in a DataFrame,
        in its numeric columns).

    Examples
    --------
    Six large groups whose positive rates are 3 to 6 %:

    >>> import numpy as np
    >>> from sklearn_llp.bags import check_identifiability
    >>> bags = np.repeat(np.arange(6), 5000)
    >>> rates = np.array([0.03, 0.035, 0.04, 0.05, 0.055, 0.06])
    >>> X = np.random.RandomState(0).normal(size=(30000, 20))
    >>> report = check_identifiability(bags, rates[bags], X)
    >>> report.ok
    False
    >>> round(report.between_bag_share, 4), round(report.effective_labels)
    (0.0027, 81)

    Random bags of 16 rows:

    >>> y = (np.random.RandomState(1).uniform(size=30000) < 0.05).astype(float)
    >>> bags = np.arange(30000) // 16
    >>> sums = np.bincount(bags, weights=y) / 16
    >>> check_identifiability(bags, sums[bags], X).ok
    True
    """
    n_samples = None
    if X is not None:
        _check_finite_X(X)
        n_samples = X.shape[0] if hasattr(X, "shape") else len(X)
    validated = check_bags(
        bags,
        props,
        n_samples=n_samples,
        sample_weight=sample_weight,
        classes=classes,
        require_props=True,
    )
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
    if full_rank:
        weakest = (scaled @ vt[n_contrasts - 1]) ** 2
    else:
        weakest = np.zeros(n_bags)
    if validated.weights is None:
        n_rows = float(len(validated.members))
    else:
        n_rows = _participation(validated.weights[validated.members])
    n_features = effective_dimension = None
    if X is not None:
        n_features = _n_columns(X)
        effective_dimension = _effective_dimension(X, validated.n_samples)
    report = IdentifiabilityReport(
        n_samples=int(np.count_nonzero(np.bincount(validated.members, minlength=1))),
        n_bags=int(n_bags),
        n_classes=int(n_classes),
        classes=tuple(validated.classes.tolist()),
        positional_classes=bool(validated.positional_classes),
        n_features=n_features,
        effective_dimension=effective_dimension,
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
    """Warn with the problems of an :class:`IdentifiabilityReport`.

    Issues one :class:`~sklearn_llp.exceptions.IdentifiabilityWarning` whose
    message lists ``report.problems``; does nothing when ``report.ok``.

    Parameters
    ----------
    report : IdentifiabilityReport
        From :func:`check_identifiability`.
    stacklevel : int, default=2
        As in :func:`warnings.warn`, counted from the caller of this
        function: 2 points at the caller's caller (e.g. the user's
        ``fit(...)`` line when called from inside ``fit``).

    Returns
    -------
    warned : bool
        Whether a warning was issued.
    """
    if report.ok:
        return False
    remedy = ""
    if report.n_classes == 2 and report.rank == 1:
        # Measured in benchmarks/accuracy.py (Adult, 10 and 25 random bags):
        # the proportion-matching networks ranked test rows at chance or
        # worse, the debiased loss and Mean Map did not.
        remedy = (
            " With few large bags of two classes, method='easyllp' and "
            "sklearn_llp.linear.MeanMapClassifier measured far better than "
            "the proportion loss (README, 'Methods')."
        )
    warnings.warn(
        "The bags may not identify an instance-level classifier: "
        + " ".join(f"({i}) {p}" for i, p in enumerate(report.problems, 1))
        + remedy
        + " Call sklearn_llp.bags.check_identifiability(bags, props, X) for "
        "the full report.",
        IdentifiabilityWarning,
        stacklevel=stacklevel + 1,
    )
    return True
