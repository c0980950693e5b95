"""Losses for learning a regressor from bag means (aggregate responses).

Every bag ``a`` gives the mean ``y_a`` of a continuous response over its
rows; the network predicts ``f(x_i)`` for every row. With ``w_i`` the sample
weights (1 by default), ``W_a = sum_{i in a} w_i`` and ``f_a`` the weighted
mean prediction of bag ``a``, the three losses of a batch are (Javanmard et
al., "Learning from aggregate responses: instance level versus bag level
loss functions", ICLR 2024):

- bag level, ``sum_a W_a (y_a - f_a)^2 / sum_a W_a``: the squared error of
  every bag's mean prediction, bags weighted by their size;
- instance level, ``sum_a sum_{i in a} w_i (y_a - f(x_i))^2 / sum_a W_a``:
  every row regressed on its bag's mean;
- interpolating, ``(1 - rho) * bag + rho * instance``.

Because ``sum_i w_i (y_a - f_i)^2 = W_a (y_a - f_a)^2 + sum_i w_i (f_i -
f_a)^2``, the instance loss is the bag loss plus the within-bag variance of
the predictions, ``V = sum_a sum_{i in a} w_i (f_i - f_a)^2 / sum_a W_a``: a
regulariser that pulls the predictions of a bag together (the paper's
observation). The interpolating loss is ``bag + rho * V``: ``rho=0`` is
the unbiased bag loss, ``rho=1`` the lower-variance instance loss.

Bag means are segment reductions (:func:`~sklearn_llp.methods.functional.segment_sum`),
never a Python loop over bags. With singleton bags (instance targets) all
three are the (weighted) mean squared error.
"""

from numbers import Real

import torch
from sklearn.utils._param_validation import Interval

from ._base import LLPMethod
from ._segments import gather_rows, segment_sum


def _pair_tensors(predictions, segments, bag_means, weights, members):
    """Per-pair predictions and weights, in float32 at least."""
    dtype = torch.promote_types(predictions.dtype, torch.float32)
    predictions = predictions.to(dtype)
    if predictions.ndim == 2:
        if predictions.shape[1] != 1:
            raise ValueError(
                f"predictions must have one column; got shape "
                f"{tuple(predictions.shape)}."
            )
        predictions = predictions[:, 0]
    if members is not None:
        predictions = gather_rows(predictions, members)
        weights = None if weights is None else weights[members]
    if weights is None:
        weights = torch.ones_like(predictions)
    bag_means = bag_means.to(dtype).reshape(-1)
    return predictions, weights.to(dtype), bag_means


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
    """The bag-level and instance-level squared losses of a batch of bags.

    Parameters
    ----------
    predictions : Tensor of shape (n,) or (n, 1)
        Prediction of every row (or pair, with ``members=None``).
    segments : LongTensor of shape (n_pairs,)
        Bag of every pair, in ``[0, n_bags)``.
    bag_means : Tensor of shape (n_bags,) or (n_bags, 1)
        Given mean of every bag.
    weights : Tensor of shape (n,), default=None
        Sample weight of every row; None weighs rows equally.
    bag_weights : Tensor of shape (n_bags,), default=None
        Extra weight of every bag, multiplying its total sample weight.
    members : LongTensor of shape (n_pairs,), default=None
        Row of every pair (overlapping bags); None: pair ``i`` is row ``i``.
    reduction : {"mean", "none"}, default="mean"
        ``"mean"``: the two scalar losses, weighted means over the batch's
        rows; ``"none"``: per bag, ``W_a (y_a - f_a)^2`` and ``sum_{i in a}
        w_i (y_a - f_i)^2`` (sums, not yet divided by ``sum_a W_a``).

    Returns
    -------
    bag_loss, instance_loss : Tensor
        See :mod:`sklearn_llp.methods._regression`.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import regression_losses
    >>> pred = torch.tensor([1.0, 3.0, 5.0])
    >>> bag, instance = regression_losses(
    ...     pred, torch.tensor([0, 0, 1]), torch.tensor([1.0, 4.0]))
    >>> round(float(bag), 4), round(float(instance), 4)  # 3 / 3, (0 + 4 + 1) / 3
    (1.0, 1.6667)
    """
    pred, w, means = _pair_tensors(predictions, segments, bag_means, weights, members)
    n_bags = means.shape[0]
    totals = segment_sum(w, segments, n_bags)
    bag_pred = segment_sum(w * pred, segments, n_bags) / totals
    if bag_weights is not None:
        totals = totals * bag_weights.to(totals.dtype)
        w = w * bag_weights.to(w.dtype)[segments]
    per_bag = totals * (means - bag_pred) ** 2
    per_bag_instance = segment_sum(w * (means[segments] - pred) ** 2, segments, n_bags)
    if reduction == "none":
        return per_bag, per_bag_instance
    denominator = totals.sum()
    return per_bag.sum() / denominator, per_bag_instance.sum() / denominator


def interpolating_loss(
    predictions,
    segments,
    bag_means,
    rho,
    weights=None,
    bag_weights=None,
    *,
    members=None,
):
    """``(1 - rho) * bag_loss + rho * instance_loss`` (see
    :func:`regression_losses`); ``rho`` in [0, 1].

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import interpolating_loss
    >>> pred = torch.tensor([1.0, 3.0, 5.0])
    >>> loss = interpolating_loss(pred, torch.tensor([0, 0, 1]),
    ...                           torch.tensor([1.0, 4.0]), rho=0.5)
    >>> round(float(loss), 4)  # (1.0 + 5 / 3) / 2
    1.3333
    """
    bag, instance = regression_losses(
        predictions, segments, bag_means, weights, bag_weights, members=members
    )
    if rho == 0:
        return bag
    if rho == 1:
        return instance
    return (1.0 - rho) * bag + rho * instance


class RegressionMethod(LLPMethod):
    """Base class of the losses of :class:`~sklearn_llp.LLPRegressor`.

    A regression method turns a batch of whole bags, whose
    ``bags.bag_props`` hold one (standardised) mean per bag, and the
    network's ``(n, 1)`` predictions into a loss. Subclass it (not
    :class:`LLPMethod`, whose methods learn label proportions) to add one:
    implement :meth:`get_loss`; :func:`~sklearn_llp.methods.register_method`
    then registers it for ``LLPRegressor(method=name)``.

    Early stopping is on by default (``early_stopping_default``): a network
    fits the bag means of its training bags long before it has learned
    their rows. On Adult's weekly hours (8,000 training people, MLP
    256-256, seed 0) 100 epochs gave a test R^2 of -0.120 in random bags of
    16 and -0.039 in bags of 64; stopping on 10 % held-out bags gave 0.168
    and 0.026 (K-means bags: 0.198 and 0.200). On a smooth synthetic target
    with little noise it cost 0.05 (0.748 against 0.801).
    """

    early_stopping_default = True

    def prepare(self, bags, random_state):
        """See the training bags once per ``fit``; sets ``bag_sizes_``.

        Refuses bags that carry label proportions (a regression method given
        to a classifier).
        """
        if bags.props is None or bags.props.shape[1] != 1:
            raise ValueError(
                f"{type(self).__name__} is a regression loss, for LLPRegressor "
                "(bag means); a classifier trained on label proportions takes a "
                "classification method (see sklearn_llp.methods.available_methods())."
            )
        self.bag_sizes_ = bags.total_weights()
        # mean weight of a (bag, row) pair over the training bags: a weighted
        # batch's loss is divided by its pairs times this (not by its own
        # total weight), so that every batch estimates the same full-data
        # loss and a batch of low-weight bags pulls less than one of
        # high-weight bags (None: unweighted, the two are the same)
        self.pair_weight_ = None
        if bags.weights is not None or bags.bag_weights is not None:
            totals = self.bag_sizes_
            if bags.bag_weights is not None:
                totals = totals * bags.bag_weights
            self.pair_weight_ = float(totals.sum() / max(len(bags.members), 1))
        self._device_cache = {}
        return self

    def _losses(self, logits, bags):
        pair_weight = getattr(self, "pair_weight_", None)
        batch = (logits, bags.segments, bags.bag_props, bags.weights, bags.bag_weights)
        if pair_weight is None:
            return regression_losses(*batch, members=bags.members)
        per_bag, per_bag_instance = regression_losses(
            *batch, members=bags.members, reduction="none"
        )
        denominator = bags.segments.shape[0] * pair_weight
        return per_bag.sum() / denominator, per_bag_instance.sum() / denominator


class BagLoss(RegressionMethod):
    """Bag-level squared loss: each bag's mean prediction against its mean.

    ``sum_a W_a (y_a - f_a)^2 / sum_a W_a`` with ``f_a`` the bag's
    (sample-weighted) mean prediction and ``W_a`` its size (total weight):
    the natural loss for bag means, unbiased for a linear model, and the
    default of :class:`~sklearn_llp.LLPRegressor`. With singleton bags it is
    the mean squared error.

    See Also
    --------
    InstanceLoss : Every row regressed on its bag's mean.
    InterpolatingLoss : Between the two.

    Examples
    --------
    >>> from sklearn_llp import LLPRegressor
    >>> from sklearn_llp.methods import BagLoss
    >>> reg = LLPRegressor(method=BagLoss())
    """

    def get_loss(self, module, X, logits, bags, step, total_steps):
        return self._losses(logits, bags)[0]


class InstanceLoss(RegressionMethod):
    """Instance-level squared loss: every row regressed on its bag's mean.

    ``sum_a sum_{i in a} w_i (y_a - f(x_i))^2 / sum_a W_a``: the bag loss of
    :class:`BagLoss` plus the within-bag variance of the predictions, a
    regulariser that shrinks the predictions of a bag towards each other
    (biased, lower variance; Javanmard et al., ICLR 2024).

    Examples
    --------
    >>> from sklearn_llp import LLPRegressor
    >>> reg = LLPRegressor(method="instance")
    """

    def get_loss(self, module, X, logits, bags, step, total_steps):
        return self._losses(logits, bags)[1]


class InterpolatingLoss(RegressionMethod):
    """The interpolating loss of Javanmard et al. (ICLR 2024).

    ``(1 - rho) * bag_loss + rho * instance_loss``, which is the bag loss
    plus ``rho`` times the within-bag variance of the predictions: ``rho``
    trades the bias of the instance loss for its lower variance.

    Parameters
    ----------
    rho : float in [0, 1], default=0.5
        0 is :class:`BagLoss`, 1 is :class:`InstanceLoss`. Tune it as
        ``method__rho`` (e.g. by ``GridSearchCV`` with ``BagKFold`` and
        :data:`~sklearn_llp.metrics.bag_r2_scorer`).

    Examples
    --------
    >>> from sklearn_llp import LLPRegressor
    >>> reg = LLPRegressor(method="interpolating", method__rho=0.25)
    >>> reg.get_params()["method__rho"]
    0.25
    """

    _parameter_constraints = {"rho": [Interval(Real, 0, 1, closed="both")]}

    def __init__(self, rho=0.5):
        self.rho = rho

    def get_loss(self, module, X, logits, bags, step, total_steps):
        bag, instance = self._losses(logits, bags)
        return (1.0 - self.rho) * bag + self.rho * instance
