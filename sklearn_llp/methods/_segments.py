"""Bag means as segment reductions without atomic adds (:ref:`segment_reductions`)."""

from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

#: Added to bag-mean probabilities before the log of the proportion loss: a
#: class predicted nowhere in its bag costs a large finite loss with a gradient.
LOG_EPS = 1e-8


def at_least_float32(tensor):
    """``tensor`` in float32 or wider: no loss is computed in half precision."""
    return tensor.to(torch.promote_types(tensor.dtype, torch.float32))


class _Plan(NamedTuple):
    """How to sum rows by segment (see :func:`_segment_plan`)."""

    order: torch.Tensor | None  # stable sort of the segments; None if sorted
    segments: torch.Tensor  # sorted
    offsets: torch.Tensor  # (n_segments + 1,): segment s is offsets[s]:[s + 1]
    counts: torch.Tensor  # rows of every segment
    size: int | None  # the rows of every segment, when all are equal


def _segment_plan(segments, n_segments):
    """Check and plan the sums of ``segments``, or take the plan attached to them."""
    known = getattr(segments, "_segment_plan", None)
    if known is not None and known.offsets.shape[0] == n_segments + 1:
        return known
    if segments.device.type == "cpu":
        return _plan_numpy(segments, n_segments)
    return _plan_torch(segments, n_segments)


def attach_plan(segments, offsets, counts, size, order=None):
    """Attach a plan computed on the host: the step's sums then need no device sync."""
    ordered = segments if order is None else segments[order]
    segments._segment_plan = _Plan(order, ordered, offsets, counts, size)
    return segments


def _plan_numpy(segments, n_segments):
    """On the CPU: numpy views of the indices, no torch dispatch."""
    n_rows, order = segments.shape[0], None
    codes = segments.numpy()
    if n_rows > 1 and (codes[1:] < codes[:-1]).any():
        _check_range(codes.min(), codes.max(), n_segments)
        # 16-bit keys get numpy's radix sort: 9 times faster on 16k rows
        keys = codes.astype(np.uint16) if n_segments <= 1 << 16 else codes
        order = np.argsort(keys, kind="stable")
        codes = codes[order]
        order, segments = torch.from_numpy(order), torch.from_numpy(codes)
    elif n_rows and (codes[0] < 0 or codes[-1] >= n_segments):
        _check_range(codes[0], codes[-1], n_segments)
    offsets = np.searchsorted(codes, np.arange(n_segments + 1))
    counts = offsets[1:] - offsets[:-1]
    size = int(counts[0]) if n_segments and counts[0] else None
    if size is not None and not (counts == size).all():
        size = None
    return _Plan(order, segments, torch.from_numpy(offsets), counts, size)


def _offsets(segments, n_segments):
    bounds = torch.arange(n_segments + 1, device=segments.device, dtype=segments.dtype)
    return torch.searchsorted(segments.contiguous(), bounds)


def _plan_torch(segments, n_segments):
    """On a GPU: one sync for the order, the range and equal sizes."""
    n_rows, order = segments.shape[0], None
    offsets = _offsets(segments, n_segments)
    counts = offsets.diff()
    size = None
    if n_rows:
        steps = segments.diff()
        drop = steps.min() if steps.numel() else segments.new_zeros(())
        stats = [drop, segments[0], segments[-1]]
        if n_segments:
            stats += [counts.min(), counts.max()]
        stats = torch.stack([t.to(segments.dtype) for t in stats]).tolist()
        if stats[0] < 0:
            order = torch.argsort(segments, stable=True)
            segments = segments[order]
            _check_range(*torch.stack([segments[0], segments[-1]]).tolist(), n_segments)
            offsets = _offsets(segments, n_segments)
            counts = offsets.diff()
        else:
            _check_range(stats[1], stats[2], n_segments)
            if n_segments and stats[3] == stats[4]:
                size = int(stats[3])
    return _Plan(order, segments, offsets, counts, size)


def _check_range(low, high, n_segments):
    if low < 0 or high >= n_segments:
        raise IndexError(
            f"segment index out of range: segments span [{low}, {high}], "
            f"n_segments={n_segments}."
        )


class _SegmentSum(torch.autograd.Function):
    """Sums over contiguous segments; the gradient is a gather."""

    @staticmethod
    def forward(ctx, values, segments, offsets):
        ctx.save_for_backward(segments)
        return torch.segment_reduce(values, "sum", offsets=offsets, unsafe=True)

    @staticmethod
    def backward(ctx, grad):
        (segments,) = ctx.saved_tensors
        return gather_rows(grad, segments), None, None


class _GatherRows(torch.autograd.Function):
    """``source[index]``; the gradient is a :func:`segment_sum` over ``index``."""

    @staticmethod
    def forward(ctx, source, index):
        ctx.save_for_backward(index)
        ctx.n_rows = source.shape[0]
        return source.index_select(0, index)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        if grad.dtype in (torch.float16, torch.bfloat16):  # sum in float32
            return segment_sum(grad.float(), index, ctx.n_rows).to(grad.dtype), None
        return segment_sum(grad, index, ctx.n_rows), None


def _sum_runs(values, plan):
    """Segment sums of rows in ``plan``'s sorted order."""
    if plan.size is not None:
        n_segments = plan.offsets.shape[0] - 1
        return values.reshape(n_segments, plan.size, *values.shape[1:]).sum(1)
    if values.requires_grad and torch.is_grad_enabled():
        return _SegmentSum.apply(values, plan.segments, plan.offsets)
    return torch.segment_reduce(values, "sum", offsets=plan.offsets, unsafe=True)


def segment_sum(values, segments, n_segments):
    """Sums of the rows of ``values`` by ``segments``, deterministic on every device.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import segment_sum
    >>> segment_sum(torch.tensor([1.0, 2.0, 4.0]), torch.tensor([0, 0, 2]), 3)
    tensor([3., 0., 4.])
    """
    plan = _segment_plan(segments, n_segments)
    if plan.order is not None:
        values = gather_rows(values, plan.order)
    return _sum_runs(values, plan)


def gather_rows(source, index):
    """``source[index]`` whose gradient is a deterministic :func:`segment_sum`.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import gather_rows
    >>> gather_rows(torch.tensor([1.0, 2.0]), torch.tensor([1, 1, 0]))
    tensor([2., 2., 1.])
    """
    if not (source.requires_grad and torch.is_grad_enabled()):
        return source.index_select(0, index)
    return _GatherRows.apply(source, index)


def segment_mean(values, segments, n_segments, weights=None):
    """(Weighted) means of the rows of ``values`` ``(n, k)`` by ``segments``.

    Examples
    --------
    >>> from torch import tensor
    >>> from sklearn_llp.methods.functional import segment_mean
    >>> segment_mean(tensor([[1.0, 2.0], [3.0, 4.0]]), tensor([0, 0]), 1)
    tensor([[2., 3.]])
    """
    plan = _segment_plan(segments, n_segments)
    if plan.order is not None:
        values = gather_rows(values, plan.order)
        weights = None if weights is None else gather_rows(weights, plan.order)
    if weights is None:
        if plan.size is not None:
            return _sum_runs(values, plan) / plan.size
        totals = torch.as_tensor(plan.counts, device=values.device).to(values.dtype)
    else:
        values = values * weights.unsqueeze(1)
        totals = _sum_runs(weights, plan)
    return _sum_runs(values, plan) / totals.unsqueeze(1)


def weighted_mean(values, weights=None):
    """Mean of ``values``, weighted by ``weights`` if given.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import weighted_mean
    >>> weighted_mean(torch.tensor([1.0, 4.0]), torch.tensor([2.0, 1.0]))
    tensor(2.)
    """
    if weights is None:
        return values.mean()
    return (values * weights).sum() / weights.sum()


def proportion_loss(
    logits,
    segments,
    bag_props,
    weights=None,
    bag_weights=None,
    reduction="mean",
    margins=None,
):
    """DLLP's loss: cross-entropy of bag proportions and mean probabilities.

    A bag with ``margins >= 0`` (a mixed bag, :ref:`mixbag`) costs
    :func:`interval_loss` instead.

    Examples
    --------
    >>> from torch import tensor, zeros
    >>> from sklearn_llp.methods.functional import proportion_loss
    >>> proportion_loss(zeros(2, 2), tensor([0, 0]), tensor([[1.0, 0.0]]))  # log 2
    tensor(0.6931)
    """
    logits = at_least_float32(logits)  # LOG_EPS is 0 in float16
    probs = F.softmax(logits, dim=1)
    if weights is not None:
        weights = weights.to(logits.dtype)
    bag_probs = segment_mean(probs, segments, bag_props.shape[0], weights)
    bag_props = bag_props.to(logits.dtype)
    per_bag = -(bag_props * torch.log(bag_probs + LOG_EPS)).sum(1)
    if margins is not None:
        margins = margins.to(logits.dtype)
        interval = _interval_loss(bag_probs, bag_props, margins, per_bag)
        per_bag = torch.where(margins[:, 0] >= 0, interval, per_bag)
    if reduction == "none":
        return per_bag
    if bag_weights is not None:
        bag_weights = bag_weights.to(logits.dtype)
    return weighted_mean(per_bag, bag_weights)


def _interval_loss(bag_probs, bag_props, margins, cross_entropy):
    inside = ((bag_probs.detach() - bag_props).abs() <= margins).all(1)
    entropy = -(bag_props * torch.log(bag_props + LOG_EPS)).sum(1)
    return torch.where(inside, torch.zeros_like(entropy), cross_entropy - entropy)


def interval_loss(bag_probs, bag_props, margins):
    """MixBag's confidence-interval loss of every bag (:ref:`mixbag`).

    Zero while every class's mean probability lies within ``margins`` of the
    label, else ``KL(label || mean probabilities)``.

    Examples
    --------
    >>> from torch import tensor
    >>> from sklearn_llp.methods import interval_loss
    >>> label, margin = tensor([[0.5, 0.5]]), tensor([[0.1, 0.1]])
    >>> interval_loss(tensor([[0.45, 0.55]]), label, margin)  # inside
    tensor([0.])
    >>> interval_loss(tensor([[0.25, 0.75]]), label, margin)  # KL: 0.1438
    tensor([0.1438])
    """
    cross_entropy = -(bag_props * torch.log(bag_probs + LOG_EPS)).sum(1)
    return _interval_loss(bag_probs, bag_props, margins, cross_entropy)


def kl_divergence_with_logits(target_logits, logits, reduction="mean"):
    """``KL(softmax(target_logits) || softmax(logits))`` of every row, or their mean.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import kl_divergence_with_logits
    >>> kl_divergence_with_logits(torch.zeros(1, 2), torch.zeros(1, 2))
    tensor(0.)
    """
    target_log_probs = F.log_softmax(target_logits, dim=1)
    log_probs = F.log_softmax(logits, dim=1)
    per_row = (target_log_probs.exp() * (target_log_probs - log_probs)).sum(1)
    return per_row.mean() if reduction == "mean" else per_row


def l2_normalize(d):
    """Rows of ``d`` at unit L2 norm, tiny ones without underflow; zero rows stay 0.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import l2_normalize
    >>> l2_normalize(torch.tensor([[3e-30, 4e-30]]))
    tensor([[0.6000, 0.8000]])
    """
    shape = (-1,) + (1,) * (d.dim() - 1)
    tiny = torch.finfo(d.dtype).tiny
    d = d / d.flatten(1).abs().amax(dim=1).clamp_min(tiny).view(shape)
    return d / d.flatten(1).norm(dim=1).clamp_min(tiny).view(shape)
