"""The method interface: one small object turns a batch of whole bags into a loss."""

import math
from contextlib import contextmanager
from numbers import Real
from typing import NamedTuple

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from ..core import class_prior
from . import _segments as ops


class BagBatch(NamedTuple):
    """A training batch's bags as (bag, row) pairs, one per membership, on the device.

    Attributes
    ----------
    segments, bag_props, bag_index : Tensor
        Bag of every pair (in ``[0, n_bags)``); proportions (or means) of the
        bags; their index in the bags given to :meth:`LLPMethod.prepare`.
    members, weights, bag_weights : Tensor or None
        Row of every pair (None: pair ``i`` is row ``i``); row and bag weights.
    margins : Tensor or None
        MixBag's interval half-widths, ``>= 0`` on mixed bags (which
        :meth:`proportion_loss` scores by the interval loss), else -1.

    Examples
    --------
    >>> from torch import tensor, zeros
    >>> from sklearn_llp.methods import BagBatch
    >>> batch = BagBatch(tensor([0, 0]), tensor([[1.0, 0.0]]), tensor([0]))
    >>> batch.proportion_loss(zeros(2, 2))  # log 2
    tensor(0.6931)
    """

    segments: torch.Tensor
    bag_props: torch.Tensor
    bag_index: torch.Tensor
    members: torch.Tensor | None = None
    weights: torch.Tensor | None = None
    bag_weights: torch.Tensor | None = None
    margins: torch.Tensor | None = None

    def take(self, per_row):
        """The rows of ``per_row`` for every pair (a deterministic gather)."""
        if self.members is None or per_row is None:
            return per_row
        return ops.gather_rows(per_row, self.members)

    def pairs(self, logits):
        """The logits (float32 at least) and weights (or None) of every pair."""
        logits = ops.at_least_float32(self.take(logits))
        weights = self.take(self.weights)
        return logits, None if weights is None else weights.to(logits.dtype)

    def proportion_loss(self, logits):
        """DLLP's loss of the batch from the logits of its rows."""
        logits, weights = self.take(logits), self.take(self.weights)
        args = (self.segments, self.bag_props, weights, self.bag_weights)
        return ops.proportion_loss(logits, *args, margins=self.margins)


class LLPMethod(BaseEstimator):
    """Base class of the training methods, cloned per fit (:ref:`writing_a_method`).

    Examples
    --------
    >>> from sklearn_llp.methods import LLPMethod
    >>> class HalfProportion(LLPMethod):
    ...     def logit_loss(self, logits, bags, step, total_steps):
    ...         return 0.5 * bags.proportion_loss(logits)
    """

    #: scikit-learn style constraints of the hyperparameters (:meth:`validate`).
    _parameter_constraints: dict = {}

    #: Whether ``early_stopping="auto"`` turns early stopping on.
    early_stopping_default: bool = False

    #: Whether the loss reads a bag only through its mean prediction and its
    #: label, so MixBag's mixed bags (labelled by their mix) fit it.
    reads_bag_means: bool = False

    def validate(self):
        """Check the hyperparameters; an error names ``method__<name>``."""
        try:
            self._validate_params()
        except (ValueError, TypeError) as exc:
            message = str(exc).replace("The '", "The 'method__", 1)
            raise type(exc)(message) from None
        return self

    def prepare(self, bags, random_state):
        """See the training bags once per fit: ``bag_sizes_``, ``class_prior_``."""
        self.bag_sizes_ = bags.total_weights()
        if bags.n_classes is not None:
            self.class_prior_ = class_prior(bags)
        self._device_cache = {}
        return self

    def on_epoch_begin(self, epoch):
        """Hook before every epoch (``epoch`` counts from 0 in each fit)."""

    def bag_tensor(self, name, like, bags=None):
        """Attribute ``name`` on ``like``'s device, moved once; ``bags``: their rows."""
        values = getattr(self, name)
        cache = vars(self).setdefault("_device_cache", {})
        dtype = None
        if np.asarray(values).dtype.kind == "f":
            dtype = torch.promote_types(like.dtype, torch.float32)
        key = (name, like.device, dtype)
        cached = cache.get(key)
        if cached is None or cached[0] is not values:
            cached = (values, torch.as_tensor(values, dtype=dtype, device=like.device))
            cache[key] = cached
        return cached[1] if bags is None else cached[1][bags.bag_index]

    def __getstate__(self):
        # tensors moved to a device are a cache, rebuilt on the next step
        state = dict(super().__getstate__())
        state.pop("_device_cache", None)
        return state

    def get_loss(self, module, X, logits, bags, step, total_steps):
        """The loss of a batch: ``logits = module(X)``, ``bags`` a :class:`BagBatch`.

        :meth:`logit_loss` plus :meth:`row_loss`: a bag above ``max_bag_size``
        trains on that split, in chunks (:ref:`mini_bags`)."""
        loss = self.logit_loss(logits, bags, step, total_steps)
        rows = self.row_loss(module, X, logits, bags.weights, step, total_steps)
        return loss if rows is None else loss + rows

    def logit_loss(self, logits, bags, step, total_steps):
        """The terms of the loss that read the module only through ``logits``."""
        raise NotImplementedError

    def row_loss(self, module, X, logits, weights, step, total_steps):
        """The terms that run the module again: a mean over the rows of ``X``
        weighted by ``weights`` (None: the plain mean), or None if none."""
        return None

    def rampup_weight(self, alpha, rampup, step, total_steps):
        """``alpha exp(-5 (1 - t/T)^2)`` at step ``t < T = rampup * total_steps``."""
        ramp = int(round(rampup * total_steps))
        if ramp <= 0 or step >= ramp:
            return alpha
        phase = 1.0 - max(step, 0) / ramp
        return alpha * math.exp(-5.0 * phase * phase)


#: Constraints of the consistency methods' ramped weight.
_RAMP_CONSTRAINTS = {
    "alpha": [Interval(Real, 0, None, closed="left")],
    "rampup": [Interval(Real, 0, 1, closed="both")],
}


class ConsistencyMethod(LLPMethod):
    """``L_prop + w(t) mean(consistency_loss)``, ``w`` ramped up to ``alpha``.

    Examples
    --------
    >>> from sklearn_llp.methods import ConsistencyMethod
    >>> class Smooth(ConsistencyMethod):
    ...     def __init__(self, alpha=1.0, rampup=0.0):
    ...         self.alpha, self.rampup = alpha, rampup
    ...     def consistency_loss(self, module, X, target_logits):
    ...         return (module(X) - target_logits).pow(2).sum(1)
    """

    reads_bag_means = True

    def consistency_loss(self, module, X, target_logits):
        """Consistency loss of every row, shape ``(n,)``."""
        raise NotImplementedError

    def logit_loss(self, logits, bags, step, total_steps):
        return bags.proportion_loss(logits)

    def row_loss(self, module, X, logits, weights, step, total_steps):
        weight = self.rampup_weight(self.alpha, self.rampup, step, total_steps)
        if weight == 0.0:
            return None
        target = logits.detach()
        if _active_dropouts(module):
            with torch.no_grad(), perturbation_mode(module):
                target = module(X)
        consistency = self.consistency_loss(module, X, target)
        return weight * ops.weighted_mean(consistency, weights)


class DLLP(LLPMethod):
    """DLLP (Ardehaly & Culotta 2017): the proportion loss alone.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="dllp")
    """

    reads_bag_means = True

    def logit_loss(self, logits, bags, step, total_steps):
        return bags.proportion_loss(logits)


def _active_dropouts(module):
    dropout = torch.nn.modules.dropout._DropoutNd
    return [m for m in module.modules() if isinstance(m, dropout) and m.training]


@contextmanager
def perturbation_mode(module):
    """Context for extra forward passes: no dropout, no BatchNorm statistics update.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import perturbation_mode
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5))
    >>> with perturbation_mode(net):
    ...     net[1].training
    False
    """
    dropouts = _active_dropouts(module)
    norm = torch.nn.modules.batchnorm._BatchNorm
    norms = [
        m for m in module.modules() if isinstance(m, norm) and m.track_running_stats
    ]
    for m in dropouts:
        m.eval()
    for m in norms:
        m.track_running_stats = False
    try:
        yield module
    finally:
        for m in dropouts:
            m.train()
        for m in norms:
            m.track_running_stats = True
