"""Loss building blocks shared by the LLP methods.

All functions are pure torch and work on whole batches: bag means are
segment reductions (``index_add_``), never a Python loop over bags.
"""

import math

import torch
import torch.nn.functional as F

#: Added to bag-mean probabilities before the log of the proportion loss, so
#: a class predicted nowhere in its bag costs a large finite loss (not inf)
#: and still gets a gradient (a clamp would give none).
LOG_EPS = 1e-8


def segment_mean(values, segments, n_segments, weights=None):
    """(Weighted) mean of ``values`` rows within each segment.

    Parameters
    ----------
    values : Tensor of shape (n, k)
        One row per instance.
    segments : LongTensor of shape (n,)
        Segment (bag) index in ``[0, n_segments)`` of every row.
    n_segments : int
        Number of segments; every segment must hold at least one row (of
        positive weight).
    weights : Tensor of shape (n,), default=None
        Weight of every row; None weighs rows equally.

    Returns
    -------
    Tensor of shape (n_segments, k)
    """
    if weights is None:
        weights = values.new_ones(values.shape[0])
    else:
        values = values * weights.unsqueeze(1)
    sums = values.new_zeros((n_segments, values.shape[1]))
    sums.index_add_(0, segments, values)
    totals = values.new_zeros(n_segments)
    totals.index_add_(0, segments, weights)
    return sums / totals.unsqueeze(1)


def weighted_mean(values, weights=None):
    """Mean of a per-instance loss, weighted by ``weights`` if given."""
    if weights is None:
        return values.mean()
    return (values * weights).sum() / weights.sum()


def proportion_loss(logits, segments, bag_props, weights=None, bag_weights=None):
    """Cross-entropy between bag proportions and mean instance probabilities.

    ``-sum_j p_j log(mean_{x in bag} softmax(f(x))_j)``, averaged over bags.
    With bags of one instance this is the ordinary cross-entropy. With
    ``weights`` the bag mean is the weighted mean of its members'
    probabilities (an integer weight counts as that many copies of the row);
    every bag still counts once.

    Parameters
    ----------
    logits : Tensor of shape (n, k)
    segments : LongTensor of shape (n,)
        Bag index of every instance within the batch.
    bag_props : Tensor of shape (n_bags, k)
        Label proportions of the bags of the batch.
    weights : Tensor of shape (n,), default=None
        Sample weight of every instance.
    bag_weights : Tensor of shape (n_bags,), default=None
        Weight of every bag in the mean over bags (None: every bag once).
    """
    probs = F.softmax(logits, dim=1)
    bag_probs = segment_mean(probs, segments, bag_props.shape[0], weights)
    per_bag = -(bag_props * torch.log(bag_probs + LOG_EPS)).sum(1)
    return weighted_mean(per_bag, bag_weights)


def kl_divergence_with_logits(target_logits, logits, reduction="mean"):
    """``KL(softmax(target_logits) || softmax(logits))`` of every row.

    ``reduction="mean"`` averages over rows, ``"none"`` returns one value
    per row.
    """
    target_log_probs = F.log_softmax(target_logits, dim=1)
    log_probs = F.log_softmax(logits, dim=1)
    per_row = (target_log_probs.exp() * (target_log_probs - log_probs)).sum(1)
    return per_row.mean() if reduction == "mean" else per_row


def l2_normalize(d):
    """Scale every instance (first dimension) of ``d`` to unit L2 norm.

    Rows are first divided by their largest absolute entry: power-iteration
    gradients are tiny (of order ``xi``), and their squared norm would
    underflow. An all-zero row stays zero.
    """
    shape = (-1,) + (1,) * (d.dim() - 1)
    tiny = torch.finfo(d.dtype).tiny
    d = d / d.flatten(1).abs().amax(dim=1).clamp_min(tiny).view(shape)
    return d / d.flatten(1).norm(dim=1).clamp_min(tiny).view(shape)


def exp_rampup(step, rampup_steps):
    """Exponential ramp-up ``exp(-5 (1 - t/T)^2)``, 1 from step ``T`` on.

    Parameters
    ----------
    step : int
        Optimizer steps taken so far (global, across epochs).
    rampup_steps : int
        Length ``T`` of the ramp-up; 0 means no ramp-up (always 1).
    """
    if rampup_steps <= 0 or step >= rampup_steps:
        return 1.0
    phase = 1.0 - max(step, 0) / rampup_steps
    return math.exp(-5.0 * phase * phase)
