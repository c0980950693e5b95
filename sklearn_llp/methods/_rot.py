"""ROT: proportion loss plus optimal-transport pseudo-labels."""

from numbers import Integral, Real

import torch
from sklearn.utils._param_validation import Interval

from ._base import LLPMethod
from ._segments import _segment_plan, _sum_runs, segment_mean, weighted_mean


@torch.no_grad()
def sinkhorn_pseudo_labels(
    log_probs, segments, bag_props, reg=1.0, n_iter=50, weights=None
):
    """Soft labels of rows by optimal transport to their bags' counts (:ref:`rot`).

    Examples
    --------
    >>> from torch import randn, tensor
    >>> from sklearn_llp.methods.functional import sinkhorn_pseudo_labels
    >>> props = tensor([[1.0, 0.0], [0.5, 0.5]])
    >>> sinkhorn_pseudo_labels(randn(3, 2).log_softmax(1), tensor([0, 1, 1]), props)[0]
    tensor([1., 0.])
    """
    if not reg > 0:
        raise ValueError(f"reg must be positive; got {reg}.")
    n_bags = bag_props.shape[0]
    scores = log_probs.detach() / reg  # -C / reg
    props = bag_props.detach().to(scores.dtype)
    props = props / props.sum(1, keepdim=True)
    mass = torch.ones_like(scores[:, :1]) if weights is None else weights[:, None]
    mass = mass.to(scores.dtype)
    # sort the rows by bag once: every iteration then sums contiguous runs
    plan = _segment_plan(segments, n_bags)
    if plan.order is not None:
        scores, mass = scores[plan.order], mass[plan.order]
    segments = plan.segments
    log_counts = (props * _sum_runs(mass, plan)).log()  # -inf for 0
    tiny = torch.finfo(scores.dtype).tiny
    log_plan = scores - torch.logsumexp(scores, dim=1, keepdim=True)
    for _ in range(n_iter):
        # classes: rows sum to 1 here, so exp(log_plan) <= 1 (no overflow); a
        # class underflowed in a whole bag moves by ~ -log(tiny), not to +inf
        columns = _sum_runs(mass * log_plan.exp(), plan)
        log_plan = log_plan + (log_counts - columns.clamp_min(tiny).log())[segments]
        # rows: every row sums to 1
        log_plan = log_plan - torch.logsumexp(log_plan, dim=1, keepdim=True)
    if plan.order is not None:  # back to the caller's order of the rows
        return log_plan.exp()[torch.argsort(plan.order)]
    return log_plan.exp()


def pseudo_label_loss(
    logits, segments, pseudo_labels, n_bags, weights=None, bag_weights=None
):
    """Cross-entropy with soft labels, averaged within bags, then over bags.

    Examples
    --------
    >>> from torch import eye, tensor, zeros
    >>> from sklearn_llp.methods.functional import pseudo_label_loss
    >>> pseudo_label_loss(zeros(2, 2), tensor([0, 1]), eye(2), 2)  # log 2
    tensor(0.6931)
    """
    log_probs = torch.log_softmax(logits, dim=1)
    per_row = -(pseudo_labels * log_probs).sum(1, keepdim=True)
    per_bag = segment_mean(per_row, segments, n_bags, weights)[:, 0]
    return weighted_mean(per_bag, bag_weights)


class ROT(LLPMethod):
    """ROT (Dulac-Arnold et al. 2019): DLLP plus transport pseudo-labels (:ref:`rot`).

    Parameters
    ----------
    rot_alpha, reg, n_iter : float, float, int, default=0.5, 1.0, 50
        Weight of the proportion loss; entropic regularisation (in nats) and
        Sinkhorn iterations per batch.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="rot", method__rot_alpha=0.7)
    """

    _parameter_constraints = {
        "rot_alpha": [Interval(Real, 0, 1, closed="both")],
        "reg": [Interval(Real, 0, None, closed="neither")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
    }

    reads_bag_means = True

    def __init__(self, rot_alpha=0.5, reg=1.0, n_iter=50):
        self.rot_alpha = rot_alpha
        self.reg = reg
        self.n_iter = n_iter

    def logit_loss(self, logits, bags, step, total_steps):
        if self.rot_alpha == 1:
            return bags.proportion_loss(logits)
        # pseudo-labels of (bag, row) pairs: one per bag a row is in
        pair_logits, weights = bags.pairs(logits)
        log_probs = torch.log_softmax(pair_logits.detach(), dim=1)
        structure = (bags.segments, bags.bag_props)
        labels = sinkhorn_pseudo_labels(
            log_probs, *structure, self.reg, self.n_iter, weights
        )
        n_bags = len(bags.bag_props)
        ot_loss = pseudo_label_loss(
            pair_logits, bags.segments, labels, n_bags, weights, bags.bag_weights
        )
        if self.rot_alpha == 0:
            return ot_loss
        proportion = bags.proportion_loss(logits)
        return self.rot_alpha * proportion + (1 - self.rot_alpha) * ot_loss
