"""Differentially private label proportions and bag means, and putting noisy
proportions back on the simplex.

Aggregate labels are often published with noise: a privacy-preserving
release adds Laplace or Gaussian noise, continuous or on the integers, to
every class *count* of every bag (:func:`dp_proportions` simulates one), may
clamp the noisy counts to ``[0, n_B]`` and withholds the bags below a
minimum size; the shares computed from noisy counts may be negative or not
sum to 1. The bag sizes are public (the learner holds the bags' members);
what is protected is every person's label, and neighbouring data sets
differ in one person's label (see "Privacy guarantee" in
:func:`dp_proportions`). ``LLPClassifier`` (through
:func:`~sklearn_llp.core.check_bags`) only accepts proportions on the
probability simplex, so a raw noisy release is first projected onto it with
:func:`project_to_simplex`; the rows of withheld bags are dropped with
:func:`released_rows`; :class:`~sklearn_llp.methods.NoisyProportions` then
trains with the noise of the release (:func:`noise_variance`).

For a continuous target known only as bag means, :func:`dp_bag_means`
releases every bag's clipped sum with noise, and
:func:`noise_aware_bag_weights` turns the noise of the released means into
inverse-variance weights.

The noise is drawn with numpy's floating-point samplers. That is what a
simulation needs, not a hardened release: floating-point samplers leak
through the low bits of their output (Mironov 2012); publish real data with
a vetted library.
"""

import functools
import math
from numbers import Integral, Real

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, ndtr
from sklearn.utils import check_random_state

from ..bags._proportions import _unbagged_mask, label_proportions
from ..core import check_bags
from ..core._read import _id_array

#: Mechanisms of :func:`dp_proportions` and :func:`dp_noise_scale`, and the
#: distribution of the noise each adds to a count (``noise`` of
#: :class:`~sklearn_llp.methods.NoisyProportions`).
MECHANISMS = {
    "laplace": "laplace",
    "gaussian": "gaussian",
    "analytic_gaussian": "gaussian",
    "discrete_laplace": "discrete_laplace",
    "discrete_gaussian": "discrete_gaussian",
}

#: The noise distributions, and the norm of the sensitivity each is
#: calibrated to.
NOISE_NORMS = {
    "laplace": "L1",
    "gaussian": "L2",
    "discrete_laplace": "L1",
    "discrete_gaussian": "L2",
}

#: Mechanisms that are pure epsilon-DP (no delta).
_PURE = ("laplace", "discrete_laplace")

#: Mechanisms of :func:`dp_bag_means` (continuous noise on real sums).
_SUM_MECHANISMS = ("laplace", "gaussian", "analytic_gaussian")

_POST_PROCESSING = ("project", "clip")

#: Largest scale of integer noise: its draws must stay exact in int64.
_MAX_DISCRETE_SCALE = 2.0**40

#: Sensitivity of the table of counts of :func:`dp_proportions`, per noise
#: distribution, under its neighbouring relation (one person's label changed,
#: every bag's members and size kept): one count of the person's bag falls by
#: 1 and another rises by 1, so the change has L1 norm 2 (what the Laplace
#: mechanisms are calibrated to) and L2 norm sqrt(2) (the Gaussian ones).
#: With ``max_contributions=k`` rows per person, ``k`` times these.
REPLACE_ONE_SENSITIVITY = {"laplace": 2.0, "gaussian": math.sqrt(2.0)}

#: The neighbouring relation of :func:`dp_proportions`, as its ``attrs`` say.
NEIGHBOURS = "replace-one label, bag sizes public"

#: The neighbouring relation of :func:`dp_bag_means`.
SUM_NEIGHBOURS = "replace-one value, bag sizes public"


def _replace_one(mechanism, contributions=1):
    """The sensitivity of the table of counts in the mechanism's norm."""
    norm = NOISE_NORMS[MECHANISMS[mechanism]]
    key = "laplace" if norm == "L1" else "gaussian"
    return contributions * REPLACE_ONE_SENSITIVITY[key]


def project_to_simplex(props):
    """Euclidean projection of every row onto the probability simplex.

    The nearest point (in Euclidean distance) of ``{p : p >= 0, sum(p) =
    1}`` to each vector along the last axis: ``max(v - theta, 0)`` with the
    one ``theta`` that makes the result sum to 1, found by sorting (Held et
    al. 1974; Duchi et al. 2008), vectorised over rows. Rows already on the
    simplex are returned unchanged (up to rounding).

    Use it on a raw noisy release (shares computed from noisy counts, which
    may be negative or not sum to 1) before passing it as ``props``:
    :func:`~sklearn_llp.core.check_bags` refuses shares below 0 and rows that
    do not sum to 1 within 0.01. For shares ``counts / n_B`` of a bag of
    known size ``n_B`` the projection first spreads the excess of the row sum
    equally over the classes (this removes the part of the noise that
    changes the total, ``1/C`` of its variance), then clips at 0.

    Parameters
    ----------
    props : array-like of shape (..., n_classes) or DataFrame
        Finite vectors, e.g. noisy proportions of every bag, one row per
        bag. A 1-D array is one vector.

    Returns
    -------
    projected : ndarray of the same shape, or DataFrame
        Non-negative, every row summing to 1 (up to rounding), for any
        finite input, however large (rows are shifted by their maximum
        first, which does not change the projection). A DataFrame keeps its
        index and columns.

    Raises
    ------
    ValueError
        If ``props`` holds NaN or infinite values, is a scalar or has no
        column.

    See Also
    --------
    dp_proportions : Simulate a differentially private release.

    References
    ----------
    J. Duchi, S. Shalev-Shwartz, Y. Singer, T. Chandra. Efficient
    projections onto the l1-ball for learning in high dimensions. ICML 2008.

    Examples
    --------
    >>> from sklearn_llp.privacy import project_to_simplex
    >>> project_to_simplex([[0.7, 0.5], [-0.2, 0.9], [1.3, -0.1]])
    array([[0.6, 0.4],
           [0. , 1. ],
           [1. , 0. ]])
    """
    frame = props if isinstance(props, pd.DataFrame) else None
    try:
        values = np.asarray(props, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"props must be numeric; {exc}") from None
    if values.ndim == 0 or values.shape[-1] == 0:
        raise ValueError(
            f"props must have at least one class along its last axis; got shape "
            f"{values.shape}."
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(
            "props contains NaN or infinite values; the projection needs finite "
            "shares: drop or fix those rows first."
        )
    n_classes = values.shape[-1]
    rows = values.reshape(-1, n_classes)
    # The projection of v + t (1, ..., 1) is that of v for any t, and an entry
    # at least 1 below the row's maximum is 0 in it (theta >= max - 1). So
    # shift every row by its maximum and raise entries below -2 to -2: the
    # projection is unchanged and nothing overflows, however large the
    # (finite) input; a difference may overflow to -inf, which becomes -2.
    with np.errstate(over="ignore"):
        rows = np.maximum(rows - rows.max(axis=1, keepdims=True), -2.0)
    ordered = -np.sort(-rows, axis=1)  # descending
    excess = np.cumsum(ordered, axis=1) - 1.0
    k = np.arange(1, n_classes + 1)
    # the support is the largest k with ordered_k > excess_k / k (a prefix;
    # k = 1 always qualifies): take the last k where the test holds
    positive = ordered - excess / k > 0
    support = n_classes - np.argmax(positive[:, ::-1], axis=1)
    theta = excess[np.arange(len(rows)), support - 1] / support
    projected = np.maximum(rows - theta[:, None], 0.0).reshape(values.shape)
    if frame is not None:
        return pd.DataFrame(projected, index=frame.index, columns=frame.columns)
    return projected


def _check_epsilon(epsilon):
    if (
        isinstance(epsilon, bool)
        or not isinstance(epsilon, Real)
        or math.isnan(epsilon)
        or epsilon <= 0
    ):
        raise ValueError(
            f"epsilon must be a positive number (np.inf for no noise); got {epsilon!r}."
        )
    return float(epsilon)


def _check_mechanism(mechanism, allowed=tuple(MECHANISMS)):
    if not isinstance(mechanism, str) or mechanism not in allowed:
        raise ValueError(
            f"mechanism must be one of {sorted(allowed)}; got {mechanism!r}."
        )
    return mechanism


def _check_delta(delta, mechanism):
    if mechanism in _PURE:
        if delta is not None:
            raise ValueError(
                f"delta={delta!r} is only used by the Gaussian mechanisms; "
                f"mechanism={mechanism!r} is pure epsilon-DP: leave delta=None."
            )
        return None
    if (
        delta is None
        or isinstance(delta, bool)
        or not isinstance(delta, Real)
        or not 0 < delta < 1
    ):
        raise ValueError(
            f"delta must be a number in (0, 1) for mechanism={mechanism!r} "
            f"(typically below 1 / n_people, e.g. 1e-6); got {delta!r}."
        )
    return float(delta)


def _check_count(value, name, *, none_ok=False):
    """A positive integer (or None where allowed), or a ValueError naming it."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        allowed = "a positive integer or None" if none_ok else "a positive integer"
        raise ValueError(f"{name} must be {allowed}; got {value!r}.")
    return int(value)


def _check_sensitivity(sensitivity, mechanism, *, release=False, contributions=1):
    """The sensitivity, ``None`` giving the replace-one value of the
    mechanism's norm times ``contributions``; with ``release=True``
    (:func:`dp_proportions`), smaller values than that are refused: the
    release would not be (epsilon, delta)-DP under its neighbouring
    relation."""
    norm = NOISE_NORMS[MECHANISMS[mechanism]]
    replace_one = _replace_one(mechanism, contributions)
    per = "" if contributions == 1 else f" for max_contributions={contributions}"
    if sensitivity is None:
        return replace_one
    if (
        isinstance(sensitivity, bool)
        or not isinstance(sensitivity, Real)
        or not math.isfinite(sensitivity)
        or sensitivity <= 0
    ):
        raise ValueError(
            f"sensitivity must be a positive finite number or None (the "
            f"replace-one {norm} sensitivity {replace_one:.6g} of a table of "
            f"counts{per}); got {sensitivity!r}."
        )
    if release and sensitivity < replace_one * (1 - 1e-12):
        raise ValueError(
            f"sensitivity={sensitivity!r} is below {replace_one:.6g}, the {norm} "
            f"sensitivity of the table of counts for mechanism={mechanism!r}{per}: "
            "with the bag sizes public, neighbouring data sets differ in one "
            "person's label, which moves one unit from one count to another "
            "(L1 2, L2 sqrt(2), per row of the person); the value 1 is that of "
            "adding or removing a person, which the exact bag sizes used here "
            "would reveal. Leave sensitivity=None (the exact value) or pass a "
            "larger one."
        )
    return float(sensitivity)


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


# ----------------------------------------------------------------------
# Integer noise
# ----------------------------------------------------------------------
def _discrete_laplace(rng, scale, size):
    """Draws of ``P(k) ∝ exp(-|k| / scale)`` on the integers.

    The difference of two independent geometric variables of success
    probability ``1 - exp(-1 / scale)`` (numpy's inversion sampler, exact up
    to the rounding of doubles)."""
    if scale == 0:
        return np.zeros(size, dtype=np.int64)
    p = -math.expm1(-1.0 / scale)
    return rng.geometric(p, size) - rng.geometric(p, size)


def _discrete_gaussian(rng, sigma, size):
    """Draws of ``P(k) ∝ exp(-k**2 / (2 sigma**2))`` on the integers.

    Canonne, Kamath & Steinke (2020), Algorithm 3: a discrete Laplace draw
    ``Y`` of scale ``t = floor(sigma) + 1``, accepted with probability
    ``exp(-(|Y| - sigma**2 / t)**2 / (2 sigma**2))`` (the product of the two
    is proportional to the discrete Gaussian mass, for any ``t``). Their
    sampler is exact with rational arithmetic; this one uses doubles for the
    acceptance test, so it is exact only up to their rounding."""
    out = np.zeros(size, dtype=np.int64)
    if sigma == 0:
        return out
    flat = out.reshape(-1)
    t = math.floor(sigma) + 1
    pending = np.arange(flat.size)
    while pending.size:
        draws = _discrete_laplace(rng, t, pending.size)
        accept = rng.uniform(size=pending.size) < np.exp(
            -((np.abs(draws) - sigma**2 / t) ** 2) / (2 * sigma**2)
        )
        flat[pending[accept]] = draws[accept]
        pending = pending[~accept]
    return out


def _discrete_gaussian_variance(sigma):
    """``sum k**2 exp(-k**2 / 2 sigma**2) / sum exp(-k**2 / 2 sigma**2)``.

    Below ``sigma**2`` (the sum's Poisson-summation terms differ from the
    integral's by a relative ``4 pi**2 sigma**2 exp(-2 pi**2 sigma**2)``,
    below the rounding of doubles from sigma = 2 on)."""
    if sigma == 0:
        return 0.0
    if sigma > 20:
        return sigma**2
    k = np.arange(-math.ceil(40 * sigma) - 1, math.ceil(40 * sigma) + 2)
    mass = np.exp(-(k**2) / (2 * sigma**2))
    return float(np.sum(k**2 * mass) / np.sum(mass))


def noise_variance(noise, scale):
    """Variance of the noise of a given scale on one released count (or sum).

    What :class:`~sklearn_llp.methods.NoisyProportions` weighs every bag by,
    and ``table.attrs["noise_variance"]`` of :func:`dp_proportions`.

    Parameters
    ----------
    noise : {"laplace", "gaussian", "discrete_laplace", "discrete_gaussian"}
        The distribution (``table.attrs["noise"]`` of a release):

        - ``"laplace"``: density ``exp(-|x| / b) / (2 b)``, variance ``2
          b**2``;
        - ``"gaussian"``: normal of standard deviation ``sigma``, variance
          ``sigma**2``;
        - ``"discrete_laplace"``: on the integers, ``P(k) ∝ exp(-|k| / t)``
          (the two-sided geometric distribution of parameter ``q =
          exp(-1/t)``), variance ``2 q / (1 - q)**2``, slightly below the
          continuous ``2 t**2``;
        - ``"discrete_gaussian"``: on the integers, ``P(k) ∝ exp(-k**2 / (2
          sigma**2))``, variance below ``sigma**2`` (by a relative
          ``2e-7`` at ``sigma = 1``, within the rounding of doubles from
          ``sigma = 2`` on; 0.215 at ``sigma = 0.5``, against 0.25).
    scale : float or array-like
        ``b``, ``sigma`` or ``t``, non-negative (0: no noise).

    Returns
    -------
    variance : float or ndarray
        Of the shape of ``scale``.

    Raises
    ------
    ValueError
        Naming ``noise`` or ``scale`` when invalid.

    See Also
    --------
    dp_noise_scale : The scale a mechanism adds for a privacy budget.

    Examples
    --------
    >>> from sklearn_llp.privacy import noise_variance
    >>> noise_variance("laplace", 2.0)
    8.0
    >>> round(noise_variance("discrete_laplace", 2.0), 4)
    7.8354
    >>> round(noise_variance("discrete_gaussian", 0.5), 4)
    0.215
    >>> noise_variance("gaussian", [0.0, 3.0])
    array([0., 9.])
    """
    if not isinstance(noise, str) or noise not in NOISE_NORMS:
        raise ValueError(f"noise must be one of {sorted(NOISE_NORMS)}; got {noise!r}.")
    try:
        values = np.asarray(scale, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"scale must be numeric; got {scale!r}.") from None
    if not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError(f"scale must be finite and non-negative; got {scale!r}.")
    if noise == "laplace":
        variance = 2.0 * values**2
    elif noise == "gaussian":
        variance = values**2
    elif noise == "discrete_laplace":
        with np.errstate(divide="ignore"):
            inverse = np.where(
                values > 0, 1.0 / np.where(values > 0, values, 1), np.inf
            )
        q = np.exp(-inverse)
        # 2 q / (1 - q)**2, with 1 - q = -expm1(-1/t) kept precise for large t
        variance = np.where(values > 0, 2.0 * q / np.expm1(-inverse) ** 2, 0.0)
    else:
        unique, where = np.unique(values, return_inverse=True)
        variance = np.array([_discrete_gaussian_variance(s) for s in unique])[
            where
        ].reshape(values.shape)
    return float(variance) if variance.ndim == 0 else variance


# ----------------------------------------------------------------------
# Calibration
# ----------------------------------------------------------------------
def _zcdp_log_delta(rho, epsilon):
    """log of the delta at ``epsilon`` of a rho-zCDP mechanism.

    Canonne, Kamath & Steinke (2020), Corollary 13: rho-zCDP implies
    (epsilon, delta)-DP with ``delta = inf_{a > 1} exp((a - 1)(a rho -
    epsilon)) / (a - 1) * (1 - 1/a)**a``; minimised over ``u = log(a - 1)`` on
    a grid, then by Brent's method in the best grid cell."""

    def log_delta(u):
        a_minus_1 = np.exp(u)
        a = a_minus_1 + 1.0
        return a_minus_1 * (a * rho - epsilon) - u + a * np.log1p(-1.0 / a)

    top = max(40.0, math.log(max(epsilon, 1e-300) / rho) + 10.0)
    grid = np.linspace(-30.0, top, 3001)
    values = log_delta(grid)
    best = int(np.argmin(values))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    refined = minimize_scalar(
        log_delta, bounds=(low, high), method="bounded", options={"xatol": 1e-10}
    )
    return min(float(values[best]), float(refined.fun), 0.0)


def _zcdp_delta(rho, epsilon):
    """The delta at ``epsilon`` of a rho-zCDP mechanism (CKS 2020, Cor. 13)."""
    return math.exp(_zcdp_log_delta(rho, epsilon))


@functools.lru_cache(maxsize=256)
def _zcdp_rho(epsilon, delta):
    """The largest rho whose zCDP guarantee gives (epsilon, delta)-DP, by
    bisection on ``log rho`` (the delta grows with rho)."""
    log_target = math.log(delta)
    low = high = 1.0
    while _zcdp_log_delta(high, epsilon) <= log_target and high < 1e300:
        high *= 16.0
    while _zcdp_log_delta(low, epsilon) > log_target and low > 1e-300:
        low /= 16.0
    for _ in range(200):
        mid = math.sqrt(low * high)
        if _zcdp_log_delta(mid, epsilon) <= log_target:
            low = mid
        else:
            high = mid
        if high / low < 1 + 1e-13:
            break
    return low


def _analytic_gaussian_delta(sigma, epsilon, sensitivity):
    """The smallest delta of the Gaussian mechanism with noise ``sigma``
    (Balle & Wang 2018, Theorem 8)."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    return ndtr(a - b) - np.exp(epsilon + log_ndtr(-a - b))


def _analytic_gaussian_sigma(epsilon, delta, sensitivity):
    """The smallest sigma with ``_analytic_gaussian_delta <= delta``, by
    bisection on ``log sigma`` (the delta decreases in sigma)."""
    low = high = sensitivity
    while _analytic_gaussian_delta(high, epsilon, sensitivity) > delta:
        high *= 2.0
    while _analytic_gaussian_delta(low, epsilon, sensitivity) <= delta:
        low /= 2.0
    for _ in range(100):
        mid = math.sqrt(low * high)
        if _analytic_gaussian_delta(mid, epsilon, sensitivity) > delta:
            low = mid
        else:
            high = mid
    return high


def dp_noise_scale(
    epsilon, mechanism="laplace", *, delta=None, sensitivity=None, max_contributions=1
):
    """Scale of the noise a mechanism adds to each count for (epsilon, delta)-DP.

    By default the scale of a :func:`dp_proportions` release: the
    sensitivity of its table of counts when neighbouring data sets differ in
    one person's label (bag sizes public), 2 in L1 norm (the Laplace
    mechanisms) and ``sqrt(2)`` in L2 norm (the Gaussian ones), times
    ``max_contributions``. ``dp_noise_scale(epsilon, ...)`` is the
    ``attrs["noise_scale"]`` of ``dp_proportions(..., epsilon, ...)`` with
    the same mechanism, delta and contribution bound.

    Parameters
    ----------
    epsilon : float
        Privacy budget, positive; ``np.inf`` gives 0 (no noise).
    mechanism : str, default="laplace"
        One of

        - ``"laplace"``: Laplace noise of scale ``b = sensitivity /
          epsilon``, epsilon-DP for an L1 sensitivity ``sensitivity`` (Dwork
          et al. 2006): ``2 / epsilon`` by default. Variance ``2 b**2``.
        - ``"gaussian"``: normal noise with the classical bound ``sigma =
          sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon`` (Dwork & Roth
          2014, Theorem A.1), (epsilon, delta)-DP for an L2 sensitivity
          ``sensitivity``; the theorem holds for ``epsilon < 1`` only, so
          larger values are refused.
        - ``"analytic_gaussian"``: the smallest ``sigma`` for which the
          Gaussian mechanism is (epsilon, delta)-DP (Balle & Wang 2018,
          Algorithm 1, by bisection); any epsilon, and less noise than the
          classical bound.
        - ``"discrete_laplace"``: integer noise ``P(k) ∝ exp(-|k| / t)`` (the
          two-sided geometric mechanism, Ghosh et al. 2009) with ``t =
          sensitivity / epsilon``: epsilon-DP for integer-valued counts of
          L1 sensitivity ``sensitivity``, because the log-ratio of the
          masses at any output is at most ``|shift|_1 / t``. ``2 / epsilon``
          by default. Variance :func:`noise_variance`, just below ``2 t**2``.
        - ``"discrete_gaussian"``: integer noise ``P(k) ∝ exp(-k**2 / (2
          sigma**2))`` (Canonne et al. 2020). Independent discrete Gaussians
          on a vector of integer counts of L2 sensitivity ``Delta`` satisfy
          ``rho``-zero-concentrated DP with ``rho = Delta**2 / (2
          sigma**2)`` (their Theorem 14); ``sigma`` is the smallest for which
          that ``rho`` converts to (epsilon, delta)-DP by their Corollary 13.
          The conversion is an upper bound on delta, so ``sigma`` is 5 to
          10 per cent above the analytic Gaussian one: the release is
          (epsilon, delta)-DP, perhaps with a smaller delta than asked.
    delta : float, default=None
        Required in ``(0, 1)`` for the Gaussian mechanisms; must be None for
        the Laplace ones.
    sensitivity : float, default=None
        The largest change of the table of counts between neighbouring data
        sets, in L1 norm for the Laplace mechanisms and in L2 norm for the
        Gaussian ones; the scale is calibrated to it. None: 2 (L1) or
        ``sqrt(2)`` (L2) times ``max_contributions``, the value when
        neighbouring data sets differ in one person's labels with the bag
        sizes kept (one unit moves from one count to another per row), as
        in :func:`dp_proportions`. Other neighbouring relations have other
        values: adding or removing a person changes one count by 1 (1 in
        both norms), but then the bag sizes are private too and must not be
        used unprotected.
    max_contributions : int, default=1
        Most rows (labels) one person has; the default sensitivity is
        multiplied by it. See :func:`dp_proportions`.

    Returns
    -------
    scale : float
        Laplace ``b``, Gaussian ``sigma``, discrete Laplace ``t`` or discrete
        Gaussian ``sigma`` of the noise on every count
        (:func:`noise_variance` gives its variance).

    Raises
    ------
    ValueError
        Naming ``epsilon``, ``delta``, ``mechanism``, ``sensitivity`` or
        ``max_contributions`` when one is invalid, and naming ``epsilon``
        when it is so small that the scale or its variance overflows float64
        (a release of pure noise), or the integer noise int64.

    Examples
    --------
    >>> from sklearn_llp.privacy import dp_noise_scale
    >>> dp_noise_scale(0.5)  # Laplace, L1 sensitivity 2
    4.0
    >>> round(dp_noise_scale(0.5, "gaussian", delta=1e-5), 2)  # L2 sqrt(2)
    13.7
    >>> dp_noise_scale(0.5, sensitivity=1.0)  # a table of L1 sensitivity 1
    2.0
    >>> dp_noise_scale(0.5, max_contributions=3)  # 3 rows a person: L1 6
    12.0
    >>> dp_noise_scale(0.5, "discrete_laplace")  # t of P(k) ∝ exp(-|k| / t)
    4.0
    >>> round(dp_noise_scale(1.0, "analytic_gaussian", delta=1e-6), 2)
    5.97
    >>> round(dp_noise_scale(1.0, "discrete_gaussian", delta=1e-6), 2)
    6.41
    """
    mechanism = _check_mechanism(mechanism)
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, mechanism)
    contributions = _check_count(max_contributions, "max_contributions")
    sensitivity = _check_sensitivity(
        sensitivity, mechanism, contributions=contributions
    )
    return _checked_scale(epsilon, mechanism, delta, sensitivity)


def _checked_scale(epsilon, mechanism, delta, sensitivity):
    """The scale for validated arguments, refusing one that overflows."""
    if math.isinf(epsilon):
        return 0.0
    scale = _noise_scale(epsilon, mechanism, delta, sensitivity)
    # the variance of scale 1 (an upper bound for the integer noises)
    unit_variance = 2.0 if NOISE_NORMS[MECHANISMS[mechanism]] == "L1" else 1.0
    with np.errstate(over="ignore"):
        variance = unit_variance * np.float64(scale) ** 2
    limit = (
        _MAX_DISCRETE_SCALE if MECHANISMS[mechanism].startswith("discrete") else np.inf
    )
    if not (math.isfinite(scale) and np.isfinite(variance) and scale <= limit):
        raise ValueError(
            f"epsilon={epsilon!r} is too small for mechanism={mechanism!r} with "
            f"sensitivity={sensitivity:.6g}: the noise scale ({scale:.3g}) or its "
            "variance overflows "
            + ("int64 draws" if math.isfinite(limit) else "float64")
            + ", and such a release is pure noise. Use a larger epsilon."
        )
    return scale


def _noise_scale(epsilon, mechanism, delta, sensitivity):
    """The scale of :func:`dp_noise_scale`, arguments validated."""
    if mechanism in _PURE:
        return sensitivity / epsilon
    if mechanism == "gaussian":
        if epsilon >= 1:
            raise ValueError(
                f"epsilon={epsilon} with mechanism='gaussian': the classical bound "
                "sigma = sensitivity * sqrt(2 ln(1.25/delta)) / epsilon holds for "
                "epsilon < 1 "
                "only; use mechanism='analytic_gaussian' for larger epsilon."
            )
        return sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    if mechanism == "discrete_gaussian":
        return sensitivity / math.sqrt(2.0 * _zcdp_rho(epsilon, delta))
    return _analytic_gaussian_sigma(epsilon, delta, sensitivity)


def _check_min_bag_size(min_bag_size, sizes):
    """The mask of the bags kept (all without a threshold)."""
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


def _draw(rng, noise, scale, shape):
    """Noise of the given distribution and scale, one draw per entry."""
    if noise == "laplace":
        return rng.laplace(0.0, scale, size=shape) if scale else np.zeros(shape)
    if noise == "gaussian":
        return rng.normal(0.0, scale, size=shape) if scale else np.zeros(shape)
    if noise == "discrete_laplace":
        return _discrete_laplace(rng, scale, shape)
    return _discrete_gaussian(rng, scale, shape)


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

    Counts every class in every bag, adds independent noise to every count
    (the Laplace or Gaussian mechanism, continuous or on the integers; scale
    from :func:`dp_noise_scale`), optionally clamps the noisy counts to
    ``[0, n_B]``, withholds the bags smaller than ``min_bag_size``, and turns
    the noisy counts back into proportions on the simplex, using the bag
    sizes, which are public: in LLP the learner holds the bags' members
    anyway. These are the forms of privacy-protected aggregates (ad
    conversion reports, official statistics) a learner receives.

    **Privacy guarantee.** Neighbouring data sets have the same people in
    the same bags (so the same bag sizes) and differ in the labels of one
    person (replace-one on labels; membership and sizes are not protected).
    With one row per person, changing its label takes 1 from one count of
    its bag and adds 1 to another, so the table of counts has L1
    sensitivity 2 and L2 sensitivity ``sqrt(2)`` (``sensitivity=None``).
    With ``max_contributions=k`` (a person has up to ``k`` rows, e.g.
    purchases, in any bags) every changed row moves one unit: L1 sensitivity
    ``2 k`` and L2 sensitivity ``sqrt(2) k`` (reached when all ``k`` rows
    are in one bag and change between the same two classes). The mechanisms
    add independent noise to every count, calibrated to that sensitivity
    ``Delta``:

    - ``"laplace"``: Laplace noise of scale ``b = Delta_1 / epsilon``
      (``2 / epsilon`` by default; variance ``2 b**2``), epsilon-DP;
    - ``"discrete_laplace"``: integer noise ``P(k) ∝ exp(-|k| epsilon /
      Delta_1)``, epsilon-DP; the released counts are integers;
    - ``"gaussian"``: normal noise of standard deviation ``sigma = Delta_2
      sqrt(2 ln(1.25 / delta)) / epsilon`` (epsilon < 1), and
      ``"analytic_gaussian"``: the smallest sigma for L2 sensitivity
      ``Delta_2`` (Balle & Wang); both (epsilon, delta)-DP;
    - ``"discrete_gaussian"``: integer noise ``P(k) ∝ exp(-k**2 / (2
      sigma**2))`` with ``rho = Delta_2**2 / (2 sigma**2)``-zCDP converted
      to (epsilon, delta)-DP (:func:`dp_noise_scale`); ``attrs["rho"]``
      holds the zCDP guarantee, which composes additively.

    Every person's rows are in the table once, so the guarantee holds for
    all bags at once, however many there are. Everything else is
    post-processing of the noisy counts and the public sizes, which keeps
    the guarantee: clamping (``clamp=True``), the shares (``counts / n_B``
    projected onto the simplex, or the clipped counts renormalised), and
    withholding the bags below ``min_bag_size``, a rule on the public sizes
    that does not look at any label. (Earlier code defaulted to
    ``sensitivity=1``, the add/remove-one value, which does not apply when
    the exact sizes are used: its releases at ``epsilon`` were only ``2
    epsilon``-DP under this relation.)

    The noise is drawn with numpy's floating-point samplers: the integer
    noise has the stated distribution up to the rounding of doubles (its
    samplers are those of the references, run in doubles). That is what a
    simulation needs; a real release needs a sampler hardened against
    floating-point attacks.

    **Suppressed bags.** Bags of fewer than ``min_bag_size`` rows are
    withheld, as statistical agencies suppress small cells: they are absent
    from the returned table (their ids are in ``attrs["suppressed"]``), so
    their rows have no proportions. ``LLPClassifier.fit`` refuses rows whose
    bag has no proportions (a ``ValueError``): drop them explicitly with
    :func:`released_rows`, ``keep = released_rows(bags, table)``, then fit
    on ``X[keep], bags[keep]``. Nothing is filled in for them.

    Use it to simulate what a privacy-protected release would do to a model
    trained on it; :class:`~sklearn_llp.methods.NoisyProportions` takes the
    noise of the release (``method__noise=table.attrs["noise"]``,
    ``method__scale=table.attrs["noise_scale"]``) and weighs every bag by
    how much its proportions can be trusted.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every row; rows with the integer id ``-1`` are in no bag
        and left out.
    y : array-like of shape (n_samples,)
        Class label of every row.
    epsilon : float
        Privacy budget of the whole table, positive; ``np.inf`` releases the
        exact proportions (noise scale 0). Values so small that the noise
        scale or its variance overflows float64 (or the integer noise int64)
        are refused.
    mechanism : {"laplace", "gaussian", "analytic_gaussian", \
"discrete_laplace", "discrete_gaussian"}, default="laplace"
        See above and :func:`dp_noise_scale`.
    delta : float, default=None
        For the Gaussian mechanisms, in ``(0, 1)``; None for the Laplace
        ones.
    sensitivity : float, default=None
        The L1 (Laplace) or L2 (Gaussian) sensitivity the noise is calibrated
        to. None: the table's exact sensitivity under the relation above, 2
        (L1) or ``sqrt(2)`` (L2) times ``max_contributions``. A larger value
        adds proportionally more noise and protects more. Smaller values are
        refused: the release would not be (epsilon, delta)-DP (1, the
        add/remove-one value, does not apply with the bag sizes public).
    max_contributions : int, default=1
        Most rows one person has (a bound the data holder enforces, e.g. by
        keeping at most this many rows a person); the sensitivity, and the
        noise, scale with it.
    min_bag_size : int, default=None
        Bags of fewer rows are withheld (see "Suppressed bags"). None
        releases every bag.
    clamp : bool, default=False
        Clip every noisy count to ``[0, n_B]`` (its possible range) before
        the shares are computed. Free post-processing; the clamped counts
        are biased (towards the middle of the range for small bags), so
        ``return_counts`` then returns biased counts.
    classes : array-like of shape (n_classes,), default=None
        Columns, in this order; default the sorted labels of ``y``. Every
        class gets a noisy count in every bag, also where it is absent.
    post_processing : {"project", "clip"}, default="project"
        How noisy counts ``c`` of a bag of ``n_B`` rows become proportions:

        - ``"project"``: :func:`project_to_simplex` of ``c / n_B``. It uses
          the known size, spreads the error of the noisy total over the
          classes and then clips: for two classes the share keeps half the
          noise variance of one count (``var / (2 n_B**2)``).
        - ``"clip"``: ``max(c, 0)`` renormalised to sum 1 (uniform where
          every count is at most 0), as from a published table of counts
          alone.
    return_counts : bool, default=False
        Also return the noisy counts before post-processing (unbiased
        without ``clamp``: their mean over noise draws is the true counts).
    random_state : int, RandomState instance or None, default=None
        Seeds the noise. The noise of every bag is drawn before suppression,
        so a bag's release does not depend on ``min_bag_size``.

    Returns
    -------
    table : DataFrame of shape (n_released_bags, n_classes)
        Indexed by the sorted ids of the released bags (``"bag"``), one
        column per class (``"class"``), rows on the simplex: a per-bag
        ``props`` table as from :func:`label_proportions`. ``table.attrs``
        records the release: ``mechanism``, ``epsilon``, ``delta``,
        ``sensitivity`` (the value used), ``max_contributions``,
        ``neighbours`` (``"replace-one label, bag sizes public"``),
        ``noise`` (the distribution of the noise on a count:
        ``"laplace"``, ``"gaussian"``, ``"discrete_laplace"`` or
        ``"discrete_gaussian"``), ``noise_scale``, ``noise_variance`` and
        ``noise_std`` of every count (before clamping; what
        :class:`~sklearn_llp.methods.NoisyProportions` takes),
        ``rho`` (zCDP, for ``"discrete_gaussian"``; else None),
        ``clamp``, ``min_bag_size`` and ``suppressed`` (the ids of the
        withheld bags, a list).
    counts : DataFrame of shape (n_released_bags, n_classes)
        Only with ``return_counts=True``: the noisy counts (floats, or
        integers for the discrete mechanisms; negative or above the size
        unless clamped); same index, columns and ``attrs``.

    Raises
    ------
    ValueError
        Naming ``epsilon``, ``delta``, ``mechanism``, ``sensitivity``,
        ``max_contributions``, ``min_bag_size`` or ``post_processing`` when
        invalid (``sensitivity`` also when below the table's sensitivity,
        ``epsilon`` also when so small that the noise overflows,
        ``min_bag_size`` also when it withholds every bag), and as
        :func:`label_proportions` for bad ``bags``, ``y`` or ``classes``.

    See Also
    --------
    label_proportions : The exact table.
    released_rows : The rows whose bag was released.
    project_to_simplex : Put a raw noisy release on the simplex.
    noise_variance : The variance of a count's noise.
    sklearn_llp.methods.NoisyProportions : Training that weighs bags by
        the noise of their proportions.

    References
    ----------
    C. Dwork, F. McSherry, K. Nissim, A. Smith. Calibrating noise to
    sensitivity in private data analysis. TCC 2006.

    A. Ghosh, T. Roughgarden, M. Sundararajan. Universally utility-maximizing
    privacy mechanisms. STOC 2009.

    C. Dwork, A. Roth. The algorithmic foundations of differential privacy.
    2014.

    B. Balle, Y.-X. Wang. Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising. ICML 2018.

    C. L. Canonne, G. Kamath, T. Steinke. The discrete Gaussian for
    differential privacy. NeurIPS 2020.

    Examples
    --------
    >>> from sklearn_llp.privacy import dp_proportions
    >>> bags = [0] * 50 + [1] * 50
    >>> y = [0] * 40 + [1] * 10 + [0] * 5 + [1] * 45
    >>> # true counts [[40, 10], [5, 45]] plus Laplace noise of scale
    >>> # 2 / epsilon = 1, then divided by the sizes (50) and projected onto
    >>> # the simplex
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

    Integer noise, counts clamped to ``[0, n_B]``, and a bag of 3 withheld:

    >>> import numpy as np
    >>> from sklearn_llp.privacy import released_rows
    >>> bags = np.array([0] * 50 + [1] * 50 + [2] * 3)
    >>> y = np.array([0] * 40 + [1] * 10 + [0] * 5 + [1] * 45 + [1, 1, 0])
    >>> table, counts = dp_proportions(
    ...     bags, y, 2.0, mechanism="discrete_laplace", min_bag_size=10,
    ...     clamp=True, return_counts=True, random_state=0,
    ... )
    >>> counts  # doctest: +NORMALIZE_WHITESPACE
    class   0   1
    bag
    0      40   9
    1       2  45
    >>> table.attrs["suppressed"], round(table.attrs["noise_variance"], 3)
    ([2], 1.841)
    >>> keep = released_rows(bags, table)  # fit on X[keep], bags[keep]
    >>> int(keep.sum())
    100
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
    if not isinstance(clamp, (bool, np.bool_)):
        raise ValueError(f"clamp must be True or False; got {clamp!r}.")
    scale = _checked_scale(epsilon, mechanism, delta, sensitivity)
    exact = label_proportions(bags, y, classes=classes)
    ids = _id_array(bags)
    kept = ids[~_unbagged_mask(ids)]
    sizes = check_bags(kept).sizes.astype(np.float64)  # in the table's order
    min_bag_size, released = _check_min_bag_size(min_bag_size, sizes)
    noise = MECHANISMS[mechanism]
    counts = np.rint(exact.to_numpy() * sizes[:, None])
    if noise.startswith("discrete"):
        counts = counts.astype(np.int64)

    rng = check_random_state(random_state)
    noisy = counts + _draw(rng, noise, scale, counts.shape)
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
    variance = noise_variance(noise, scale)
    attrs = {
        "mechanism": mechanism,
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": sensitivity,
        "max_contributions": contributions,
        "neighbours": NEIGHBOURS,
        "noise": noise,
        "noise_scale": scale,
        "noise_variance": variance,
        "noise_std": math.sqrt(variance),
        "rho": (
            sensitivity**2 / (2 * scale**2)
            if noise == "discrete_gaussian" and scale > 0
            else None
        ),
        "clamp": bool(clamp),
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


def released_rows(bags, table):
    """Which rows have proportions (or a target) in a released per-bag table.

    A release that withholds small bags (``min_bag_size`` of
    :func:`dp_proportions` or :func:`dp_bag_means`) has no row for them, and
    ``LLPClassifier.fit`` refuses rows whose bag has no proportions. This
    mask selects the others, to drop the rest explicitly: ``fit(X[keep],
    bags[keep], table)``.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every row (the ids the table was released for; ``-1``
        marks rows in no bag, never kept).
    table : DataFrame, Series or dict
        Per-bag table indexed (or keyed) by bag id.

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
    ids = _id_array(bags)
    if isinstance(table, (pd.DataFrame, pd.Series)):
        index = table.index
    elif isinstance(table, dict):
        index = pd.Index(list(table), tupleize_cols=False)
    else:
        raise TypeError(
            "table must be a per-bag DataFrame, Series or dict indexed by bag id; "
            f"got {type(table).__name__}."
        )
    keep = np.asarray(pd.Index(ids, tupleize_cols=False).isin(index), dtype=bool)
    return keep & ~_unbagged_mask(ids)


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

    For learning a regressor from bag means (the target of every row known
    only through its bag's mean): every row's target is clipped to
    ``bounds = (lo, hi)``, every bag's sum of clipped targets gets
    independent noise (the Laplace or Gaussian mechanism), and the noisy sum
    is divided by the public bag size. The returned table also gives the
    noise standard deviation of every released mean, for
    :func:`noise_aware_bag_weights`.

    **Privacy guarantee.** Neighbouring data sets have the same people in
    the same bags (the sizes are public) and differ in the target values of
    one person (replace-one on values). Clipping is a fixed map of every
    row, so one changed row moves one bag's sum of clipped values by at most
    ``hi - lo``; a person with up to ``k = max_contributions`` rows moves
    the vector of sums by at most ``Delta = k (hi - lo)`` in L1 norm and in
    L2 norm (all ``k`` rows in one bag reach it in both). The Laplace
    mechanism (scale ``b = Delta / epsilon``) is then epsilon-DP and the
    Gaussian ones (``sigma`` from :func:`dp_noise_scale` with L2 sensitivity
    ``Delta``) (epsilon, delta)-DP for the whole table. Dividing by the
    public sizes, clamping the means to ``bounds`` and withholding the bags
    under ``min_bag_size`` (a rule on the public sizes) are
    post-processing. Values outside ``bounds`` are clipped without notice
    (their number depends on the data and is not released); the means are
    then those of the clipped targets, biased when ``bounds`` cut the
    distribution.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every row; rows with the integer id ``-1`` are in no bag
        and left out.
    y : array-like of shape (n_samples,)
        Target of every row, numeric and finite.
    epsilon : float
        Privacy budget of the whole table, positive; ``np.inf`` releases the
        exact means of the clipped targets.
    bounds : (float, float)
        ``(lo, hi)``, finite with ``lo < hi``: the range every row's target
        is clipped to, fixed before seeing the data (choosing it from the
        data spends privacy).
    mechanism : {"laplace", "gaussian", "analytic_gaussian"}, default="laplace"
        See :func:`dp_noise_scale`.
    delta : float, default=None
        For the Gaussian mechanisms, in ``(0, 1)``; None for Laplace.
    max_contributions : int, default=1
        Most rows one person has; the sensitivity scales with it.
    min_bag_size : int, default=None
        Bags of fewer rows are withheld: absent from the table, their ids in
        ``attrs["suppressed"]``; select the other rows with
        :func:`released_rows`.
    clamp : bool, default=False
        Clip every noisy mean to ``bounds`` (biased; the ``std`` column is
        still that of the noise before clamping).
    random_state : int, RandomState instance or None, default=None
        Seeds the noise (drawn for every bag before suppression).

    Returns
    -------
    table : DataFrame of shape (n_released_bags, 3)
        Indexed by the sorted ids of the released bags (``"bag"``), with
        columns ``"mean"`` (the noisy mean), ``"std"`` (the standard
        deviation of its noise, ``noise_std / size``) and ``"size"`` (the
        public number of rows). ``table.attrs``: ``mechanism``, ``epsilon``,
        ``delta``, ``bounds``, ``sensitivity`` (``Delta``),
        ``max_contributions``, ``neighbours`` (``"replace-one value, bag
        sizes public"``), ``noise`` (``"laplace"`` or ``"gaussian"``),
        ``noise_scale``, ``noise_variance`` and ``noise_std`` of every bag's
        *sum*, ``clamp``, ``min_bag_size`` and ``suppressed``.

    Raises
    ------
    ValueError
        Naming ``epsilon``, ``delta``, ``mechanism``, ``bounds``,
        ``max_contributions``, ``min_bag_size`` or ``y`` when invalid.

    See Also
    --------
    noise_aware_bag_weights : Inverse-variance weights of the released means.
    released_rows : The rows whose bag was released.
    dp_proportions : The same for class counts.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.privacy import dp_bag_means
    >>> bags = np.repeat([0, 1, 2], [100, 40, 4])
    >>> y = np.r_[np.full(100, 30.0), np.full(40, 60.0), [10.0, 20.0, 30.0, 500.0]]
    >>> # targets clipped to [0, 100] (500 -> 100); noise on every sum of
    >>> # Laplace scale (100 - 0) / epsilon = 100, so mean sd 141 / size
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
    if not isinstance(clamp, (bool, np.bool_)):
        raise ValueError(f"clamp must be True or False; got {clamp!r}.")
    ids = _id_array(bags)
    try:
        values = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError("y must be numeric: one target value per row.") from None
    if values.ndim != 1 or len(values) != len(ids):
        raise ValueError(
            f"y must be 1-D with one value per row of bags ({len(ids)}); got shape "
            f"{values.shape}."
        )
    unbagged = _unbagged_mask(ids)
    if unbagged.all():
        raise ValueError("Every entry of bags is -1 (no bag); nothing to release.")
    values = values[~unbagged]
    if not np.all(np.isfinite(values)):
        raise ValueError("y contains NaN or infinite values; drop or fix those rows.")
    sensitivity = contributions * (hi - lo)
    scale = _checked_scale(epsilon, mechanism, delta, sensitivity)
    validated = check_bags(ids[~unbagged])
    sizes = validated.sizes.astype(np.float64)
    min_bag_size, released = _check_min_bag_size(min_bag_size, sizes)
    sums = np.bincount(
        validated.codes, weights=np.clip(values, lo, hi), minlength=validated.n_bags
    )
    rng = check_random_state(random_state)
    noise = MECHANISMS[mechanism]
    means = (sums + _draw(rng, noise, scale, sums.shape)) / sizes
    if clamp:
        means = np.clip(means, lo, hi)
    variance = noise_variance(noise, scale)
    index = pd.Index(validated.ids, name="bag", tupleize_cols=False)
    table = pd.DataFrame(
        {
            "mean": means,
            "std": math.sqrt(variance) / sizes,
            "size": validated.sizes,
        },
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
            "noise": noise,
            "noise_scale": scale,
            "noise_variance": variance,
            "noise_std": math.sqrt(variance),
            "clamp": bool(clamp),
            "min_bag_size": min_bag_size,
            "suppressed": index[~released].tolist(),
        }
    )
    return table


def noise_aware_bag_weights(released, bags=None, *, target_variance=0.0):
    """Inverse-variance weights of noisy bag means, per bag or per row.

    A regressor fitted to bag means by the squared loss ``sum_B w_B (yhat_B
    - m_B)**2`` (``yhat_B`` the mean prediction over bag ``B``, ``m_B`` its
    released mean) is the maximum-likelihood fit of Gaussian residuals when
    ``w_B`` is the inverse of the variance of ``m_B - yhat_B``:

        ``var_B = target_variance / n_B + std_B**2``,
        ``w_B = 1 / var_B = n_B**2 / (n_B target_variance + noise_var)``

    with ``std_B`` the released noise sd of the mean (``noise_std / n_B``,
    column ``"std"`` of :func:`dp_bag_means`) and ``target_variance`` the
    variance of a row's target around the model (unknown; 0 keeps only the
    noise, ``w_B = n_B**2 / noise_var``; ``(hi - lo)**2 / 4`` is its bound
    for targets in ``bounds``). Without noise the weights are proportional
    to ``n_B`` (the bag mean of ``n_B`` rows has ``1 / n_B`` of a row's
    variance); bags small against the noise get ``n_B**2 /
    noise_var``. The weights are scaled to average 1 over the bags: only
    their ratios matter to the minimiser, the scale to the step size and the
    balance with any penalty.

    Per-row weights (``bags`` given) are ``w_B / n_B`` for every row of bag
    ``B``, scaled to average 1 over the rows: a bag's *total* row weight is
    then proportional to ``w_B``, and equal weights within a bag leave its
    weighted mean prediction unchanged. Pass them as ``sample_weight`` to a
    regressor whose bag loss weighs every bag by the total sample weight of
    its rows (and whose bag prediction is the weighted mean of its rows'); a
    loss that counts every bag once whatever its weights (as DLLP does for
    proportions) ignores such per-row weights, and needs the per-bag
    weights instead.

    Parameters
    ----------
    released : DataFrame
        Indexed by bag id, with the columns ``"size"`` and ``"std"``, as
        :func:`dp_bag_means` returns.
    bags : array-like of shape (n_samples,), default=None
        Bag id of every row: return one weight per row. Every row's bag must
        be in ``released``: drop the rows of withheld bags first
        (:func:`released_rows`).
    target_variance : float, default=0.0
        Non-negative; see above.

    Returns
    -------
    weights : Series of shape (n_bags,) or ndarray of shape (n_samples,)
        Per bag (indexed like ``released``, mean 1) or per row (mean 1).

    Raises
    ------
    ValueError
        Naming ``target_variance`` when negative or not finite, or when it
        is 0 and a bag has no noise (its weight would be infinite); naming
        ``released`` when it lacks the columns or holds invalid values;
        naming ``bags`` when a row's bag is not released.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.privacy import dp_bag_means, noise_aware_bag_weights
    >>> bags = np.repeat([0, 1, 2], [100, 40, 10])
    >>> y = np.linspace(0, 1, 150)
    >>> table = dp_bag_means(bags, y, 1.0, bounds=(0, 1), random_state=0)
    >>> noise_aware_bag_weights(table).round(3).tolist()  # n_B**2 / noise_var
    [2.564, 0.41, 0.026]
    >>> noise_aware_bag_weights(table, target_variance=0.25).round(3).tolist()
    [2.113, 0.761, 0.127]
    >>> rows = noise_aware_bag_weights(table, bags, target_variance=0.25)
    >>> rows[[0, 100, 140]].round(3).tolist()  # w_B / n_B, mean 1 over rows
    [1.056, 0.951, 0.634]
    """
    if not isinstance(released, pd.DataFrame) or not {"size", "std"} <= set(
        released.columns
    ):
        raise ValueError(
            "released must be a per-bag DataFrame with the columns 'size' and "
            "'std', as dp_bag_means returns."
        )
    if (
        isinstance(target_variance, bool)
        or not isinstance(target_variance, Real)
        or not math.isfinite(target_variance)
        or target_variance < 0
    ):
        raise ValueError(
            "target_variance must be a finite, non-negative number; got "
            f"{target_variance!r}."
        )
    sizes = released["size"].to_numpy(dtype=np.float64)
    std = released["std"].to_numpy(dtype=np.float64)
    if not (np.all(np.isfinite(sizes)) and np.all(sizes > 0)) or not (
        np.all(np.isfinite(std)) and np.all(std >= 0)
    ):
        raise ValueError(
            "released must hold positive finite sizes and finite non-negative stds."
        )
    variance = target_variance / sizes + std**2
    if np.any(variance == 0):
        raise ValueError(
            "target_variance=0 and a bag's mean has no noise (std 0): its "
            "inverse-variance weight would be infinite. Pass target_variance > 0 "
            "(weights proportional to the bag sizes without noise)."
        )
    weights = 1.0 / variance
    if bags is None:
        return pd.Series(weights / weights.mean(), index=released.index, name="weight")
    ids = _id_array(bags)
    rows = released.index.get_indexer(pd.Index(ids, tupleize_cols=False))
    if np.any(rows < 0):
        shown = pd.unique(pd.Index(ids, tupleize_cols=False)[rows < 0])[:5].tolist()
        raise ValueError(
            f"bags has {int(np.sum(rows < 0))} row(s) whose bag is not in released, "
            f"e.g. of bag(s) {shown}: drop them first, keep = released_rows(bags, "
            "released)."
        )
    per_row = (weights / sizes)[rows]
    return per_row / per_row.mean()
