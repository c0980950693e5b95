"""Simulated differentially private releases of bag proportions and bag means.

Bags are read by :func:`~sklearn_llp.core.check_bags`, in any of its forms;
the accounting behind the noise is in the user guide,
:ref:`privacy_accounting`.
"""

import math

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from ..bags import label_proportions
from ..core import check_bags
from ._mechanisms import (
    MECHANISMS,
    _check_count,
    _check_delta,
    _check_epsilon,
    _check_mechanism,
    _check_sensitivity,
    _checked_scale,
    _draw,
    noise_variance,
)
from ._simplex import project_to_simplex

#: The neighbouring relation of :func:`dp_proportions`, as its ``attrs`` say.
NEIGHBOURS = "replace-one label, bag sizes public"

#: The neighbouring relation of :func:`dp_bag_means`.
SUM_NEIGHBOURS = "replace-one value, bag sizes public"

_SUM_MECHANISMS = ("laplace", "gaussian", "analytic_gaussian")

_POST_PROCESSING = ("project", "clip")


def read_bags(bags, n_samples=None):
    """Disjoint bags in any form :func:`~sklearn_llp.core.check_bags` reads.

    Rows of id ``-1`` (and rows in no bag of a membership form) get code
    ``-1``. ``n_samples`` is passed only to forms that need it (row-index
    lists), so that a ``y`` of the wrong length is reported against the rows
    the bags give.
    """
    if bags is None:
        raise TypeError("bags is None: pass one bag id per row.")
    try:
        validated = check_bags(bags, min_bags=0, allow_unbagged=True)
    except TypeError:
        if n_samples is None:
            raise
        validated = check_bags(
            bags, n_samples=n_samples, min_bags=0, allow_unbagged=True
        )
    if validated.overlapping:
        raise ValueError(
            "bags overlap (a row is in several bags); the releases count every "
            "row in at most one bag, and their sensitivity assumes it. Pass "
            "disjoint bags: one bag id per row (-1 for a row in no bag), or a "
            "membership matrix with at most one nonzero per row."
        )
    if validated.weights is not None:
        raise ValueError(
            "bags is a Bags object with sample weights, which a release does "
            "not use (it counts rows); pass the bags validated without "
            "sample_weight."
        )
    return validated


def _nonempty(validated):
    if validated.n_bags == 0:
        raise ValueError("Every entry of bags is -1 (no bag); nothing to release.")
    return validated


def _check_min_bag_size(min_bag_size, sizes):
    """``min_bag_size`` and the mask of the bags kept (all without one)."""
    min_bag_size = _check_count(min_bag_size, "min_bag_size", none_ok=True)
    if min_bag_size is None:
        return None, np.ones(len(sizes), dtype=bool)
    kept = sizes >= min_bag_size
    if not kept.any():
        raise ValueError(
            f"min_bag_size={min_bag_size} withholds every bag (the largest has "
            f"{int(sizes.max())} rows); nothing would be released."
        )
    return min_bag_size, kept


def _check_clamp(clamp):
    if not isinstance(clamp, (bool, np.bool_)):
        raise ValueError(f"clamp must be True or False; got {clamp!r}.")
    return bool(clamp)


def _check_bounds(bounds):
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError(
            f"bounds must be a pair (lo, hi) of finite numbers; got {bounds!r}."
        ) from None
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(
            f"bounds must be a pair (lo, hi) of finite numbers with lo < hi; got "
            f"{bounds!r}."
        )
    return lo, hi


def _noise_attrs(noise, scale):
    variance = noise_variance(noise, scale)
    return {
        "noise": noise,
        "noise_scale": scale,
        "noise_variance": variance,
        "noise_std": math.sqrt(variance),
    }


def dp_proportions(
    bags,
    y,
    epsilon,
    *,
    mechanism="laplace",
    delta=None,
    sensitivity=None,
    max_contributions=1,
    min_bag_size=None,
    clamp=False,
    classes=None,
    post_processing="project",
    return_counts=False,
    random_state=None,
):
    """Differentially private label proportions of every bag (a simulated release).

    Adds noise to every class count of every bag, optionally clamps the
    counts to ``[0, n_B]``, withholds the bags under ``min_bag_size`` and
    turns the counts into shares with the public bag sizes: the forms a
    learner receives privacy-protected aggregates in. (epsilon, delta)-DP
    for neighbouring data sets that differ in one person's label, with the
    same people in the same bags (bag sizes public); see
    :ref:`privacy_accounting`. The noise comes from numpy's floating-point
    samplers: a simulation, not a hardened release.

    Parameters
    ----------
    bags : array-like, sparse matrix, list of arrays or Bags
        Disjoint bags in any form :func:`~sklearn_llp.core.check_bags`
        reads; rows of id ``-1`` are in no bag and left out.
    y : array-like of shape (n_samples,)
        Class label of every row.
    epsilon : float
        Privacy budget of the whole table, positive; ``np.inf`` releases the
        exact proportions.
    mechanism : {"laplace", "gaussian", "analytic_gaussian", \
"discrete_laplace", "discrete_gaussian"}, default="laplace"
        See :func:`dp_noise_scale`; the discrete ones release integer counts.
    delta : float, default=None
        In ``(0, 1)`` for the Gaussian mechanisms; None for the Laplace ones.
    sensitivity : float, default=None
        The L1 (Laplace) or L2 (Gaussian) sensitivity; None: 2 or ``sqrt(2)``
        times ``max_contributions``. Smaller values are refused.
    max_contributions : int, default=1
        Most rows one person has; the sensitivity scales with it.
    min_bag_size : int, default=None
        Bags of fewer rows are withheld: absent from the table, their ids in
        ``attrs["suppressed"]``; select the other rows with
        :func:`released_rows`.
    clamp : bool, default=False
        Clip every noisy count to ``[0, n_B]`` (biased for small bags).
    classes : array-like of shape (n_classes,), default=None
        The columns, in this order; default the sorted labels of ``y``.
    post_processing : {"project", "clip"}, default="project"
        ``"project"``: :func:`project_to_simplex` of ``counts / n_B``;
        ``"clip"``: ``max(counts, 0)`` renormalised (uniform if all are 0).
    return_counts : bool, default=False
        Also return the noisy counts (unbiased unless clamped).
    random_state : int, RandomState instance or None, default=None
        Seeds the noise, drawn for every bag before suppression.

    Returns
    -------
    table : DataFrame of shape (n_released_bags, n_classes)
        A per-bag ``props`` table indexed by the sorted ids of the released
        bags (``"bag"``), rows on the simplex. ``attrs``: ``mechanism``,
        ``epsilon``, ``delta``, ``sensitivity``, ``max_contributions``,
        ``neighbours``, ``noise``, ``noise_scale``, ``noise_variance`` and
        ``noise_std`` of a count (what
        :class:`~sklearn_llp.methods.NoisyProportions` takes), ``rho``
        (zCDP, discrete Gaussian only), ``clamp``, ``min_bag_size`` and
        ``suppressed``.
    counts : DataFrame of shape (n_released_bags, n_classes)
        With ``return_counts=True``: the noisy counts, same index and attrs.

    Raises
    ------
    ValueError
        Naming the invalid argument; as
        :func:`~sklearn_llp.bags.label_proportions` for ``y`` and
        ``classes``; for overlapping bags.

    Examples
    --------
    >>> from sklearn_llp.privacy import dp_proportions
    >>> bags = [0] * 50 + [1] * 50
    >>> y = [0] * 40 + [1] * 10 + [0] * 5 + [1] * 45
    >>> # counts [[40, 10], [5, 45]] + Laplace noise of scale 2 / epsilon = 1
    >>> table, counts = dp_proportions(
    ...     bags, y, epsilon=2.0, return_counts=True, random_state=0
    ... )
    >>> counts.round(2)  # doctest: +NORMALIZE_WHITESPACE
    class      0      1
    bag
    0      40.10  10.56
    1       5.23  45.09
    >>> table.round(3)  # doctest: +NORMALIZE_WHITESPACE
    class      0      1
    bag
    0      0.795  0.205
    1      0.101  0.899
    >>> table.attrs["noise"], table.attrs["noise_scale"]
    ('laplace', 1.0)
    """
    mechanism = _check_mechanism(mechanism)
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, mechanism)
    contributions = _check_count(max_contributions, "max_contributions")
    sensitivity = _check_sensitivity(
        sensitivity, mechanism, release=True, contributions=contributions
    )
    if post_processing not in _POST_PROCESSING:
        raise ValueError(
            f"post_processing must be one of {list(_POST_PROCESSING)}; got "
            f"{post_processing!r}."
        )
    clamp = _check_clamp(clamp)
    scale = _checked_scale(epsilon, mechanism, delta, sensitivity)
    y = np.asarray(y)
    validated = _nonempty(read_bags(bags, len(y) if y.ndim == 1 else None))
    exact = label_proportions(validated.codes, y, classes=classes)
    exact.index = pd.Index(validated.ids, name="bag", tupleize_cols=False)
    sizes = validated.sizes.astype(np.float64)
    min_bag_size, released = _check_min_bag_size(min_bag_size, sizes)
    noise = MECHANISMS[mechanism]
    counts = np.rint(exact.to_numpy() * sizes[:, None])
    if noise.startswith("discrete"):
        counts = counts.astype(np.int64)

    noisy = counts + _draw(check_random_state(random_state), noise, scale, counts.shape)
    if clamp:
        noisy = np.clip(noisy, 0, sizes[:, None].astype(noisy.dtype))
    noisy, sizes = noisy[released], sizes[released]
    if post_processing == "project":
        shares = project_to_simplex(noisy / sizes[:, None])
    else:
        clipped = np.maximum(noisy, 0.0)
        totals = clipped.sum(axis=1, keepdims=True)
        uniform = np.full(clipped.shape, 1.0 / clipped.shape[1])
        shares = np.where(
            totals > 0, clipped / np.where(totals > 0, totals, 1), uniform
        )
    discrete_gaussian = noise == "discrete_gaussian" and scale > 0
    attrs = {
        "mechanism": mechanism,
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": sensitivity,
        "max_contributions": contributions,
        "neighbours": NEIGHBOURS,
        **_noise_attrs(noise, scale),
        "rho": sensitivity**2 / (2 * scale**2) if discrete_gaussian else None,
        "clamp": clamp,
        "min_bag_size": min_bag_size,
        "suppressed": exact.index[~released].tolist(),
    }
    index = exact.index[released]
    table = pd.DataFrame(shares, index=index, columns=exact.columns)
    table.attrs.update(attrs)
    if not return_counts:
        return table
    noisy_counts = pd.DataFrame(noisy, index=index, columns=exact.columns)
    noisy_counts.attrs.update(attrs)
    return table, noisy_counts


def dp_bag_means(
    bags,
    y,
    epsilon,
    *,
    bounds,
    mechanism="laplace",
    delta=None,
    max_contributions=1,
    min_bag_size=None,
    clamp=False,
    random_state=None,
):
    """Differentially private means of a bounded target in every bag.

    For a regressor learnt from bag means: every row's target is clipped to
    ``bounds``, every bag's sum gets Laplace or Gaussian noise calibrated to
    the sensitivity ``max_contributions * (hi - lo)`` and is divided by the
    public bag size. (epsilon, delta)-DP for neighbouring data sets that
    differ in one person's values, with the same people in the same bags;
    see :ref:`privacy_accounting`.

    Parameters
    ----------
    bags : array-like, sparse matrix, list of arrays or Bags
        Disjoint bags in any form :func:`~sklearn_llp.core.check_bags`
        reads; rows of id ``-1`` are in no bag and left out.
    y : array-like of shape (n_samples,)
        Target of every row, numeric and finite.
    epsilon : float
        Privacy budget of the whole table, positive; ``np.inf`` releases the
        exact means of the clipped targets.
    bounds : (float, float)
        ``(lo, hi)``, finite with ``lo < hi``, fixed before seeing the data.
    mechanism : {"laplace", "gaussian", "analytic_gaussian"}, default="laplace"
        See :func:`dp_noise_scale`.
    delta : float, default=None
        In ``(0, 1)`` for the Gaussian mechanisms; None for Laplace.
    max_contributions : int, default=1
        Most rows one person has; the sensitivity scales with it.
    min_bag_size : int, default=None
        Bags of fewer rows are withheld (ids in ``attrs["suppressed"]``).
    clamp : bool, default=False
        Clip every noisy mean to ``bounds`` (``std`` stays that of the noise).
    random_state : int, RandomState instance or None, default=None
        Seeds the noise, drawn for every bag before suppression.

    Returns
    -------
    table : DataFrame of shape (n_released_bags, 3)
        Indexed by the sorted ids of the released bags (``"bag"``), columns
        ``"mean"``, ``"std"`` (the noise sd of the mean, ``noise_std /
        size``) and ``"size"``. ``attrs``: ``mechanism``, ``epsilon``,
        ``delta``, ``bounds``, ``sensitivity``, ``max_contributions``,
        ``neighbours``, ``noise``, ``noise_scale``, ``noise_variance`` and
        ``noise_std`` of a bag's sum, ``clamp``, ``min_bag_size`` and
        ``suppressed``.

    Raises
    ------
    ValueError
        Naming the invalid argument; for overlapping bags.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.privacy import dp_bag_means
    >>> bags = np.repeat([0, 1, 2], [100, 40, 4])
    >>> y = np.r_[np.full(100, 30.0), np.full(40, 60.0), [10.0, 20.0, 30.0, 500.0]]
    >>> table = dp_bag_means(
    ...     bags, y, 1.0, bounds=(0, 100), min_bag_size=10, random_state=0
    ... )
    >>> table.round(2)  # doctest: +NORMALIZE_WHITESPACE
          mean   std  size
    bag
    0    30.10  1.41   100
    1    61.41  3.54    40
    >>> table.attrs["sensitivity"], table.attrs["suppressed"]
    (100.0, [2])
    """
    mechanism = _check_mechanism(mechanism, _SUM_MECHANISMS)
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, mechanism)
    lo, hi = _check_bounds(bounds)
    contributions = _check_count(max_contributions, "max_contributions")
    clamp = _check_clamp(clamp)
    try:
        values = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y must be numeric: one target value per row.") from None
    validated = read_bags(bags, len(values) if values.ndim == 1 else None)
    if values.ndim != 1 or len(values) != validated.n_samples:
        raise ValueError(
            f"y must be 1-D with one value per row of bags ({validated.n_samples}); "
            f"got shape {values.shape}."
        )
    _nonempty(validated)
    bagged = validated.codes >= 0
    if not np.all(np.isfinite(values[bagged])):
        raise ValueError("y contains NaN or infinite values; drop or fix those rows.")
    sensitivity = contributions * (hi - lo)
    scale = _checked_scale(epsilon, mechanism, delta, sensitivity)
    sizes = validated.sizes.astype(np.float64)
    min_bag_size, released = _check_min_bag_size(min_bag_size, sizes)
    sums = np.bincount(
        validated.codes[bagged],
        weights=np.clip(values[bagged], lo, hi),
        minlength=validated.n_bags,
    )
    noise = MECHANISMS[mechanism]
    rng = check_random_state(random_state)
    means = (sums + _draw(rng, noise, scale, sums.shape)) / sizes
    if clamp:
        means = np.clip(means, lo, hi)
    attrs = _noise_attrs(noise, scale)
    index = pd.Index(validated.ids, name="bag", tupleize_cols=False)
    table = pd.DataFrame(
        {"mean": means, "std": attrs["noise_std"] / sizes, "size": validated.sizes},
        index=index,
    )[released]
    table.attrs.update(
        {
            "mechanism": mechanism,
            "epsilon": epsilon,
            "delta": delta,
            "bounds": (lo, hi),
            "sensitivity": sensitivity,
            "max_contributions": contributions,
            "neighbours": SUM_NEIGHBOURS,
            **attrs,
            "clamp": clamp,
            "min_bag_size": min_bag_size,
            "suppressed": index[~released].tolist(),
        }
    )
    return table


def released_rows(bags, table, *, n_samples=None):
    """Which rows have proportions (or a target) in a released per-bag table.

    A release that withholds small bags has no row for them, and
    ``LLPClassifier.fit`` refuses rows whose bag has no proportions: fit on
    ``X[keep]``, ``bags[keep]`` instead.

    Parameters
    ----------
    bags : array-like, sparse matrix, list of arrays or Bags
        The disjoint bags the table was released for, in any form
        :func:`~sklearn_llp.core.check_bags` reads; rows in no bag (id
        ``-1``) are never kept.
    table : DataFrame, Series or dict
        Per-bag table indexed (or keyed) by bag id (a membership form's bags
        are numbered ``0..n_bags-1``).
    n_samples : int, default=None
        Number of rows; needed only with bags as row-index lists.

    Returns
    -------
    keep : ndarray of bool, shape (n_samples,)
        True where the row's bag has a row in ``table``.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_llp.privacy import released_rows
    >>> table = pd.DataFrame({0: [0.2, 0.5], 1: [0.8, 0.5]}, index=["a", "c"])
    >>> released_rows(["a", "a", "b", "c", "b"], table)
    array([ True,  True, False,  True, False])
    """
    if isinstance(table, (pd.DataFrame, pd.Series)):
        index = table.index
    elif isinstance(table, dict):
        index = pd.Index(list(table), tupleize_cols=False)
    else:
        raise TypeError(
            "table must be a per-bag DataFrame, Series or dict indexed by bag id; "
            f"got {type(table).__name__}."
        )
    validated = read_bags(bags, n_samples)
    released = pd.Index(validated.ids, tupleize_cols=False).isin(index)
    return np.append(released, False)[validated.codes]  # code -1: in no bag
