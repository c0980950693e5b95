"""Noise mechanisms: their scale for a privacy budget, samplers, variances."""

import functools
import math
from numbers import Integral, Real

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import log_ndtr, ndtr

#: The noise distributions, and the norm of the sensitivity each is
#: calibrated to (``noise`` of :class:`~sklearn_llp.methods.NoisyProportions`).
NOISE_NORMS = dict(
    laplace="L1", gaussian="L2", discrete_laplace="L1", discrete_gaussian="L2"
)

#: The mechanisms, and the distribution of the noise each adds.
MECHANISMS = {**{n: n for n in NOISE_NORMS}, "analytic_gaussian": "gaussian"}

_PURE = ("laplace", "discrete_laplace")  # epsilon-DP, no delta

#: Largest scale of integer noise: its draws must stay exact in int64.
_MAX_DISCRETE_SCALE = 2.0**40

#: Sensitivity (L1, L2) of released counts per row of a person, by relation
#: (:ref:`privacy_accounting`); "one_count": one of two classes, sizes public.
COUNT_SENSITIVITY = dict(replace=(2.0, 2.0**0.5), add_remove=(1, 1), one_count=(1, 1))
NEIGHBOURS = ("replace", "add_remove")


def _norm(mechanism):
    return NOISE_NORMS[MECHANISMS[mechanism]]


def _is_real(value):
    return isinstance(value, Real) and not isinstance(value, bool)


def _check_count(value, name, *, none_ok=False):
    """A positive integer (or None where allowed), or a ValueError naming it."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        allowed = "a positive integer or None" if none_ok else "a positive integer"
        raise ValueError(f"{name} must be {allowed}; got {value!r}.")
    return int(value)


def _check_arguments(
    mechanism, epsilon, delta, max_contributions, clamp=False, allowed=MECHANISMS
):
    """The checked mechanism, epsilon, delta, contribution bound and clamp."""
    if not isinstance(mechanism, str) or mechanism not in allowed:
        raise ValueError(
            f"mechanism must be one of {sorted(allowed)}; got {mechanism!r}."
        )
    if not _is_real(epsilon) or math.isnan(epsilon) or epsilon <= 0:
        raise ValueError(
            f"epsilon must be a positive number (np.inf for no noise); got {epsilon!r}."
        )
    if mechanism in _PURE and delta is not None:
        raise ValueError(
            f"delta={delta!r} is only used by the Gaussian mechanisms; "
            f"mechanism={mechanism!r} is pure epsilon-DP: leave delta=None."
        )
    if mechanism not in _PURE and (not _is_real(delta) or not 0 < delta < 1):
        raise ValueError(
            f"delta must be a number in (0, 1) for mechanism={mechanism!r} "
            f"(typically below 1 / n_people, e.g. 1e-6); got {delta!r}."
        )
    contributions = _check_count(max_contributions, "max_contributions")
    if not isinstance(clamp, (bool, np.bool_)):
        raise ValueError(f"clamp must be True or False; got {clamp!r}.")
    delta = None if delta is None else float(delta)
    return mechanism, float(epsilon), delta, contributions, bool(clamp)


def _check_neighbours(neighbours):
    if neighbours not in NEIGHBOURS:
        raise ValueError(
            f"neighbours must be 'replace' or 'add_remove'; got {neighbours!r}."
        )
    return neighbours


def _check_sensitivity(
    sensitivity, mechanism, *, release=False, contributions=1, relation="replace"
):
    """``sensitivity`` checked; None: the table's (a floor if ``release``)."""
    norm = _norm(mechanism)
    exact = contributions * float(COUNT_SENSITIVITY[relation][norm == "L2"])
    per = "" if contributions == 1 else f" for max_contributions={contributions}"
    if sensitivity is None:
        return exact
    if not _is_real(sensitivity) or not math.isfinite(sensitivity) or sensitivity <= 0:
        raise ValueError(
            f"sensitivity must be a positive finite number or None (the "
            f"{relation} {norm} sensitivity {exact:.6g} of a table of "
            f"counts{per}); got {sensitivity!r}."
        )
    if release and sensitivity < exact * (1 - 1e-12):
        raise ValueError(
            f"sensitivity={sensitivity!r} is below {exact:.6g}, the {norm} "
            f"sensitivity of the table of counts for mechanism={mechanism!r}{per} "
            f"under neighbours={relation!r} (one person's label changed or "
            "one person added or removed). Leave sensitivity=None or pass more."
        )
    return float(sensitivity)


def _one_count(one_count, n_classes, relation, mechanism):
    """Whether two classes release one count (:ref:`privacy_accounting`)."""
    two = n_classes == 2 and relation == "replace"
    if one_count is None:
        return two and _norm(mechanism) == "L1"
    if one_count not in (True, False) or (one_count and not two):
        raise ValueError(
            "one_count must be None, True or False, and True only for two "
            f"classes with neighbours='replace'; got {one_count!r}."
        )
    return bool(one_count)


def _discrete_laplace(rng, scale, size):
    """``P(k) ∝ exp(-|k| / scale)``: a difference of two geometric draws."""
    if scale == 0:
        return np.zeros(size, dtype=np.int64)
    p = -math.expm1(-1.0 / scale)
    return rng.geometric(p, size) - rng.geometric(p, size)


def _discrete_gaussian(rng, sigma, size):
    """``P(k) ∝ exp(-k**2 / (2 sigma**2))``, CKS 2020 Algorithm 3 in doubles."""
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
    """The discrete Gaussian's variance, summed (``sigma**2`` above 20)."""
    if sigma == 0:
        return 0.0
    if sigma > 20:
        return sigma**2
    k = np.arange(-math.ceil(40 * sigma) - 1, math.ceil(40 * sigma) + 2)
    mass = np.exp(-(k**2) / (2 * sigma**2))
    return float(np.sum(k**2 * mass) / np.sum(mass))


def _draw(rng, noise, scale, shape):
    """Noise of the given distribution and scale, one draw per entry."""
    if noise == "laplace":
        return rng.laplace(0.0, scale, size=shape) if scale else np.zeros(shape)
    if noise == "gaussian":
        return rng.normal(0.0, scale, size=shape) if scale else np.zeros(shape)
    if noise == "discrete_laplace":
        return _discrete_laplace(rng, scale, shape)
    return _discrete_gaussian(rng, scale, shape)


def noise_variance(noise, scale):
    """Variance of the noise of a given scale on one released count (or sum).

    :class:`~sklearn_llp.methods.NoisyProportions` weighs bags by it
    (:ref:`privacy_accounting`).

    Parameters
    ----------
    noise : {"laplace", "gaussian", "discrete_laplace", "discrete_gaussian"}
        The distribution (``attrs["noise"]`` of a release).
    scale : float or array-like of float
        Its non-negative scale (``attrs["noise_scale"]``).

    Returns
    -------
    variance : float or ndarray
        Of the shape of ``scale``.

    Examples
    --------
    >>> from sklearn_llp.privacy import noise_variance
    >>> noise_variance("laplace", 2.0), noise_variance("gaussian", [0.0, 3.0]).tolist()
    (8.0, [0.0, 9.0])
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
            inverse = 1.0 / values  # inf for scale 0: q = 0, variance 0
        # 2 q / (1 - q)**2, with 1 - q = -expm1(-1/t) precise for large t
        variance = 2.0 * np.exp(-inverse) / np.expm1(-inverse) ** 2
    else:
        unique, where = np.unique(values, return_inverse=True)
        per_scale = np.array([_discrete_gaussian_variance(s) for s in unique])
        variance = per_scale[where].reshape(values.shape)
    return float(variance) if variance.ndim == 0 else variance


def _zcdp_log_delta(rho, epsilon):
    """log delta at ``epsilon`` of rho-zCDP (CKS 2020, Corollary 13)."""

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


def _largest(ok, start):
    """The largest ``x`` with ``ok(x)`` (true below a threshold), by bisection."""
    low = high = start
    while ok(high) and high < 1e300:
        high *= 16.0
    while not ok(low) and low > 1e-300:
        low /= 16.0
    for _ in range(200):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if ok(mid) else (low, mid)
        if high / low < 1 + 1e-13:
            break
    return low


@functools.lru_cache(maxsize=256)
def _zcdp_rho(epsilon, delta):
    """The largest rho whose zCDP gives (epsilon, delta)-DP."""
    log_delta = math.log(delta)
    return _largest(lambda rho: _zcdp_log_delta(rho, epsilon) <= log_delta, 1.0)


def _analytic_gaussian_delta(sigma, epsilon, sensitivity):
    """The Gaussian mechanism's delta (Balle & Wang 2018, Theorem 8)."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    return ndtr(a - b) - np.exp(epsilon + log_ndtr(-a - b))


def _checked_scale(epsilon, mechanism, delta, sensitivity):
    """The scale of :func:`dp_noise_scale` for checked arguments; overflow refused."""
    if math.isinf(epsilon):
        return 0.0
    if mechanism in _PURE:
        scale = sensitivity / epsilon
    elif mechanism == "gaussian":
        if epsilon >= 1:
            raise ValueError(
                f"epsilon={epsilon} with mechanism='gaussian': the classical bound "
                "sigma = sensitivity * sqrt(2 ln(1.25/delta)) / epsilon holds for "
                "epsilon < 1 only; use mechanism='analytic_gaussian' for larger "
                "epsilon."
            )
        scale = sensitivity * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    elif mechanism == "discrete_gaussian":
        scale = sensitivity / math.sqrt(2.0 * _zcdp_rho(epsilon, delta))
    else:  # the smallest sigma whose delta is at most ``delta``
        ok = lambda p: _analytic_gaussian_delta(1 / p, epsilon, sensitivity) <= delta  # noqa: E731
        scale = 1 / _largest(ok, 1 / sensitivity)
    # the variance of scale 1 (an upper bound for the integer noises)
    unit_variance = 2.0 if _norm(mechanism) == "L1" else 1.0
    with np.errstate(over="ignore"):
        variance = unit_variance * np.float64(scale) ** 2
    discrete = MECHANISMS[mechanism].startswith("discrete")
    limit = _MAX_DISCRETE_SCALE if discrete else np.inf
    if not (math.isfinite(scale) and np.isfinite(variance) and scale <= limit):
        raise ValueError(
            f"epsilon={epsilon!r} is too small for mechanism={mechanism!r} with "
            f"sensitivity={sensitivity:.6g}: the noise scale ({scale:.3g}) or its "
            "variance overflows "
            + ("int64 draws" if discrete else "float64")
            + ", and such a release is pure noise. Use a larger epsilon."
        )
    return scale


def dp_noise_scale(
    epsilon,
    mechanism="laplace",
    *,
    n_classes=None,
    one_count=None,
    delta=None,
    sensitivity=None,
    max_contributions=1,
    neighbours="replace",
):
    """Scale of the noise a mechanism adds to each count for (epsilon, delta)-DP.

    As :func:`dp_proportions` uses it (:ref:`privacy_accounting`).

    Parameters
    ----------
    epsilon, mechanism, one_count, delta, sensitivity, max_contributions, neighbours
        As in :func:`dp_proportions` (``"gaussian"``: for ``epsilon < 1`` only).
    n_classes : int, default=None
        Classes of the table; 2 (with ``one_count``) releases one count of
        sensitivity ``k``; None: every count released (more than two).

    Returns
    -------
    scale : float
        Laplace ``b``, Gaussian ``sigma``, discrete Laplace ``t`` or discrete
        Gaussian ``sigma``.

    Examples
    --------
    >>> from sklearn_llp.privacy import dp_noise_scale
    >>> dp_noise_scale(0.5), dp_noise_scale(0.5, max_contributions=3)  # 2 / eps
    (4.0, 12.0)
    >>> dp_noise_scale(0.5, n_classes=2), dp_noise_scale(0.5, neighbours="add_remove")
    (2.0, 2.0)
    """
    mechanism, epsilon, delta, contributions, _ = _check_arguments(
        mechanism, epsilon, delta, max_contributions
    )
    relation = _check_neighbours(neighbours)
    n_classes = _check_count(n_classes, "n_classes", none_ok=True)
    one = _one_count(one_count, n_classes, relation, mechanism)
    relation = "one_count" if one else relation
    sensitivity = _check_sensitivity(
        sensitivity, mechanism, contributions=contributions, relation=relation
    )
    return _checked_scale(epsilon, mechanism, delta, sensitivity)
