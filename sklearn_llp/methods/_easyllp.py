"""EasyLLP: an unbiased estimate of every row's loss from its bag's proportions."""

import warnings

import numpy as np
import torch
from scipy.stats import chi2
from sklearn.utils._param_validation import StrOptions

from ..exceptions import NonRandomBagsWarning
from ._base import LLPMethod


def _class_losses(logits, loss):
    """``l(f(x), c)`` for every row and class: (n, n_classes)."""
    if loss == "log":
        return -torch.log_softmax(logits, dim=1)
    probs = torch.softmax(logits, dim=1)
    if loss == "bounded_log":  # the reference code's -log(p + 1e-8)
        return -torch.log(probs + 1e-8)
    return (probs * probs).sum(1, keepdim=True) - 2 * probs + 1  # ||q - e_c||^2


def easyllp_loss(
    logits, segments, bag_props, bag_sizes, prior, weights=None, loss="log"
):
    """EasyLLP's loss of soft labels ``k (alpha - p) + p`` over rows (:ref:`easyllp`).

    Every bag is whole in ``segments``; ``bag_sizes``: its total weight there.

    Examples
    --------
    >>> from torch import tensor, zeros
    >>> from sklearn_llp.methods.functional import easyllp_loss
    >>> props, size, prior = tensor([[0.75, 0.25]]), tensor([4.0]), tensor([0.5, 0.5])
    >>> easyllp_loss(zeros(1, 2), tensor([0]), props, size, prior)  # y~ = [1.5, -0.5]
    tensor(0.6931)
    """
    losses = _class_losses(logits, loss)
    w = torch.ones_like(losses[:, 0]) if weights is None else weights
    excess = bag_sizes[:, None] * (bag_props - prior)
    soft = excess[segments] + w[:, None] * prior  # W_B (alpha - p) + w_i p
    return (soft * losses).sum() / w.sum()


def _effective_sizes(bags):
    """Kish's effective size ``(sum w)^2 / sum w^2`` of every bag."""
    if bags.weights is None:
        return bags.sizes.astype(np.float64)
    w = bags.weights[bags.members]
    totals = np.bincount(bags.pair_bags, weights=w, minlength=bags.n_bags)
    squares = np.bincount(bags.pair_bags, weights=w * w, minlength=bags.n_bags)
    return totals**2 / squares


def bag_spread(props, sizes, prior=None):
    """How many times more bags' proportions vary than random bags', and the p-value.

    The chi-square statistic of the bags' class counts over its degrees of
    freedom ``(n_bags - 1)(C - 1)``, its expectation for random bags around
    the pooled ``prior``.

    Examples
    --------
    >>> from sklearn_llp.methods.functional import bag_spread
    >>> ratio, p = bag_spread([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [10, 10, 10])
    >>> round(ratio, 1), p < 1e-3  # bags sorted by class
    (15.0, True)
    """
    props = np.asarray(props, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    prior = sizes @ props / sizes.sum() if prior is None else prior
    prior = np.asarray(prior, dtype=np.float64)
    present = prior > 0  # a class absent everywhere adds nothing
    deviation = (props[:, present] - prior[present]) ** 2 / prior[present]
    statistic = float(sizes @ deviation.sum(1))
    n_bags, n_classes = len(props), int(present.sum())
    if n_bags < 2 or n_classes < 2:
        return 1.0, 1.0
    dof = (n_bags - 1) * (n_classes - 1)
    return statistic / dof, float(chi2.sf(statistic, dof))


class EasyLLP(LLPMethod):
    """EasyLLP (Busa-Fekete et al. 2023): unbiased soft labels of rows (:ref:`easyllp`).

    Parameters
    ----------
    loss : {"square", "bounded_log", "log"}, default="square"
        ``||q - e_c||^2``, ``-log(q_c + 1e-8)`` or ``-log q_c``, ``q = softmax(f(x))``.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="easyllp", method__loss="bounded_log")
    """

    _parameter_constraints = {"loss": [StrOptions({"log", "bounded_log", "square"})]}
    early_stopping_default = True

    def __init__(self, loss="square"):
        self.loss = loss

    def prepare(self, bags, random_state):
        super().prepare(bags, random_state)
        ratio, p_value = bag_spread(
            bags.props, _effective_sizes(bags), self.class_prior_
        )
        if ratio > 1.5 and p_value < 1e-3:  # the thresholds of :ref:`easyllp`
            warnings.warn(
                f"method='easyllp' assumes bags of random draws of the "
                f"population, but the bags' proportions vary {ratio:.1f} times "
                f"as much as random bags of the same sizes would (p = "
                f"{p_value:.1g}): bags grouped by a feature or by clustering "
                "bias its soft labels. Prefer method='vat' or 'dllp', which "
                "make no such assumption.",
                NonRandomBagsWarning,
                stacklevel=5,  # prepare <- _validate_and_train <- _fit <- fit <- caller
            )
        return self

    def logit_loss(self, logits, bags, step, total_steps):
        logits, weights = bags.pairs(logits)
        return easyllp_loss(
            logits,
            bags.segments,
            bags.bag_props.to(logits.dtype),
            self.bag_tensor("bag_sizes_", logits, bags),
            self.bag_tensor("class_prior_", logits),
            weights,
            self.loss,
        )
