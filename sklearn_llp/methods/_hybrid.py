"""A hybrid of bag and instance losses: VAT plus confident pseudo-labels."""

import math
from numbers import Integral, Real

import torch
from sklearn.utils._param_validation import Interval

from ._rot import pseudo_label_loss, sinkhorn_pseudo_labels
from ._vat import VAT


@torch.no_grad()
def confident_pseudo_labels(
    log_probs, segments, bag_props, reg=1.0, n_iter=50, weights=None
):
    """Labels of rows filling their bags' counts, and their confidence (:ref:`hybrid`).

    The label is the class of the row's largest share in the transport plan
    of :func:`sinkhorn_pseudo_labels`; the confidence ``1 - H(plan) / log K``
    is 0 for a row the plan splits evenly and 1 for one it gives one class.

    Examples
    --------
    >>> from torch import tensor
    >>> from sklearn_llp.methods.functional import confident_pseudo_labels
    >>> log_probs = tensor([[0.9, 0.1], [0.6, 0.4]]).log()
    >>> labels, confidence = confident_pseudo_labels(
    ...     log_probs, tensor([0, 0]), tensor([[0.5, 0.5]]), reg=0.1)
    >>> labels.tolist(), [round(c, 2) for c in confidence.tolist()]
    ([0, 1], [1.0, 0.92])
    """
    plan = sinkhorn_pseudo_labels(log_probs, segments, bag_props, reg, n_iter, weights)
    entropy = -(plan * plan.clamp_min(torch.finfo(plan.dtype).tiny).log()).sum(1)
    confidence = (1.0 - entropy / math.log(plan.shape[1])).clamp(0.0, 1.0)
    return plan.argmax(1), confidence


class Hybrid(VAT):
    """LLP-VAT plus a confidence-weighted loss of pseudo-labelled rows (:ref:`hybrid`).

    After L2P-AHIL (Ma et al., CVPR 2025).

    Parameters
    ----------
    alpha, eps, xi, n_power, rampup
        VAT's (:class:`VAT`).
    beta, beta_rampup : float, default=0.1, 1.0
        Maximum weight of the instance loss; share of the steps ramping it up.
    reg, n_iter : float, int, default=1.0, 50
        Entropic regularisation (nats) and Sinkhorn iterations of the labels.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="hybrid", method__beta=0.3)
    """

    _parameter_constraints = {
        **VAT._parameter_constraints,
        "beta": [Interval(Real, 0, None, closed="left")],
        "beta_rampup": [Interval(Real, 0, 1, closed="both")],
        "reg": [Interval(Real, 0, None, closed="neither")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(
        self,
        alpha=0.05,
        eps=1.0,
        xi="auto",
        n_power=1,
        rampup=0.4,
        beta=0.1,
        beta_rampup=1.0,
        reg=1.0,
        n_iter=50,
    ):
        super().__init__(alpha=alpha, eps=eps, xi=xi, n_power=n_power, rampup=rampup)
        self.beta = beta
        self.beta_rampup = beta_rampup
        self.reg = reg
        self.n_iter = n_iter

    def logit_loss(self, logits, bags, step, total_steps):
        loss = super().logit_loss(logits, bags, step, total_steps)
        weight = self.rampup_weight(self.beta, self.beta_rampup, step, total_steps)
        if weight == 0.0:
            return loss
        pair_logits, weights = bags.pairs(logits)
        log_probs = torch.log_softmax(pair_logits.detach(), dim=1)
        labels, confidence = confident_pseudo_labels(
            log_probs, bags.segments, bags.bag_props, self.reg, self.n_iter, weights
        )
        targets = torch.zeros_like(log_probs).scatter_(1, labels[:, None], 1.0)
        instance = pseudo_label_loss(
            pair_logits,
            bags.segments,
            targets * confidence[:, None],
            len(bags.bag_props),
            weights,
            bags.bag_weights,
        )
        return loss + weight * instance
