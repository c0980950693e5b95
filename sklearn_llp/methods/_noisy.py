"""DLLP for noisy (privacy-protected) proportions."""

from collections.abc import Mapping
from dataclasses import replace
from numbers import Real

import numpy as np
import pandas as pd
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from ..core._bags import release_of
from ..privacy import NOISE_NORMS, noise_variance
from ._base import LLPMethod
from ._segments import at_least_float32, proportion_loss, segment_sum


def noisy_proportion_weights(
    sizes, count_variance, label_variance, n_classes, weighting="likelihood", f=None
):
    """``n_B r_B`` or ``r_B``, the weights of noisy bags (:ref:`noisy_proportions`).

    A share's noise variance is ``f * count_variance / n_B**2``, ``f``
    default ``1 - 1/C`` (projected counts of public sizes).

    Examples
    --------
    >>> from sklearn_llp.methods.functional import noisy_proportion_weights
    >>> noisy_proportion_weights([1, 10, 100], 2.0, 0.25, 2, "reliability")
    array([0.2       , 0.71428571, 0.96153846])
    """
    if weighting not in ("likelihood", "reliability"):
        raise ValueError(
            f"weighting must be 'likelihood' or 'reliability'; got {weighting!r}."
        )
    sizes = np.asarray(sizes, dtype=np.float64)
    f = 1.0 - 1.0 / n_classes if f is None else np.asarray(f)
    release = f * np.asarray(count_variance, dtype=np.float64)
    sampling = sizes * float(label_variance)
    reliability = sampling / (sampling + release)
    return sizes * reliability if weighting == "likelihood" else reliability


def noisy_proportion_loss(
    logits, segments, bag_props, bag_weights, normaliser, weights=None
):
    """DLLP's bag losses weighted by ``bag_weights``, over ``n_bags * normaliser``.

    Examples
    --------
    >>> from torch import tensor, zeros
    >>> from sklearn_llp.methods.functional import noisy_proportion_loss
    >>> props, w = tensor([[0.5, 0.5], [1.0, 0.0]]), tensor([1.0, 0.5])
    >>> noisy_proportion_loss(zeros(3, 2), tensor([0, 0, 1]), props, w, 0.75)  # log 2
    tensor(0.6931)
    """
    per_bag = proportion_loss(logits, segments, bag_props, weights, reduction="none")
    return (bag_weights * per_bag).sum() / (per_bag.shape[0] * normaliser)


def noisy_count_loss(
    logits, segments, noisy_counts, noise_variance, released=None, weights=None
):
    """Gaussian loss of noisy counts given the model's expected counts.

    Per bag and released class: ``(c~ - m)**2 / (2 V)``, ``m`` the sum of the
    probabilities and ``V = sum p (1 - p) + noise variance`` (fixed in the
    gradient): unbiased, tiny bags weighed by ``1 / V``. Mean over the
    bags, every bag whole in ``segments``.

    Examples
    --------
    >>> from torch import tensor, zeros
    >>> from sklearn_llp.methods.functional import noisy_count_loss
    >>> counts, var = tensor([[2.0, 0.0]]), tensor([1.5])  # m = 1, V = 0.5 + 1.5
    >>> noisy_count_loss(zeros(2, 2), tensor([0, 0]), counts, var)  # 2 (1 / 4)
    tensor(0.5000)
    """
    logits = at_least_float32(logits)
    probs = torch.softmax(logits, dim=1)
    if weights is not None:
        probs = probs * weights.to(probs.dtype).unsqueeze(1)
    n_bags = noisy_counts.shape[0]
    expected = segment_sum(probs, segments, n_bags)
    spread = segment_sum((probs * (1 - probs)).detach(), segments, n_bags)
    variance = spread + noise_variance.to(probs.dtype).reshape(-1, 1)
    variance = variance.clamp_min(0.25)  # noise-free, confident: no 1 / 0
    per_class = (noisy_counts.to(probs.dtype) - expected) ** 2 / (2 * variance)
    if released is not None:
        per_class = per_class * released.to(probs.dtype)
    return per_class.sum(1).mean()


class NoisyProportions(LLPMethod):
    """DLLP, bags weighed by what their noisy counts tell (:ref:`noisy_proportions`).

    Reads a :func:`~sklearn_llp.privacy.dp_proportions` release given as the
    proportions (``fit(X, bags, table)``) or as ``release``: its noise, scale
    and raw noisy counts.

    Parameters
    ----------
    noise : {"laplace", "gaussian", "discrete_laplace", "discrete_gaussian"}, \
default=None
        Noise on every count; None: the release's (``attrs["noise"]``), else
        ``"laplace"``.
    scale : float or dict or Series, default=None
        Its scale, or one per bag id; None: the release's
        (``attrs["noise_scale"]``), else 0 (proportions without a release
        are exact). Set, it must agree with the release's.
    loss : {"counts", "shares"}, default="counts"
        :func:`noisy_count_loss` on the release's raw noisy counts (shares
        times sizes only without noise), or DLLP on the released shares
        with bag weights (``weighting``, the loss before issue 34; biased).
    weighting : {"likelihood", "reliability"}, default="likelihood"
        ``loss="shares"``: ``w_B = n_B r_B`` or ``w_B = r_B``.
    release : DataFrame or dict, default=None
        A release (or its ``attrs``), when the proportions are not the table.

    Attributes
    ----------
    bag_weights_, reliability_, count_variance_ : ndarray of shape (n_bags,)
    label_variance_ : float

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="noisy")  # fit(X, bags, dp_proportions(...))
    """

    _parameter_constraints = {
        "noise": [StrOptions(set(NOISE_NORMS)), None],
        "scale": [Interval(Real, 0, np.inf, closed="left"), Mapping, pd.Series, None],
        "loss": [StrOptions({"counts", "shares"})],
        "weighting": [StrOptions({"likelihood", "reliability"})],
        "release": [None, Mapping, pd.DataFrame],
    }

    def __init__(
        self,
        noise=None,
        scale=None,
        loss="counts",
        weighting="likelihood",
        release=None,
    ):
        self.noise = noise
        self.scale = scale
        self.loss = loss
        self.weighting = weighting
        self.release = release

    def _noise(self, release):
        """Noise, scale(s) and relation: the release's, checked against ours."""
        if release is None:
            scale = 0.0 if self.scale is None else self.scale
            return self.noise or "laplace", scale, None
        keys = ("noise", "noise_scale", "neighbours", "one_count")
        if not set(keys) <= set(release):
            raise ValueError(
                f"method__release has no {keys}: pass a dp_proportions table."
            )
        for name, ours, theirs in (
            ("noise", self.noise, release["noise"]),
            ("scale", self.scale, release["noise_scale"]),
        ):
            if ours is not None and not (
                isinstance(ours, (str, Real)) and ours == theirs
            ):
                raise ValueError(
                    f"method__{name}={ours!r} disagrees with the release's "
                    f"{theirs!r} (its attrs): leave method__{name}=None to read it."
                )
        if release.get("clamp"):
            raise ValueError(
                "the release is clamped (clamp=True): its counts are biased (a true "
                "count of 1 in a bag of 5 averages 1.84 at epsilon=0.2), which "
                "method='noisy' does not model. Release with clamp=False."
            )
        if release["neighbours"] == "add_remove" and release.get("min_bag_size"):
            raise ValueError(
                "the release withholds bags of small noisy size (add_remove with "
                "min_bag_size): the kept bags are those whose noise was high, so "
                "their counts are biased. Release with min_bag_size=None."
            )
        return release["noise"], release["noise_scale"], release["neighbours"]

    def prepare(self, bags, random_state):
        if self.release is not None:  # replaces the proportions' release
            bags = replace(bags, release=release_of(self.release) or {})
        super().prepare(bags, random_state)  # the prior: from raw counts
        sizes, prior = self.bag_sizes_, self.class_prior_
        self.label_variance_ = float(np.mean(prior * (1.0 - prior)))
        noise, scales, relation = self._noise(bags.release)
        factor = None  # of a share's noise: (1 - 1/C) by default
        if relation == "add_remove":  # share = c / sum(c): the delta method
            p = np.asarray(bags.props, dtype=np.float64)
            factor = 1 - 2 / p.shape[1] + (p**2).sum(axis=1)
        elif relation is not None and bags.release["one_count"]:
            factor = 1.0
        if isinstance(scales, (Mapping, pd.Series)):  # looked up by bag id
            table = pd.Series(scales)
            rows = table.index.get_indexer(pd.Index(bags.ids, tupleize_cols=False))
            if np.any(rows < 0):
                shown = bags.ids[rows < 0][:5].tolist()
                raise ValueError(
                    f"method__scale (a per-bag table) has no scale for "
                    f"{int(np.sum(rows < 0))} training bag id(s), e.g. {shown}."
                )
            scales = np.asarray(table.to_numpy(), dtype=np.float64)[rows]
            if not np.all(np.isfinite(scales)) or np.any(scales < 0):
                raise ValueError(
                    "method__scale (a per-bag table) must hold finite, non-negative "
                    "scales."
                )
        self.count_variance_ = np.full(bags.n_bags, noise_variance(noise, scales))
        self.reliability_ = np.ones(bags.n_bags)  # one class: nothing to weigh
        if self.label_variance_ > 0:
            variances = (self.count_variance_, self.label_variance_, bags.n_classes)
            self.reliability_ = noisy_proportion_weights(
                sizes, *variances, "reliability", factor
            )
        weights = self.reliability_
        if bags.bag_weights is not None:
            # supervised rows (one bag each): DLLP weighs them by their
            # sample weight already, which is their size
            weights = weights * bags.bag_weights
        elif self.weighting == "likelihood":
            weights = sizes * weights
        self.bag_weights_ = weights
        self._mean_weight = float(np.mean(weights))
        self.noisy_counts_, self.released_ = self._counts(bags, sizes)
        # DLLP's loss as it is: no noise, and every bag weighing the same
        self._exact = bool(np.all(self.count_variance_ == 0)) and (
            self.weighting == "reliability" or np.ptp(sizes) == 0
        )
        return self

    def _counts(self, bags, sizes):
        """Raw noisy counts of the training bags, and the released classes."""
        props = np.asarray(bags.props, dtype=np.float64)
        counts = props * sizes[:, None]  # exact shares: their counts
        raw, found = bags.released_counts(), np.zeros(len(counts), dtype=bool)
        if raw is not None:
            found = ~np.isnan(raw).any(axis=1)
            counts[found] = raw[found]
        missing = ~found & (self.count_variance_ > 0)
        if self.loss == "counts" and missing.any():
            raise ValueError(
                f"method='noisy' has no raw noisy counts for {int(missing.sum())} "
                f"training bag(s) (e.g. {bags.ids[missing][:3].tolist()}); counts "
                "rebuilt from shares on the simplex are biased (pulled toward "
                "1/C). Fit on the dp_proportions table itself (fit(X, bags, "
                "table)) or pass method__release=table (a release from elsewhere: "
                "a dict of noise, noise_scale, neighbours, one_count and "
                "counts=dict(ids=..., values=...)), or method__loss='shares'."
            )
        released = np.ones(props.shape[1], dtype=bool)
        if (bags.release or {}).get("one_count") and props.shape[1] == 2:
            released[0] = False  # the other count is the public size minus it
        return counts, released

    def logit_loss(self, logits, bags, step, total_steps):
        if self.loss == "counts":
            return noisy_count_loss(
                bags.take(logits),
                bags.segments,
                self.bag_tensor("noisy_counts_", logits, bags),
                self.bag_tensor("count_variance_", logits, bags),
                self.bag_tensor("released_", logits),
                bags.take(bags.weights),
            )
        if self._exact:
            return bags.proportion_loss(logits)
        return noisy_proportion_loss(
            bags.take(logits),
            bags.segments,
            bags.bag_props,
            self.bag_tensor("bag_weights_", logits, bags),
            self._mean_weight,
            bags.take(bags.weights),
        )
