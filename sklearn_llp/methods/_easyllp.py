"""EasyLLP: an unbiased estimate of every row's loss from its bag's proportions."""

import warnings

import numpy as np
import torch
from scipy.stats import chi2
from sklearn.utils._param_validation import StrOptions

from ..exceptions import NonRandomBagsWarning
from ._base import LLPMethod
from ._segments import at_least_float32

#: Bags whose proportions spread this many times more than random bags', at a
#: chi-square p-value below ``_SPREAD_P_VALUE``, are reported as not random.
_SPREAD_RATIO = 1.5
_SPREAD_P_VALUE = 1e-3


def _class_losses(logits, loss):
    """``l(f(x), c)`` for every row and class: (n, n_classes)."""
    if loss == "log":
        return -torch.log_softmax(logits, dim=1)
    if loss == "bounded_log":  # the reference code's -log(p + 1e-8)
        return -torch.log(torch.softmax(logits, dim=1) + 1e-8)
    probs = torch.softmax(logits, dim=1)  # ||q - e_c||^2
    return (probs * probs).sum(1, keepdim=True) - 2 * probs + 1


def easyllp_loss(
    logits, segments, bag_props, bag_sizes, prior, weights=None, loss="log"
):
    """EasyLLP's debiased loss, averaged over the rows of a batch.

    A row of a bag of ``k`` rows with proportions ``alpha`` gets the soft
    label ``y~ = k (alpha - p) + p`` (``p``: the class prior) and the loss
    ``sum_c y~_c l(f(x), c)``, which may be negative. With sample weights
    ``k = W / w_i`` (``W``: the bag's total weight) and the mean is weighted.

    Parameters
    ----------
    logits : Tensor of shape (n, n_classes)
    segments : LongTensor of shape (n,)
        Bag of every row.
    bag_props : Tensor of shape (n_bags, n_classes)
    bag_sizes : Tensor of shape (n_bags,)
        Full (weighted) size of every bag, not its rows in the batch.
    prior : Tensor of shape (n_classes,)
    weights : Tensor of shape (n,), default=None
    loss : {"log", "bounded_log", "square"}, default="log"
        ``l``: cross-entropy, ``-log(q_c + 1e-8)`` or ``||q - e_c||^2``.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import easyllp_loss
    >>> logits = torch.zeros(2, 2)  # both rows predict [0.5, 0.5]
    >>> props = torch.tensor([[0.75, 0.25]])
    >>> loss = easyllp_loss(logits, torch.tensor([0, 0]), props,
    ...                     torch.tensor([4.0]), torch.tensor([0.5, 0.5]))
    >>> round(loss.item(), 4)  # soft label [1.5, -0.5]: log 2
    0.6931
    """
    losses = _class_losses(logits, loss)
    excess = bag_sizes[:, None] * (bag_props - prior)  # W (alpha - p), per bag
    if weights is None:
        soft = excess[segments] + prior
        return (soft * losses).sum() / len(logits)
    soft = excess[segments] + weights[:, None] * prior  # w_i * y~_i
    return (soft * losses).sum() / weights.sum()


def _effective_sizes(bags):
    """Kish's effective size ``(sum w)^2 / sum w^2`` of every bag: its row
    count when unweighted, the same under any rescaling of the weights."""
    if bags.weights is None:
        return bags.sizes.astype(np.float64)
    w = bags.weights[bags.members]
    totals = np.bincount(bags.pair_bags, weights=w, minlength=bags.n_bags)
    squares = np.bincount(bags.pair_bags, weights=w * w, minlength=bags.n_bags)
    return totals**2 / squares


def bag_spread(props, sizes, prior=None):
    """How many times more the bags' proportions vary than random bags' would.

    ``sum_b k_b sum_c (alpha_bc - p_c)^2 / p_c``, a chi-square statistic
    for bags of random draws, over its expectation ``n_bags (C - 1)``: about
    1 for random bags, larger when bags group similar rows.

    Parameters
    ----------
    props : array-like of shape (n_bags, n_classes)
    sizes : array-like of shape (n_bags,)
        Rows of every bag (for weighted rows, Kish's effective size).
    prior : array-like of shape (n_classes,), default=None
        Population class rates; None: the size-weighted mean proportions.

    Returns
    -------
    ratio : float
        Observed over random-bag spread.
    p_value : float
        Probability of a spread at least this large for random bags.

    Examples
    --------
    >>> from sklearn_llp.methods.functional import bag_spread
    >>> ratio, p = bag_spread([[0.5, 0.5], [0.4, 0.6], [0.6, 0.4]], [10, 10, 10])
    >>> round(ratio, 2), p > 0.1  # as random as can be
    (0.27, True)
    >>> ratio, p = bag_spread([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]], [10, 10, 10])
    >>> round(ratio, 1), p < 1e-3  # bags sorted by class
    (10.0, True)
    """
    props = np.asarray(props, dtype=np.float64)
    sizes = np.asarray(sizes, dtype=np.float64)
    if prior is None:
        prior = sizes @ props / sizes.sum()
    prior = np.asarray(prior, dtype=np.float64)
    present = prior > 0  # a class absent everywhere adds nothing
    deviation = (props[:, present] - prior[present]) ** 2 / prior[present]
    statistic = float(sizes @ deviation.sum(1))
    n_bags, n_classes = len(props), int(present.sum())
    if n_bags < 2 or n_classes < 2:
        return 1.0, 1.0
    ratio = statistic / (n_bags * (n_classes - 1))
    return ratio, float(chi2.sf(statistic, (n_bags - 1) * (n_classes - 1)))


class EasyLLP(LLPMethod):
    """EasyLLP (Busa-Fekete et al. 2023): debiased instance loss.

    Every row of a bag of ``k`` rows (its full size) is trained on the soft
    label ``k (alpha - p) + p``; for bags of random draws the expected loss is
    the instance loss with the true labels
    (:func:`~sklearn_llp.methods.functional.easyllp_loss`). Soft labels can
    be negative: the default loss is bounded and early stopping is on.
    :meth:`prepare` warns (:class:`~sklearn_llp.exceptions.NonRandomBagsWarning`)
    when the bags do not look random. See :ref:`easyllp`.

    Parameters
    ----------
    loss : {"square", "bounded_log", "log"}, default="square"
        ``l(f(x), c)``: ``||softmax(f(x)) - e_c||^2``, ``-log(softmax(f(x))_c
        + 1e-8)``, or the cross-entropy (unbounded below with negative soft
        labels).

    Attributes
    ----------
    class_prior_ : ndarray of shape (n_classes,)
    bag_sizes_ : ndarray of shape (n_bags,)
        (Weighted) size ``k`` of every training bag.

    References
    ----------
    R. Busa-Fekete, H. Choi, T. Dick, C. Gentile, A. Munoz Medina. Easy
    learning from label proportions. NeurIPS 2023 (arXiv:2302.03115).

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="easyllp", method__loss="bounded_log")
    """

    _parameter_constraints = {"loss": [StrOptions({"log", "bounded_log", "square"})]}
    early_stopping_default = True

    def __init__(self, loss="square"):
        self.loss = loss

    def prepare(self, bags, random_state):
        """Bag sizes and prior; warn when the bags do not look random.

        The spread counts a bag's rows (Kish's effective size when weighted):
        the variance of its proportions falls with its rows, whatever the
        units of the weights.
        """
        super().prepare(bags, random_state)
        ratio, p_value = bag_spread(
            bags.props, _effective_sizes(bags), self.class_prior_
        )
        if ratio > _SPREAD_RATIO and p_value < _SPREAD_P_VALUE:
            warnings.warn(
                f"method='easyllp' assumes bags of random draws of the "
                f"population, but the bags' proportions vary {ratio:.1f} times "
                f"as much as random bags of the same sizes would (p = "
                f"{p_value:.1g}): bags grouped by a feature or by clustering "
                "bias its soft labels. Prefer method='vat' or 'dllp', which "
                "make no such assumption.",
                NonRandomBagsWarning,
                stacklevel=4,  # prepare <- _fit <- fit <- the caller
            )
        return self

    def get_loss(self, module, X, logits, bags, step, total_steps):
        logits = at_least_float32(logits)
        weights = bags.take(bags.weights)
        return easyllp_loss(
            bags.take(logits),
            bags.segments,
            bags.bag_props.to(logits.dtype),
            self.bag_tensor("bag_sizes_", logits, bags),
            self.bag_tensor("class_prior_", logits),
            None if weights is None else weights.to(logits.dtype),
            self.loss,
        )
