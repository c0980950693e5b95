"""Losses for learning a regressor from bag means (:ref:`regression_losses`)."""

from numbers import Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import LLPMethod
from ._segments import at_least_float32, gather_rows, segment_sum


def regression_losses(
    predictions,
    segments,
    bag_means,
    weights=None,
    bag_weights=None,
    *,
    members=None,
    reduction="mean",
):
    """The bag and instance squared losses of a batch (:ref:`regression_losses`).

    Every bag is whole in ``segments``: it weighs its rows' total weight.

    Examples
    --------
    >>> from torch import tensor
    >>> from sklearn_llp.methods.functional import regression_losses
    >>> pred = tensor([1.0, 3.0, 5.0])
    >>> regression_losses(pred, tensor([0, 0, 1]), tensor([1.0, 4.0]))  # 3/3, 5/3
    (tensor(1.), tensor(1.6667))
    """
    pred = at_least_float32(predictions)
    if pred.ndim == 2:
        if pred.shape[1] != 1:
            raise ValueError(
                f"predictions must have one column; got shape {tuple(pred.shape)}."
            )
        pred = pred[:, 0]
    if members is not None:
        pred = gather_rows(pred, members)
        weights = None if weights is None else weights[members]
    w = torch.ones_like(pred) if weights is None else weights.to(pred.dtype)
    means = bag_means.to(pred.dtype).reshape(-1)
    n_bags = means.shape[0]
    totals = segment_sum(w, segments, n_bags)
    bag_pred = segment_sum(w * pred, segments, n_bags) / totals
    squares = segment_sum(w * (means[segments] - pred) ** 2, segments, n_bags)
    if bag_weights is not None:
        bag_weights = bag_weights.to(totals.dtype)
        totals, squares = totals * bag_weights, squares * bag_weights
    per_bag = totals * (means - bag_pred) ** 2
    if reduction == "none":
        return per_bag, squares
    denominator = totals.sum()
    return per_bag.sum() / denominator, squares.sum() / denominator


def interpolating_loss(predictions, segments, bag_means, lam, *args, **kwargs):
    """``bag_loss + lam * instance_loss`` of :func:`regression_losses`.

    Examples
    --------
    >>> from torch import tensor
    >>> from sklearn_llp.methods.functional import interpolating_loss
    >>> pred = tensor([1.0, 3.0, 5.0])
    >>> interpolating_loss(pred, tensor([0, 0, 1]), tensor([1.0, 4.0]), lam=1.0)
    tensor(2.6667)
    """
    bag, instance = regression_losses(predictions, segments, bag_means, *args, **kwargs)
    return bag + lam * instance


class RegressionMethod(LLPMethod):
    """Base class of the losses of :class:`~sklearn_llp.LLPRegressor`.

    Examples
    --------
    >>> from sklearn_llp.methods import RegressionMethod
    >>> class HalfBagLoss(RegressionMethod):
    ...     def logit_loss(self, logits, bags, step, total_steps):
    ...         return 0.5 * self._losses(logits, bags)[0]
    """

    early_stopping_default = True

    def prepare(self, bags, random_state):
        if bags.props is None or bags.props.shape[1] != 1:
            raise ValueError(
                f"{type(self).__name__} is a regression loss, for LLPRegressor "
                "(bag means); a classifier trained on label proportions takes a "
                "classification method (see sklearn_llp.methods.available_methods())."
            )
        super().prepare(bags, random_state)
        totals = bags.loss_weights()
        self.pair_weight_ = float(np.sum(totals) / max(len(bags.members), 1))
        return self

    def _losses(self, logits, bags):
        """The bag and instance losses of a batch."""
        batch = (logits, bags.segments, bags.bag_props, bags.weights, bags.bag_weights)
        if not hasattr(self, "pair_weight_"):  # not prepared: the batch is all
            return regression_losses(*batch, members=bags.members)
        terms = regression_losses(*batch, members=bags.members, reduction="none")
        denominator = bags.segments.shape[0] * self.pair_weight_
        return tuple(term.sum() / denominator for term in terms)


class BagLoss(RegressionMethod):
    """Bag-level squared loss (the default): bag mean predictions against bag means.

    Examples
    --------
    >>> from sklearn_llp import LLPRegressor
    >>> reg = LLPRegressor(method="bag")
    """

    def logit_loss(self, logits, bags, step, total_steps):
        return self._losses(logits, bags)[0]


class InstanceLoss(RegressionMethod):
    """Instance-level squared loss: every row regressed on its bag's mean.

    Examples
    --------
    >>> from sklearn_llp import LLPRegressor
    >>> reg = LLPRegressor(method="instance")
    """

    def logit_loss(self, logits, bags, step, total_steps):
        return self._losses(logits, bags)[1]


class InterpolatingLoss(RegressionMethod):
    """``bag_loss + lam * instance_loss`` (Javanmard et al., ICLR 2024).

    The instance term acts as a ridge of strength about ``lam (k - 1)`` on
    bags of ``k`` rows (:ref:`regression_losses`).

    Parameters
    ----------
    lam : float >= 0 or "auto", default="auto"
        Weight of the instance loss; ``"auto"`` is ``1 / (4 k)``, ``k`` the
        mean bag size (the best measured, :ref:`regression_defaults`). 0 is
        :class:`BagLoss`.

    Examples
    --------
    >>> from sklearn_llp import LLPRegressor
    >>> reg = LLPRegressor(method="interpolating", method__lam=0.1)
    """

    _parameter_constraints = {
        "lam": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})]
    }

    def __init__(self, lam="auto"):
        self.lam = lam

    def prepare(self, bags, random_state):
        super().prepare(bags, random_state)
        k = float(np.mean(self.bag_sizes_))  # total weight: weights as rows
        self.lam_ = 0.25 / k if self.lam == "auto" else self.lam
        return self

    def logit_loss(self, logits, bags, step, total_steps):
        bag, instance = self._losses(logits, bags)
        lam = getattr(self, "lam_", 0.25 if self.lam == "auto" else self.lam)
        return bag + lam * instance if lam else bag
