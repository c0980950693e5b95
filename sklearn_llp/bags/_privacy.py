"""Differentially private label proportions, and putting noisy ones back on
the simplex.

Aggregate labels are often published with noise: a privacy-preserving
release adds Laplace or Gaussian noise to every class *count* of every bag
(:func:`dp_proportions` simulates one), and the shares computed from noisy
counts may be negative or not sum to 1. The bag sizes are public (the
learner holds the bags' members); what is protected is every person's label,
and neighbouring data sets differ in one person's label (see "Privacy
guarantee" in :func:`dp_proportions`). ``LLPClassifier`` (through
:func:`~sklearn_llp.utils.check_bags`) only accepts proportions on the
probability simplex, so a raw noisy release is first projected onto it with
:func:`project_to_simplex`; :class:`~sklearn_llp.methods.NoisyProportions`
then trains with the noise scale of the release.
"""

import math
from numbers import Real

import numpy as np
import pandas as pd
from scipy.special import log_ndtr, ndtr
from sklearn.utils import check_random_state

from ..utils import check_bags
from ..utils._validation import _id_array
from ._proportions import _unbagged_mask, label_proportions

#: Mechanisms of :func:`dp_proportions` and :func:`dp_noise_scale`, and the
#: distribution of the noise each adds to a count.
MECHANISMS = {
    "laplace": "laplace",
    "gaussian": "gaussian",
    "analytic_gaussian": "gaussian",
}

_POST_PROCESSING = ("project", "clip")

#: Sensitivity of the table of counts of :func:`dp_proportions`, per noise
#: distribution, under its neighbouring relation (one person's label changed,
#: every bag's members and size kept): one count of the person's bag falls by
#: 1 and another rises by 1, so the change has L1 norm 2 (what the Laplace
#: mechanism is calibrated to) and L2 norm sqrt(2) (the Gaussian mechanisms).
REPLACE_ONE_SENSITIVITY = {"laplace": 2.0, "gaussian": math.sqrt(2.0)}

#: The neighbouring relation of :func:`dp_proportions`, as its ``attrs`` say.
NEIGHBOURS = "replace-one label, bag sizes public"


def project_to_simplex(props):
    """Euclidean projection of every row onto the probability simplex.

    The nearest point (in Euclidean distance) of ``{p : p >= 0, sum(p) =
    1}`` to each vector along the last axis: ``max(v - theta, 0)`` with the
    one ``theta`` that makes the result sum to 1, found by sorting (Held et
    al. 1974; Duchi et al. 2008), vectorised over rows. Rows already on the
    simplex are returned unchanged (up to rounding).

    Use it on a raw noisy release (shares computed from noisy counts, which
    may be negative or not sum to 1) before passing it as ``props``:
    :func:`~sklearn_llp.utils.check_bags` refuses shares below 0 and rows that
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
    >>> from sklearn_llp.bags import project_to_simplex
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


def _check_mechanism(mechanism):
    if not isinstance(mechanism, str) or mechanism not in MECHANISMS:
        raise ValueError(
            f"mechanism must be one of {sorted(MECHANISMS)}; got {mechanism!r}."
        )
    return mechanism


def _check_delta(delta, mechanism):
    if mechanism == "laplace":
        if delta is not None:
            raise ValueError(
                f"delta={delta!r} is only used by the Gaussian mechanisms; the "
                "Laplace mechanism is pure epsilon-DP: leave delta=None."
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


def _check_sensitivity(sensitivity, mechanism, *, release=False):
    """The sensitivity, ``None`` giving the replace-one value of the
    mechanism's norm; with ``release=True`` (:func:`dp_proportions`), smaller
    values than that are refused: the release would not be (epsilon,
    delta)-DP under its neighbouring relation."""
    norm = "L1" if MECHANISMS[mechanism] == "laplace" else "L2"
    replace_one = REPLACE_ONE_SENSITIVITY[MECHANISMS[mechanism]]
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
            f"counts); got {sensitivity!r}."
        )
    if release and sensitivity < replace_one * (1 - 1e-12):
        raise ValueError(
            f"sensitivity={sensitivity!r} is below {replace_one:.6g}, the {norm} "
            f"sensitivity of the table of counts for mechanism={mechanism!r}: "
            "with the bag sizes public, neighbouring data sets differ in one "
            "person's label, which moves one unit from one count to another "
            "(L1 2, L2 sqrt(2)); the value 1 is that of adding or removing a "
            "person, which the exact bag sizes used here would reveal. Leave "
            "sensitivity=None (the exact value) or pass a larger one."
        )
    return float(sensitivity)


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


def dp_noise_scale(epsilon, mechanism="laplace", *, delta=None, sensitivity=None):
    """Scale of the noise a mechanism adds to each count for (epsilon, delta)-DP.

    By default the scale of a :func:`dp_proportions` release: the
    sensitivity of its table of counts when neighbouring data sets differ in
    one person's label (bag sizes public), 2 in L1 norm (Laplace) and
    ``sqrt(2)`` in L2 norm (Gaussian). ``dp_noise_scale(epsilon, ...)`` is
    the ``attrs["noise_scale"]`` of ``dp_proportions(..., epsilon, ...)``
    with the same mechanism and delta.

    Parameters
    ----------
    epsilon : float
        Privacy budget, positive; ``np.inf`` gives 0 (no noise).
    mechanism : {"laplace", "gaussian", "analytic_gaussian"}, default="laplace"
        - ``"laplace"``: Laplace noise of scale ``b = sensitivity / epsilon``,
          epsilon-DP for an L1 sensitivity ``sensitivity`` (Dwork et al.
          2006): ``2 / epsilon`` by default. Variance ``2 b**2``.
        - ``"gaussian"``: normal noise with the classical bound ``sigma =
          sensitivity * sqrt(2 ln(1.25 / delta)) / epsilon`` (Dwork & Roth
          2014, Theorem A.1), (epsilon, delta)-DP for an L2 sensitivity
          ``sensitivity``; the theorem holds for ``epsilon < 1`` only, so
          larger values are refused.
        - ``"analytic_gaussian"``: the smallest ``sigma`` for which the
          Gaussian mechanism is (epsilon, delta)-DP (Balle & Wang 2018,
          Algorithm 1, by bisection); any epsilon, and less noise than the
          classical bound.
    delta : float, default=None
        Required in ``(0, 1)`` for the Gaussian mechanisms; must be None for
        ``"laplace"``.
    sensitivity : float, default=None
        The largest change of the table of counts between neighbouring data
        sets, in L1 norm for Laplace and in L2 norm for the Gaussian
        mechanisms; the scale is calibrated to it. None: 2 (L1) or
        ``sqrt(2)`` (L2), the value when neighbouring data sets differ in one
        person's label with the bag sizes kept (one unit moves from one count
        to another), as in :func:`dp_proportions`. Other neighbouring
        relations have other values: adding or removing a person changes one
        count by 1 (1 in both norms), but then the bag sizes are private too
        and must not be used unprotected.

    Returns
    -------
    scale : float
        Laplace ``b`` or Gaussian ``sigma`` of the noise on every count.

    Raises
    ------
    ValueError
        Naming ``epsilon``, ``delta``, ``mechanism`` or ``sensitivity`` when
        one is invalid, and naming ``epsilon`` when it is so small that the
        scale or its variance overflows float64 (a release of pure noise).

    Examples
    --------
    >>> from sklearn_llp.bags import dp_noise_scale
    >>> dp_noise_scale(0.5)  # Laplace, L1 sensitivity 2
    4.0
    >>> round(dp_noise_scale(0.5, "gaussian", delta=1e-5), 2)  # L2 sqrt(2)
    13.7
    >>> dp_noise_scale(0.5, sensitivity=1.0)  # a table of L1 sensitivity 1
    2.0
    """
    mechanism = _check_mechanism(mechanism)
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, mechanism)
    sensitivity = _check_sensitivity(sensitivity, mechanism)
    if math.isinf(epsilon):
        return 0.0
    scale = _noise_scale(epsilon, mechanism, delta, sensitivity)
    unit_variance = 2.0 if MECHANISMS[mechanism] == "laplace" else 1.0
    with np.errstate(over="ignore"):
        variance = unit_variance * np.float64(scale) ** 2
    if not (math.isfinite(scale) and np.isfinite(variance)):
        raise ValueError(
            f"epsilon={epsilon!r} is too small for mechanism={mechanism!r} with "
            f"sensitivity={sensitivity:.6g}: the noise scale ({scale:.3g}) or its "
            "variance overflows float64, and such a release is pure noise. "
            "Use a larger epsilon."
        )
    return scale


def _noise_scale(epsilon, mechanism, delta, sensitivity):
    """The scale of :func:`dp_noise_scale`, arguments validated."""
    if mechanism == "laplace":
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
    return _analytic_gaussian_sigma(epsilon, delta, sensitivity)


def dp_proportions(
    bags,
    y,
    epsilon,
    *,
    mechanism="laplace",
    delta=None,
    sensitivity=None,
    classes=None,
    post_processing="project",
    return_counts=False,
    random_state=None,
):
    """Differentially private label proportions of every bag (a simulated release).

    Counts every class in every bag, adds independent noise to every count
    (the Laplace or Gaussian mechanism, scale from :func:`dp_noise_scale`),
    and turns the noisy counts back into proportions on the simplex, using
    the bag sizes, which are public: in LLP the learner holds the bags'
    members anyway.

    **Privacy guarantee.** Neighbouring data sets have the same people in
    the same bags (so the same bag sizes) and differ in the label of one
    person (replace-one on labels; membership and sizes are not protected).
    Changing one label takes 1 from one count of the person's bag and adds
    1 to another, so the table of counts has L1 sensitivity 2 and L2
    sensitivity ``sqrt(2)`` (``sensitivity=None``). The Laplace mechanism
    adds independent Laplace noise of scale ``b = 2 / epsilon`` to every
    count (variance ``2 b**2 = 8 / epsilon**2``) and is epsilon-DP; the
    Gaussian mechanisms add normal noise of standard deviation ``sigma =
    sqrt(2) * sqrt(2 ln(1.25 / delta)) / epsilon`` (``"gaussian"``, epsilon
    < 1) or the smallest sigma for an L2 sensitivity ``sqrt(2)`` (Balle &
    Wang's ``"analytic_gaussian"``) and are (epsilon, delta)-DP. Every
    person is in one bag and has one label, so the whole table is one
    histogram and the guarantee holds for all bags at once, however many
    there are. The released shares (``counts / n_B`` projected onto the
    simplex, or the clipped counts renormalised) and the noisy counts are
    functions of the noisy counts and the public sizes alone:
    post-processing, which keeps the (epsilon, delta)-DP guarantee. (Earlier
    code defaulted to ``sensitivity=1``, the add/remove-one value, which does
    not apply when the exact sizes are used: its releases at ``epsilon``
    were only ``2 epsilon``-DP under this relation.)

    Use it to simulate what a privacy-protected release would do to a model
    trained on it; :class:`~sklearn_llp.methods.NoisyProportions` takes the
    noise scale of the release (``table.attrs["noise"]`` and
    ``table.attrs["noise_scale"]``) and weighs every bag by how much its
    proportions can be trusted.

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
        scale or its variance overflows float64 are refused.
    mechanism : {"laplace", "gaussian", "analytic_gaussian"}, default="laplace"
        See :func:`dp_noise_scale`.
    delta : float, default=None
        For the Gaussian mechanisms, in ``(0, 1)``; None for Laplace.
    sensitivity : float, default=None
        The L1 (Laplace) or L2 (Gaussian) sensitivity the noise is calibrated
        to. None: the table's exact sensitivity under the relation above, 2
        (L1) or ``sqrt(2)`` (L2). A larger value adds proportionally more
        noise and protects more: changing the labels of ``k`` people at once
        moves the table by at most ``2 k`` in L1 and ``sqrt(2) k`` in L2.
        Smaller values are refused: the release would not be (epsilon,
        delta)-DP (1, the add/remove-one value, does not apply with the bag
        sizes public).
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
        Also return the noisy counts before post-processing (unbiased:
        their mean over noise draws is the true counts).
    random_state : int, RandomState instance or None, default=None
        Seeds the noise.

    Returns
    -------
    table : DataFrame of shape (n_bags, n_classes)
        Indexed by the sorted bag ids (``"bag"``), one column per class
        (``"class"``), rows on the simplex: a per-bag ``props`` table as from
        :func:`label_proportions`. ``table.attrs`` records the release:
        ``mechanism``, ``epsilon``, ``delta``, ``sensitivity`` (the value
        used), ``neighbours`` (``"replace-one label, bag sizes public"``),
        ``noise``
        (``"laplace"`` or ``"gaussian"``, the distribution of the noise on a
        count), ``noise_scale`` (Laplace ``b`` or Gaussian ``sigma``) and
        ``noise_variance`` (``2 b**2`` or ``sigma**2``) of every count.
    counts : DataFrame of shape (n_bags, n_classes)
        Only with ``return_counts=True``: the noisy counts, which may be
        negative or fractional; same index, columns and ``attrs``.

    Raises
    ------
    ValueError
        Naming ``epsilon``, ``delta``, ``mechanism``, ``sensitivity`` or
        ``post_processing`` when invalid (``sensitivity`` also when below the
        table's sensitivity, ``epsilon`` also when so small that the noise
        overflows), and as :func:`label_proportions` for bad ``bags``, ``y``
        or ``classes``.

    See Also
    --------
    label_proportions : The exact table.
    project_to_simplex : Put a raw noisy release on the simplex.
    sklearn_llp.methods.NoisyProportions : Training that weighs bags by
        the noise of their proportions.

    References
    ----------
    C. Dwork, F. McSherry, K. Nissim, A. Smith. Calibrating noise to
    sensitivity in private data analysis. TCC 2006.

    C. Dwork, A. Roth. The algorithmic foundations of differential privacy.
    2014.

    B. Balle, Y.-X. Wang. Improving the Gaussian mechanism for differential
    privacy: analytical calibration and optimal denoising. ICML 2018.

    Examples
    --------
    >>> from sklearn_llp.bags import dp_proportions
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
    """
    mechanism = _check_mechanism(mechanism)
    epsilon = _check_epsilon(epsilon)
    delta = _check_delta(delta, mechanism)
    sensitivity = _check_sensitivity(sensitivity, mechanism, release=True)
    if post_processing not in _POST_PROCESSING:
        raise ValueError(
            f"post_processing must be one of {list(_POST_PROCESSING)}; got "
            f"{post_processing!r}."
        )
    scale = dp_noise_scale(epsilon, mechanism, delta=delta, sensitivity=sensitivity)
    exact = label_proportions(bags, y, classes=classes)
    ids = _id_array(bags)
    kept = ids[~_unbagged_mask(ids)]
    sizes = check_bags(kept).sizes.astype(np.float64)  # in the table's order
    counts = np.rint(exact.to_numpy() * sizes[:, None])

    rng = check_random_state(random_state)
    noise = MECHANISMS[mechanism]
    if scale == 0:
        noisy = counts.copy()
    elif noise == "laplace":
        noisy = counts + rng.laplace(0.0, scale, size=counts.shape)
    else:
        noisy = counts + rng.normal(0.0, scale, size=counts.shape)

    if post_processing == "project":
        released = project_to_simplex(noisy / sizes[:, None])
    else:
        clipped = np.maximum(noisy, 0.0)
        totals = clipped.sum(axis=1, keepdims=True)
        uniform = np.full_like(clipped, 1.0 / clipped.shape[1])
        released = np.where(
            totals > 0, clipped / np.where(totals > 0, totals, 1), uniform
        )
    attrs = {
        "mechanism": mechanism,
        "epsilon": epsilon,
        "delta": delta,
        "sensitivity": sensitivity,
        "neighbours": NEIGHBOURS,
        "noise": noise,
        "noise_scale": scale,
        "noise_variance": (2.0 if noise == "laplace" else 1.0) * scale**2,
    }
    table = pd.DataFrame(released, index=exact.index, columns=exact.columns)
    table.attrs.update(attrs)
    if not return_counts:
        return table
    noisy_counts = pd.DataFrame(noisy, index=exact.index, columns=exact.columns)
    noisy_counts.attrs.update(attrs)
    return table, noisy_counts
