"""LLPFC: learning from label proportions as learning with label noise.

Bags are grouped by ``C`` (the number of classes); within a group, the
position of an instance's bag is a *noisy label* whose class-conditional
distribution -- the group's transition matrix -- follows from the bags'
sizes and proportions, and the network is trained with the forward-corrected
cross-entropy of Patrini et al. (2017). The grouping and every transition
matrix are built in :meth:`LLPFC.prepare` (and again at every regrouping)
with vectorised numpy; a training step looks its bags up by
``BagBatch.bag_index``, with no Python loop over bags or instances.
"""

from numbers import Integral

import numpy as np
import torch
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval

from ._base import LLPMethod


def llpfc_transition_matrices(props, sizes):
    """Noise transition matrices of groups of bags (LLPFC).

    In a group of bags ``0..m-1`` every instance gets the noisy label ``i``
    of the bag it is in. With bag ``i`` holding ``n_i`` instances in
    proportions ``p_i``, the transition matrix of the group is::

        T[c, i] = P(noisy = i | y = c) = n_i p_{i,c} / sum_j n_j p_{j,c}

    (Zhang, Wang & Scott 2022: ``T[c, i] = sigma_i gamma_{i,c} / pi_c``,
    here with the noisy-label prior ``sigma_i = n_i / sum_j n_j`` and the
    clean prior ``pi = Gamma^T sigma`` of the pooled group). Every row of a
    class present in the group is a distribution over the bags. A class
    absent from every bag of the group (``sum_j n_j p_{j,c} = 0``) has no
    conditional distribution; its row is set to ``sigma``, the limit of the
    formula when that class has the same tiny proportion in every bag (the
    class then says nothing about the bag), so that every row sums to 1.

    Parameters
    ----------
    props : array-like of shape (n_groups, m, n_classes)
        Proportions of the bags of every group, in their group order.
    sizes : array-like of shape (n_groups, m)
        (Weighted) size of every bag.

    Returns
    -------
    transitions : ndarray of shape (n_groups, n_classes, m)
        ``transitions[g, c, i]``: probability that an instance of class ``c``
        in group ``g`` is in the group's ``i``-th bag.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.methods.functional import llpfc_transition_matrices
    >>> props = np.array([[[0.75, 0.25], [0.0, 1.0]]])  # one group, 2 bags
    >>> llpfc_transition_matrices(props, np.array([[4.0, 4.0]]))[0]
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
    """Forward-corrected cross-entropy of every row, or their weighted mean.

    ``-log(sum_c softmax(logits)_c T[c, noisy])`` (Patrini et al. 2017),
    computed as ``-logsumexp(log_softmax(logits) + log T[:, noisy])``: exact
    where ``T`` has zeros (their classes drop out) and finite as long as the
    column has a positive entry.

    Parameters
    ----------
    logits : Tensor of shape (n, n_classes)
    transition_columns : Tensor of shape (n, n_classes)
        Column ``T[:, noisy_i]`` of the transition matrix of every row.
    weights : Tensor of shape (n,), default=None
        If given, returns ``sum(weights * loss) / sum(weights)`` (0 when all
        weights are 0); otherwise the loss of every row.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import forward_correction_loss
    >>> logits = torch.log(torch.tensor([[0.5, 0.5]]))
    >>> forward_correction_loss(logits, torch.tensor([[0.6, 0.2]]))  # -log 0.4
    tensor([0.9163])
    """
    log_probs = torch.log_softmax(logits, dim=1)
    per_row = -torch.logsumexp(log_probs + transition_columns.log(), dim=1)
    if weights is None:
        return per_row
    total = weights.sum().clamp_min(torch.finfo(per_row.dtype).tiny)
    return (per_row * weights).sum() / total


class LLPFC(LLPMethod):
    """LLPFC: label proportions as label noise, forward correction (Zhang et al.).

    The training bags are split at random into groups of ``C`` bags (``C``
    classes). In a group, an instance's *noisy label* is the position of its
    bag, and the probability of noisy label ``i`` given true class ``c`` is
    known from the bags' sizes ``n`` and proportions ``p``::

        T[c, i] = n_i p_{i,c} / sum_j n_j p_{j,c}

    (:func:`llpfc_transition_matrices`). The network is trained on the noisy
    labels with the forward-corrected cross-entropy of Patrini et al. (2017),

        ``L = -log(sum_c softmax(f(x))_c T[c, noisy(x)])``,

    averaged over the instances of a batch (weighted by their sample
    weights); with ``T`` invertible, minimising it in expectation recovers
    the clean posterior (the paper's calibration and excess-risk results).
    Every ``regroup_every`` epochs the groups are drawn afresh, as in the
    paper's experiments.

    Choices where the paper leaves room (all documented here):

    - **Noisy-label prior.** The paper's ``T = diag(sigma) Gamma / pi`` needs
      the prior ``sigma`` of the noisy labels; this is the group's empirical
      one, ``sigma_i = n_i / sum_j n_j`` (with sample weights, ``n`` is the
      bag's total weight), so the group is exactly a noisy-label data set and
      ``T`` above its transition matrix. For bags of equal size it is the
      paper's LLPFC-uniform; the paper's LLPFC-approx (``sigma`` fitted to a
      global class prior by constrained least squares) is not implemented.
    - **Leftover bags.** ``n_bags mod C`` bags, drawn at random at every
      regrouping, are in no group until the next one (as in the authors'
      code): their instances get weight 0 in the loss. A batch of leftover
      bags only has loss 0. Every bag is grouped in most periods; with few
      bags, regroup more often (``regroup_every=1``).
    - **Singular or ill-conditioned T.** Forward correction never inverts
      ``T``, so such groups are used as they are: a group whose bags have
      (nearly) equal proportions carries little information, but the clean
      posterior still minimises its expected loss. ``n_singular_groups_``
      counts them for the current grouping (the authors' code only logs a
      warning).
    - **Absent classes.** A class in no bag of a group gets the row
      ``sigma`` (see :func:`llpfc_transition_matrices`).
    - **Weights.** The mean over a batch is over instances, so groups weigh
      in proportion to their size (the paper weighs groups equally, the
      same for bags of equal size). ``bag_weights`` (set only for
      supervised data) are not used: there each row's weight is its sample
      weight already.

    Batches hold whole bags, so subsampled large bags (``max_bag_size``)
    keep their full size in ``T``. Overlapping bags are refused: a shared
    instance would have several noisy labels.

    **Where it works.** The noisy labels carry the information in how much
    the proportions of a group's bags differ. Measured as the mutual
    information between a row's noisy label and its class, relative to the
    class entropy (digits, 10 classes, groups of 10 bags): 13 % in random
    bags of 16, 2.9 % in random bags of 64 and 0.7 % in random bags of 256,
    but 15 % in bags of 256 whose proportions are drawn from a Dirichlet(1)
    (the paper's setting). LLPFC is built for bags with **varied
    proportions**; in random bags it fades as about ``1/k`` with the bag
    size ``k``, and the proportion loss (``"vat"``, ``"dllp"``) is the
    better choice there (user guide, "Methods, and when each one helps").

    A flexible network memorises the noisy labels as training goes on (its
    training loss falls below that of the true labels): on digits in random
    bags of 16 (MLP 256-256, 60 epochs, 3 seeds) test accuracy is 81.4 %
    after 60 epochs and 89.4 % when the estimator's early stopping on
    held-out bags restores the best epoch, which is why
    ``early_stopping="auto"`` is on for this method
    (``early_stopping_default``). Regrouping every epoch instead of every 20
    changed accuracy by less than the seed spread there (0.90 / 0.90 / 0.80
    against 0.90 / 0.87 / 0.78 after 10 / 20 / 100 epochs without early
    stopping).

    Parameters
    ----------
    regroup_every : int or None, default=20
        Draw new groups every this many epochs (the authors' default, with
        200 epochs in all); None keeps the first grouping. Epochs are counted
        within each ``fit``/``partial_fit`` call; each call draws its first
        grouping in :meth:`prepare`, seeded by the classifier's
        ``random_state``.

    Attributes
    ----------
    groups_ : ndarray of shape (n_bags,)
        Group of every training bag, -1 for a leftover bag.
    positions_ : ndarray of shape (n_bags,)
        Position of every bag in its group: the noisy label of its instances.
    transitions_ : ndarray of shape (n_groups, n_classes, n_classes)
        ``transitions_[g, c, i] = P(noisy = i | y = c)`` in group ``g``.
    n_singular_groups_ : int
        Groups whose transition matrix has rank below ``n_classes``.
    n_regroupings_ : int
        Groupings drawn so far in this fit (1 after :meth:`prepare`).

    References
    ----------
    J. Zhang, Y. Wang, C. Scott. Learning from label proportions by learning
    with label noise. NeurIPS 2022 (arXiv:2203.02496).

    G. Patrini, A. Rozza, A. K. Menon, R. Nock, L. Qu. Making deep neural
    networks robust to label noise: a loss correction approach. CVPR 2017.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="llpfc", method__regroup_every=5)
    >>> from sklearn_llp.methods import LLPFC
    >>> clf = LLPClassifier(method=LLPFC(regroup_every=5))  # the same
    """

    _parameter_constraints = {
        "regroup_every": [Interval(Integral, 1, None, closed="left"), None],
    }
    early_stopping_default = True

    def __init__(self, regroup_every=20):
        self.regroup_every = regroup_every

    def prepare(self, bags, random_state):
        """Draw the first grouping of the training bags and its matrices.

        Raises
        ------
        ValueError
            If bags overlap or there are fewer bags than classes.
        """
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

    def get_loss(self, module, X, logits, bags, step, total_steps):
        dtype = torch.promote_types(logits.dtype, torch.float32)  # not in half
        group = self.bag_tensor("groups_", logits, bags)
        position = self.bag_tensor("positions_", logits, bags)
        transitions = self.bag_tensor("transitions_", logits)
        # column T[:, position] of every batch bag's group: (n_batch_bags, C)
        columns = transitions[group.clamp_min(0), :, position]
        weights = (group >= 0).to(dtype)[bags.segments]  # leftover bags: 0
        if bags.weights is not None:
            weights = weights * bags.take(bags.weights).to(dtype)
        return forward_correction_loss(
            bags.take(logits).to(dtype), columns[bags.segments], weights
        )
