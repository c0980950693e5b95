"""LLPFC: label proportions as label noise, trained with forward correction."""

from numbers import Integral

import numpy as np
import torch
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from ._base import LLPMethod


def llpfc_transition_matrices(props, sizes):
    """``T[g, c, i] = P(noisy = i | y = c)`` of every group of bags (:ref:`llpfc`).

    Examples
    --------
    >>> from sklearn_llp.methods.functional import llpfc_transition_matrices
    >>> llpfc_transition_matrices([[[0.75, 0.25], [0.0, 1.0]]], [[4.0, 4.0]])[0]
    array([[1. , 0. ],
           [0.2, 0.8]])
    """
    props = np.asarray(props, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    joint = sizes[:, :, None] * props  # (group, bag i, class c)
    class_mass = joint.sum(axis=1)  # (group, class)
    absent = class_mass <= 0
    transitions = (
        joint.transpose(0, 2, 1) / np.where(absent, 1.0, class_mass)[:, :, None]
    )
    noisy_prior = sizes / sizes.sum(axis=1, keepdims=True)  # (group, bag)
    return np.where(absent[:, :, None], noisy_prior[:, None, :], transitions)


def forward_correction_loss(logits, transition_columns, weights=None):
    """Forward-corrected cross-entropy of rows from their ``T[:, noisy]`` columns.

    Examples
    --------
    >>> from torch import tensor, zeros
    >>> from sklearn_llp.methods.functional import forward_correction_loss
    >>> forward_correction_loss(zeros(1, 2), tensor([[0.6, 0.2]]))  # -log 0.4
    tensor([0.9163])
    """
    log_probs = torch.log_softmax(logits, dim=1)
    per_row = -torch.logsumexp(log_probs + transition_columns.log(), dim=1)
    if weights is None:
        return per_row
    total = weights.sum().clamp_min(torch.finfo(per_row.dtype).tiny)
    return (per_row * weights).sum() / total


class LLPFC(LLPMethod):
    """LLPFC (Zhang, Wang & Scott 2022): proportions as label noise (:ref:`llpfc`).

    Parameters
    ----------
    regroup_every : int or None, default=20
        Draw new groups every this many epochs of a fit; None keeps the first.

    Attributes
    ----------
    groups_, positions_ : ndarray of shape (n_bags,)
        Group of every training bag (-1: left over) and its position there.
    transitions_ : ndarray of shape (n_groups, n_classes, n_classes)
    n_singular_groups_, n_regroupings_ : int

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="llpfc", method__regroup_every=5)
    """

    _parameter_constraints = {
        "regroup_every": [Interval(Integral, 1, None, closed="left"), None]
    }
    early_stopping_default = True

    def __init__(self, regroup_every=20):
        self.regroup_every = regroup_every

    def prepare(self, bags, random_state):
        """Draw the first grouping; refuse overlapping bags, fewer bags than classes."""
        if bags.overlapping:
            raise ValueError(
                "method='llpfc' needs disjoint bags: an instance in several bags "
                "would get several noisy labels (its bags' positions). Use another "
                "method (e.g. 'dllp') for overlapping bags."
            )
        n_classes = bags.n_classes
        if bags.n_bags < n_classes:
            raise ValueError(
                f"method='llpfc' groups the bags by {n_classes} (one per class) and "
                f"needs at least {n_classes} training bags; got {bags.n_bags}."
            )
        super().prepare(bags, random_state)
        self._rng = check_random_state(random_state)
        self._props = np.asarray(bags.props, dtype=np.float64)
        self.n_regroupings_ = 0
        self._regroup()
        return self

    def _regroup(self):
        n_bags, n_classes = self._props.shape
        n_groups = n_bags // n_classes
        grouped = self._rng.permutation(n_bags)[: n_groups * n_classes]
        slot = np.arange(n_groups * n_classes)
        self.groups_ = np.full(n_bags, -1, dtype=np.int64)
        self.groups_[grouped] = slot // n_classes
        self.positions_ = np.zeros(n_bags, dtype=np.int64)
        self.positions_[grouped] = slot % n_classes
        self.transitions_ = llpfc_transition_matrices(
            self._props[grouped].reshape(n_groups, n_classes, n_classes),
            self.bag_sizes_[grouped].reshape(n_groups, n_classes),
        )
        ranks = np.linalg.matrix_rank(self.transitions_)
        self.n_singular_groups_ = int(np.sum(ranks < n_classes))
        self.n_regroupings_ += 1

    def on_epoch_begin(self, epoch):
        """Regroup at the start of every ``regroup_every``-th epoch."""
        if epoch > 0 and self.regroup_every and epoch % self.regroup_every == 0:
            self._regroup()

    def logit_loss(self, logits, bags, step, total_steps):
        logits, weights = bags.pairs(logits)
        group = self.bag_tensor("groups_", logits, bags)
        position = self.bag_tensor("positions_", logits, bags)
        transitions = self.bag_tensor("transitions_", logits)
        # column T[:, position] of every batch bag's group: (n_batch_bags, C)
        columns = transitions[group.clamp_min(0), :, position]
        grouped = (group >= 0).to(logits.dtype)[bags.segments]  # left over: 0
        weights = grouped if weights is None else grouped * weights
        return forward_correction_loss(logits, columns[bags.segments], weights)
