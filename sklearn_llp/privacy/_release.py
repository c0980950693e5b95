"""Simulated differentially private releases of bag proportions and bag means."""

import math

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from ..bags import id_bags, label_proportions
from ._mechanisms import (
    MECHANISMS,
    _check_arguments,
    _check_count,
    _check_neighbours,
    _check_sensitivity,
    _checked_scale,
    _draw,
    _one_count,
    noise_variance,
)
from ._simplex import project_to_simplex

_SUM_MECHANISMS = ("laplace", "gaussian", "analytic_gaussian")

_POST_PROCESSING = ("project", "clip")

#: The checked arguments every release records in its ``attrs``.
_ARGUMENTS = ("mechanism", "epsilon", "delta", "max_contributions", "clamp")


def read_bags(bags, n_samples=None, *, rows=None, release=False):
    """Disjoint bags read by ``check_bags``; ``rows`` counts row-index lists."""
    rows = rows if n_samples is None else n_samples
    try:
        validated = id_bags(bags)
    except TypeError:
        if rows is None:
            raise
        validated = id_bags(bags, rows)
    if n_samples is not None and validated.n_samples != n_samples:
        raise ValueError(
            f"bags covers {validated.n_samples} rows but n_samples={n_samples!r}."
        )
    if validated.weights is not None:
        raise ValueError(
            "bags is a Bags object with sample weights, which a release (of "
            "counts of rows) does not use; pass it validated without sample_weight."
        )
    if release and validated.n_bags == 0:
        raise ValueError("Every entry of bags is -1 (no bag); nothing to release.")
    return validated


def _noisy(totals, checked, sensitivity, rng, prefix=""):
    """``totals`` plus noise calibrated to ``sensitivity``, and its ``attrs``."""
    mechanism, epsilon, delta = checked[:3]
    scale = _checked_scale(epsilon, mechanism, delta, sensitivity)
    noise = MECHANISMS[mechanism]
    if noise.startswith("discrete"):
        totals = totals.astype(np.int64)
    v = noise_variance(noise, scale)
    keys = ("sensitivity", "noise_scale", "noise_variance", "noise_std")
    attrs = {prefix + k: x for k, x in zip(keys, (sensitivity, scale, v, v**0.5))}
    return totals + _draw(rng, noise, scale, totals.shape), attrs


def _domain(validated, domain, relation):
    """The ids a release names, and the position of every bag among them."""
    if relation == "replace":
        if domain is not None:
            raise ValueError(
                "domain is for neighbours='add_remove'; under 'replace' the bags "
                "and their sizes are public: the table names the ids of bags."
            )
        return validated.ids, np.arange(validated.n_bags)
    if domain is None:
        raise ValueError(
            "neighbours='add_remove' needs domain=, every bag id the release may "
            "name, fixed in advance (e.g. every cell of a public grid): a row for "
            "each id present in the private data would reveal who is in it "
            "(remove a bag's only person and its row goes), whatever epsilon. "
            "Every id of domain gets a row; an empty bag's is pure noise."
        )
    try:
        ids = pd.Index(list(domain), tupleize_cols=False)
    except TypeError:
        raise ValueError(f"domain must be a list of bag ids; got {domain!r}.") from None
    where = ids.get_indexer(pd.Index(validated.ids, tupleize_cols=False))
    if ids.has_duplicates or np.any(where < 0):
        outside = validated.ids[where < 0][:5].tolist()
        raise ValueError(
            "domain must list every bag id the release may name once; it "
            f"{'repeats ids' if ids.has_duplicates else 'lacks'} "
            f"{'' if ids.has_duplicates else outside} of bags."
        )
    return ids.to_numpy(), where


def _spread(values, where, n_ids):
    """Per-bag ``values`` at their positions among ``n_ids`` ids, 0 elsewhere."""
    full = np.zeros((n_ids,) + values.shape[1:], dtype=values.dtype)
    full[where] = values
    return full


def _kept(sizes, min_bag_size, ids):
    """Bags of at least ``min_bag_size``, their index and the ``attrs``."""
    kept = sizes >= (min_bag_size or -np.inf)
    if not kept.any():
        raise ValueError(
            f"min_bag_size={min_bag_size} withholds every bag (the largest has "
            f"{float(sizes.max()):g} rows); nothing would be released."
        )
    ids = pd.Index(ids, name="bag", tupleize_cols=False)
    return kept, ids, dict(min_bag_size=min_bag_size, suppressed=ids[~kept].tolist())


def dp_proportions(
    bags,
    y,
    epsilon,
    *,
    classes=None,
    neighbours="replace",
    mechanism="laplace",
    delta=None,
    sensitivity=None,
    max_contributions=1,
    domain=None,
    one_count=None,
    min_bag_size=None,
    clamp=False,
    post_processing="project",
    return_counts=False,
    random_state=None,
):
    """Differentially private label proportions of every bag (a simulation).

    Noise on every class count (:ref:`privacy_accounting`).

    Parameters
    ----------
    bags : array-like, sparse matrix, list of arrays or Bags
        Disjoint bags; rows of id ``-1`` are left out. Their ids are public.
    y : array-like of shape (n_samples,)
    epsilon : float
        Privacy budget of the whole table; ``np.inf`` adds no noise.
    classes : array-like of shape (n_classes,)
        The public label domain, the columns in order. Required: columns
        taken from the private ``y`` would leak.
    neighbours : {"replace", "add_remove"}, default="replace"
        One person's labels changed (sizes public), or one person added or
        removed (sizes and membership private: needs ``domain``).
    mechanism : {"laplace", "gaussian", "analytic_gaussian", \
"discrete_laplace", "discrete_gaussian"}, default="laplace"
    delta : float, default=None
        In ``(0, 1)`` for the Gaussian mechanisms; None for the Laplace ones.
    sensitivity : float, default=None
        None: the table's under ``neighbours``; less is refused.
    max_contributions : int, default=1
        Most rows one person has.
    domain : array-like, default=None
        Under "add_remove", required: every bag id the release may name, fixed
        in advance; every one gets a row (an empty bag's is pure noise).
    one_count : bool, default=None
        Two classes, "replace": one noisy count, the other ``n_B`` minus it
        (half the share variance); None: True there for the Laplace ones.
    min_bag_size : int, default=None
        Bags of smaller (under add_remove: noisy) size are withheld (ids in
        ``attrs["suppressed"]``).
    clamp : bool, default=False
        Clip every noisy count to ``[0, n_B]`` (add_remove: to ``[0, inf)``).
    post_processing : {"project", "clip"}, default="project"
        :func:`project_to_simplex`, or ``max(counts, 0)`` renormalised.
    return_counts : bool, default=False
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    table : DataFrame of shape (n_released_bags, n_classes)
        Per-bag ``props``; ``attrs`` record the release and its noise.
    counts : DataFrame of shape (n_released_bags, n_classes)
        The noisy counts, with ``return_counts=True``.

    Examples
    --------
    >>> from sklearn_llp.privacy import dp_proportions
    >>> bags = [0] * 50 + [1] * 50
    >>> y = [0] * 40 + [1] * 10 + [0] * 5 + [1] * 45  # counts [[40, 10], [5, 45]]
    >>> table = dp_proportions(bags, y, 2.0, classes=[0, 1], random_state=0)
    >>> table.round(3).to_numpy().tolist(), table.attrs["noise_scale"]  # one count
    ([[0.799, 0.201], [0.094, 0.906]], 0.5)
    """
    checked = _check_arguments(mechanism, epsilon, delta, max_contributions, clamp)
    relation = _check_neighbours(neighbours)
    if post_processing not in _POST_PROCESSING:
        raise ValueError(
            f"post_processing must be one of {list(_POST_PROCESSING)}; got "
            f"{post_processing!r}."
        )
    min_bag_size = _check_count(min_bag_size, "min_bag_size", none_ok=True)
    mechanism, epsilon, delta, contributions, clamp = checked
    _checked_scale(epsilon, mechanism, delta, float(contributions))  # tiny epsilon
    y = np.asarray(y)
    validated = read_bags(bags, rows=len(y) if y.ndim == 1 else None, release=True)
    public = relation == "replace"
    ids, where = _domain(validated, domain, relation)
    if public:  # the sizes are public: so is the rule
        kept, index, suppressed = _kept(validated.sizes, min_bag_size, ids)
    if classes is None:
        raise ValueError(
            "classes is required: the public label domain (e.g. classes=[0, 1]). "
            "Columns taken from the private y would leak whether anyone has a "
            "rare label, with certainty, whatever epsilon."
        )
    exact = label_proportions(validated.codes, y, classes=classes)
    columns, exact = exact.columns, exact.to_numpy()
    sizes = validated.sizes.astype(np.float64)[:, None]
    counts = _spread(np.rint(exact * sizes), where, len(ids))  # add_remove: domain
    one_count = _one_count(one_count, len(columns), relation, mechanism)
    key = "one_count" if one_count else relation
    sensitivity = _check_sensitivity(
        sensitivity, mechanism, release=True, contributions=checked[3], relation=key
    )
    rng = check_random_state(random_state)
    noisy, attrs = _noisy(
        counts[:, 1:] if one_count else counts, checked, sensitivity, rng
    )
    if one_count:
        noisy = np.hstack([sizes.astype(noisy.dtype) - noisy, noisy])
    if checked[4]:
        noisy = np.clip(noisy, 0, sizes.astype(noisy.dtype) if public else None)
    if not public:  # the noisy size, floored at 1 (post-processing)
        sizes = np.maximum(noisy.sum(axis=1, keepdims=True), 1.0)
        kept, index, suppressed = _kept(sizes[:, 0], min_bag_size, ids)
    noisy, sizes = noisy[kept], sizes[kept]
    shares = project_to_simplex(noisy / sizes)
    if post_processing == "clip":  # uniform where every count is <= 0
        empty = (clipped := np.maximum(noisy, 0.0)).sum(axis=1, keepdims=True) == 0
        shares = (clipped + empty) / (clipped + empty).sum(axis=1, keepdims=True)
    scale, discrete_gaussian = attrs["noise_scale"], mechanism == "discrete_gaussian"
    attrs.update(zip(_ARGUMENTS, checked), neighbours=relation, one_count=one_count)
    attrs.update(
        noise=MECHANISMS[mechanism],
        rho=sensitivity**2 / (2 * scale**2) if discrete_gaussian and scale else None,
        **suppressed,
        counts=dict(ids=index[kept].tolist(), values=noisy.tolist()),  # the loss's
    )
    released = index[kept]
    frames = [pd.DataFrame(v, index=released, columns=columns) for v in (shares, noisy)]
    for frame in frames:
        frame.attrs.update(attrs)
    return tuple(frames) if return_counts else frames[0]


def dp_bag_means(
    bags,
    y,
    epsilon,
    *,
    bounds,
    neighbours="replace",
    mechanism="laplace",
    delta=None,
    max_contributions=1,
    domain=None,
    min_bag_size=None,
    clamp=False,
    random_state=None,
):
    """Differentially private means of a bounded target per bag (:ref:`dp_bag_means`).

    Parameters
    ----------
    bags, epsilon, neighbours, delta, max_contributions, domain, min_bag_size
        As in :func:`dp_proportions` (``neighbours``: one person's values
        changed, or one person added or removed).
    y : array-like of shape (n_samples,)
        Target of every row, numeric and finite.
    bounds : (float, float)
        ``(lo, hi)``, finite with ``lo < hi``, fixed before seeing the data.
    mechanism : {"laplace", "gaussian", "analytic_gaussian"}, default="laplace"
    clamp : bool, default=False
        Clip every noisy mean to ``bounds``.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    table : DataFrame of shape (n_released_bags, 3)
        ``"mean"``, ``"std"`` (its noise sd) and ``"size"`` by bag id.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.privacy import dp_bag_means
    >>> bags = np.repeat([0, 1, 2], [100, 40, 4])
    >>> y = np.r_[np.full(100, 30.0), np.full(40, 60.0), [10.0, 20.0, 30.0, 500.0]]
    >>> table = dp_bag_means(bags, y, 1.0, bounds=(0, 100), min_bag_size=10)
    >>> table["size"].tolist(), table.attrs["sensitivity"], table.attrs["suppressed"]
    ([100, 40], 100.0, [2])
    """
    checked = _check_arguments(
        mechanism, epsilon, delta, max_contributions, clamp, _SUM_MECHANISMS
    )
    public = _check_neighbours(neighbours) == "replace"
    min_bag_size = _check_count(min_bag_size, "min_bag_size", none_ok=True)
    try:
        lo, hi = (float(b) for b in bounds)
    except (TypeError, ValueError):  # checked below
        lo = hi = math.nan
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(
            f"bounds must be a pair (lo, hi) of finite numbers with lo < hi; got "
            f"{bounds!r}."
        )
    try:
        values = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y must be numeric: one target value per row.") from None
    rows = len(values) if values.ndim == 1 else None
    validated = read_bags(bags, rows=rows, release=True)
    if values.ndim != 1 or len(values) != validated.n_samples:
        raise ValueError(
            f"y must be 1-D with one value per row of bags ({validated.n_samples}); "
            f"got shape {values.shape}."
        )
    bagged = validated.codes >= 0
    if not np.all(np.isfinite(values[bagged])):
        raise ValueError("y contains NaN or infinite values; drop or fix those rows.")
    clipped = np.clip(values[bagged], lo, hi)
    sums = np.bincount(validated.codes[bagged], clipped, minlength=validated.n_bags)
    ids, where = _domain(validated, domain, neighbours)
    m, rng, sizes = checked[3], check_random_state(random_state), validated.sizes
    sums, sizes = _spread(sums, where, len(ids)), _spread(sizes, where, len(ids))
    if public:  # one changed row moves a sum by hi - lo at most
        noisy, attrs = _noisy(sums, checked, m * (hi - lo), rng)
        std = attrs["noise_std"] / sizes
    else:  # an added row moves a sum by max(|lo|, |hi|), a count by 1
        half = (checked[0], checked[1] / 2, checked[2] and checked[2] / 2)
        noisy, attrs = _noisy(sums, half, m * max(abs(lo), abs(hi)), rng)
        counts, count_attrs = _noisy(sizes.astype(float), half, float(m), rng, "count_")
        attrs.update(count_attrs, budget="epsilon/2 (and delta/2) each")
        sizes = np.maximum(counts, 1.0)  # post-processing of the noisy counts
        mean = np.clip(noisy / sizes, lo, hi)  # delta-method sd of sum / count
        std = np.sqrt(attrs["noise_variance"] + mean**2 * attrs["count_noise_variance"])
        std = std / sizes
    kept, index, suppressed = _kept(sizes, min_bag_size, ids)
    means = noisy / sizes
    means = np.clip(means, lo, hi) if checked[4] else means
    attrs.update(zip(_ARGUMENTS, checked), bounds=(lo, hi), neighbours=neighbours)
    attrs.update(noise=MECHANISMS[mechanism], **suppressed)
    table = pd.DataFrame(dict(mean=means, std=std, size=sizes), index=index)[kept]
    table.attrs.update(attrs)
    return table


def released_rows(bags, table, *, n_samples=None):
    """Which rows have proportions (or a target) in a released per-bag table.

    ``fit`` refuses rows of withheld bags: fit on ``X[keep]``, ``bags[keep]``.

    Parameters
    ----------
    bags : array-like, sparse matrix, list of arrays or Bags
        The disjoint bags the table was released for.
    table : DataFrame, Series or dict
        Indexed (or keyed) by bag id.
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
