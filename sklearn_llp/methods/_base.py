"""The method interface: one small object computes the loss of a batch."""

from contextlib import contextmanager
from typing import NamedTuple

import torch
from sklearn.base import BaseEstimator

from ._losses import exp_rampup, proportion_loss


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
    members : LongTensor of shape (n_pairs,) or None, default=None
        Instance (row of the batch) of every pair; None means one pair per
        instance, in order (disjoint bags).
    """

    segments: torch.Tensor
    bag_props: torch.Tensor
    members: torch.Tensor | None = None

    def take(self, per_instance):
        """Rows of a per-instance tensor for every pair (bag member)."""
        if self.members is None:
            return per_instance
        return per_instance[self.members]


class LLPMethod(BaseEstimator):
    """Base class of the LLP training methods.

    A method is a small scikit-learn style object (its ``__init__`` stores
    hyperparameters, so ``clone`` and ``get_params`` work) that turns one batch
    of whole bags into a scalar loss. :class:`~sklearn_llp.LLPClassifier`
    calls :meth:`get_loss` once per optimizer step; subclasses override it.

    To add a method, subclass :class:`LLPMethod`, implement :meth:`get_loss`
    and either pass an instance as ``LLPClassifier(method=MyMethod())`` or
    register a name with :func:`~sklearn_llp.methods.register_method`.

    Examples
    --------
    >>> from sklearn_llp.methods import LLPMethod, proportion_loss
    >>> class L2Prop(LLPMethod):
    ...     def get_loss(self, module, X, logits, bags, step, total_steps):
    ...         pairs = bags.take(logits)
    ...         return proportion_loss(pairs, bags.segments, bags.bag_props)
    """

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


class ConsistencyMethod(LLPMethod):
    """Proportion loss plus a ramped-up consistency loss (LLP-VAT's recipe).

    ``get_loss`` returns ``L_prop + w(t) * consistency_loss(...)`` with
    ``w(t) = alpha * exp(-5 (1 - t/T)^2)``, ``T = rampup * total_steps``;
    the consistency target is the clean prediction, held fixed
    (:func:`clean_logits`). Subclasses set ``alpha`` and ``rampup`` and
    implement :meth:`consistency_loss`.
    """

    def consistency_loss(self, module, X, target_logits):
        """Per-instance mean consistency loss against fixed clean logits."""
        raise NotImplementedError

    def get_loss(self, module, X, logits, bags, step, total_steps):
        loss = proportion_loss(bags.take(logits), bags.segments, bags.bag_props)
        weight = self.rampup_weight(self.alpha, self.rampup, step, total_steps)
        if weight == 0.0:
            return loss
        target = clean_logits(module, X, logits)
        return loss + weight * self.consistency_loss(module, X, target)


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
        return proportion_loss(bags.take(logits), bags.segments, bags.bag_props)


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
