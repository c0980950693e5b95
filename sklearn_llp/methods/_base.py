"""The method interface: one small object computes the loss of a batch."""

from contextlib import contextmanager
from numbers import Real
from typing import NamedTuple

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval

from ._segments import exp_rampup, gather_rows, proportion_loss, weighted_mean


class BagBatch(NamedTuple):
    """The bag structure of one training batch, already on the device.

    A batch holds (bag, instance) pairs: with disjoint bags one per
    instance, with overlapping bags one per membership. Per-instance values
    (logits) are taken to pairs with :meth:`take`; per-pair values are
    reduced to bags by ``segments``.

    Attributes
    ----------
    segments : LongTensor of shape (n_pairs,)
        Bag index, in ``[0, n_bags)``, of every pair.
    bag_props : Tensor of shape (n_bags, n_classes)
        Label proportions of the bags of the batch.
    bag_index : LongTensor of shape (n_bags,)
        Index of every bag of the batch in the training
        :class:`~sklearn_llp.core.Bags` passed to :meth:`LLPMethod.prepare`
        (for methods that keep per-bag state: :meth:`LLPMethod.bag_tensor`).
    members : LongTensor of shape (n_pairs,) or None, default=None
        Instance (row of the batch) of every pair; None means one pair per
        instance, in order (disjoint bags).
    weights : Tensor of shape (n_instances,) or None, default=None
        Sample weight of every instance (row of the batch); None weighs all
        equally. Bag means are weighted means.
    bag_weights : Tensor of shape (n_bags,) or None, default=None
        Weight of every bag in means over bags; None counts each bag once.
    """

    segments: torch.Tensor
    bag_props: torch.Tensor
    bag_index: torch.Tensor
    members: torch.Tensor | None = None
    weights: torch.Tensor | None = None
    bag_weights: torch.Tensor | None = None

    def take(self, per_instance):
        """Rows of a per-instance tensor for every pair (bag member).

        A gather whose gradient (an instance in several bags sums the
        gradients of its pairs) is a deterministic segment sum
        (:func:`~sklearn_llp.methods._segments.gather_rows`), not the atomic
        scatter-add of indexing's backward.
        """
        if self.members is None or per_instance is None:
            return per_instance
        return gather_rows(per_instance, self.members)

    def proportion_loss(self, logits):
        """:func:`proportion_loss` of the batch's bags from instance logits."""
        return proportion_loss(
            self.take(logits),
            self.segments,
            self.bag_props,
            self.take(self.weights),
            self.bag_weights,
        )


class LLPMethod(BaseEstimator):
    """Base class of the LLP training methods.

    A method is a small scikit-learn style object (its ``__init__`` stores
    hyperparameters, so ``clone`` and ``get_params`` work) that turns one batch
    of whole bags into a scalar loss. :class:`~sklearn_llp.LLPClassifier`
    calls :meth:`get_loss` once per optimizer step; subclasses override it.

    To add a method, subclass :class:`LLPMethod`, implement :meth:`get_loss`
    and either pass an instance as ``LLPClassifier(method=MyMethod())`` or
    register a name with :func:`~sklearn_llp.methods.register_method`. A
    method that needs the whole training set (class priors, bag sizes, a
    grouping of the bags) overrides :meth:`prepare`, which the classifier
    calls once per ``fit`` before the first step.

    Examples
    --------
    >>> from sklearn_llp.methods import LLPMethod
    >>> class ScaledProportion(LLPMethod):
    ...     def __init__(self, scale=1.0):
    ...         self.scale = scale
    ...
    ...     def get_loss(self, module, X, logits, bags, step, total_steps):
    ...         return self.scale * bags.proportion_loss(logits)
    """

    #: scikit-learn style constraints of the hyperparameters, checked by
    #: :meth:`validate` before every fit.
    _parameter_constraints: dict = {}

    #: Whether the estimator's ``early_stopping="auto"`` turns early stopping
    #: on for this method (given enough bags): True for losses that a network
    #: overfits as training goes on, so that the last epoch is worse than an
    #: earlier one.
    early_stopping_default: bool = False

    def validate(self):
        """Check the hyperparameters against ``_parameter_constraints``.

        Raises
        ------
        ValueError or TypeError
            Naming the hyperparameter (as ``method__<name>``) and what is
            wrong with it.
        """
        try:
            self._validate_params()
        except (ValueError, TypeError) as exc:
            message = str(exc).replace("The '", "The 'method__", 1)
            raise type(exc)(message) from None
        return self

    def prepare(self, bags, random_state):
        """Hook: see the training bags once per ``fit``.

        Called by the classifier after the validation split and before the
        first step of every ``fit`` and ``partial_fit``, on the fresh method
        object built for that call. Here it sets what several methods need:
        ``bag_sizes_`` (the total sample weight of every training bag: its
        size when unweighted) and ``class_prior_`` (the class proportions of
        the training rows, ``bag_sizes_ @ props`` normalised). A subclass that
        overrides it calls ``super().prepare(bags, random_state)`` first.
        State computed here (attributes ending in ``_``) is then available to
        :meth:`get_loss`, where ``bags.bag_index`` maps the batch's bags to
        the bags given here (see :meth:`bag_tensor`).

        Parameters
        ----------
        bags : Bags
            The training bags (:class:`~sklearn_llp.core.Bags`): their rows,
            sizes, proportions ``bags.props``, weights and classes.
        random_state : RandomState
            Seeded from the classifier's ``random_state``.

        Returns
        -------
        self : LLPMethod
        """
        self.bag_sizes_ = bags.total_weights()
        prior = self.bag_sizes_ @ np.asarray(bags.props, dtype=np.float64)
        self.class_prior_ = prior / prior.sum()
        self._device_cache = {}
        return self

    def on_epoch_begin(self, epoch):
        """Hook: called before every epoch; ``epoch`` counts from 0 at
        :meth:`prepare` (so within one ``fit`` or ``partial_fit``). No-op."""

    def bag_tensor(self, name, like, bags=None):
        """The array attribute ``name`` as a tensor on ``like``'s device.

        Moved once (per device, dtype and array object: set the attribute to
        a new array and the next call moves it again), so that per-bag state
        costs no host-device copy per step. Floating arrays take ``like``'s
        dtype promoted to at least float32 (losses are computed in float32
        under half precision); integer arrays keep theirs. With ``bags`` (a
        :class:`BagBatch`), the rows of the batch's bags
        (``bags.bag_index``) are returned.
        """
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
        tensor = cached[1]
        return tensor if bags is None else tensor[bags.bag_index]

    def __getstate__(self):
        # tensors moved to a device are a cache, rebuilt on the next step
        state = dict(super().__getstate__())
        state.pop("_device_cache", None)
        return state

    def get_loss(self, module, X, logits, bags, step, total_steps):
        """Loss of one batch of whole bags.

        Parameters
        ----------
        module : torch.nn.Module
            The network, in training mode; call it for extra forward passes.
        X : Tensor of shape (n_instances, ...)
            The instances of the batch, on the module's device.
        logits : Tensor of shape (n_instances, n_classes)
            ``module(X)``, computed once by the classifier.
        bags : BagBatch
            Bag-member pairs of the batch and proportions of every bag;
            ``bags.take(logits)`` gives the logits of every pair.
        step : int
            Optimizer steps taken before this one, counted over the whole
            training (not per epoch).
        total_steps : int
            Optimizer steps planned for the current ``fit``.

        Returns
        -------
        loss : scalar Tensor
        """
        raise NotImplementedError

    def rampup_weight(self, alpha, rampup, step, total_steps):
        """``alpha * exp(-5 (1 - t/T)^2)`` with ``T = rampup * total_steps``."""
        return alpha * exp_rampup(step, int(round(rampup * total_steps)))


#: Constraints shared by the consistency methods' ramped weight.
_RAMP_CONSTRAINTS = {
    "alpha": [Interval(Real, 0, None, closed="left")],
    "rampup": [Interval(Real, 0, 1, closed="both")],
}


class ConsistencyMethod(LLPMethod):
    """Proportion loss plus a ramped-up consistency loss (LLP-VAT's recipe).

    ``get_loss`` returns ``L_prop + w(t) * mean(consistency_loss(...))`` with
    ``w(t) = alpha * exp(-5 (1 - t/T)^2)``, ``T = rampup * total_steps``;
    the consistency target is the clean prediction, held fixed
    (:func:`clean_logits`), and the mean over instances is weighted by the
    sample weights if given. Subclasses set ``alpha`` and ``rampup`` and
    implement :meth:`consistency_loss`.
    """

    def consistency_loss(self, module, X, target_logits):
        """Consistency loss of every instance, shape ``(n,)``, against fixed
        clean logits."""
        raise NotImplementedError

    def get_loss(self, module, X, logits, bags, step, total_steps):
        loss = bags.proportion_loss(logits)
        weight = self.rampup_weight(self.alpha, self.rampup, step, total_steps)
        if weight == 0.0:
            return loss
        target = clean_logits(module, X, logits)
        consistency = self.consistency_loss(module, X, target)
        return loss + weight * weighted_mean(consistency, bags.weights)


class DLLP(LLPMethod):
    """Vanilla DLLP: the proportion loss alone.

    The loss of a bag is the cross-entropy between its label proportions and
    the mean of the instance probabilities in the bag (Ardehaly & Culotta
    2017); with bags of one instance it is the ordinary cross-entropy.

    See Also
    --------
    VAT : DLLP plus virtual adversarial consistency (LLP-VAT).

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> from sklearn_llp.methods import DLLP
    >>> clf = LLPClassifier(method=DLLP())
    """

    def get_loss(self, module, X, logits, bags, step, total_steps):
        return bags.proportion_loss(logits)


def _active_dropout(module):
    return any(
        isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.training
        for m in module.modules()
    )


@contextmanager
def perturbation_mode(module):
    """Run extra forward passes without dropout and without BatchNorm updates.

    Consistency losses compare predictions for clean and perturbed inputs;
    dropout noise in those passes would be measured as inconsistency, and
    BatchNorm running statistics must not drift towards perturbed inputs.
    Inside the context, dropout layers are in eval mode and BatchNorm layers
    normalise with the batch statistics but leave their running statistics
    untouched.
    """
    dropouts = [
        m
        for m in module.modules()
        if isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.training
    ]
    norms = [
        m
        for m in module.modules()
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)
        and m.track_running_stats
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


def clean_logits(module, X, logits):
    """Logits of the clean input as a fixed consistency target.

    Reuses the training pass when the module has no active dropout (then
    both are the same function of ``X``); otherwise runs one extra pass in
    :func:`perturbation_mode` without gradient.
    """
    if not _active_dropout(module):
        return logits.detach()
    with torch.no_grad(), perturbation_mode(module):
        return module(X)
