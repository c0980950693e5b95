"""EasyLLP: an unbiased estimate of every instance's loss from its bag's proportions."""

import warnings

import numpy as np
import torch
from scipy.stats import chi2
from sklearn.utils._param_validation import StrOptions

from ..exceptions import NonRandomBagsWarning
from ._base import LLPMethod

#: ``loss="bounded_log"``: ``-log(p + eps)``, the reference code's form.
_BOUNDED_LOG_EPS = 1e-8


def _class_losses(logits, loss):
    """``l(f(x), c)`` for every row and class: (n, n_classes)."""
    if loss == "log":
        return -torch.log_softmax(logits, dim=1)
    if loss == "bounded_log":  # at most -log(eps): bounded below with y~ < 0
        return -torch.log(torch.softmax(logits, dim=1) + _BOUNDED_LOG_EPS)
    probs = torch.softmax(logits, dim=1)  # squared error to the one-hot e_c
    return (probs * probs).sum(1, keepdim=True) - 2 * probs + 1


def easyllp_loss(
    logits, segments, bag_props, bag_sizes, prior, weights=None, loss="log"
):
    """EasyLLP's debiased loss, averaged over the rows of a batch.

    An instance of a bag of ``k`` instances with proportions ``alpha`` gets
    the soft label ``y~ = k (alpha - p) + p`` (``p``: the class prior) and
    the loss ``sum_c y~_c l(f(x), c)`` (Busa-Fekete et al. 2023), with ``l``
    the cross-entropy ``-log softmax(f(x))_c``, its bounded form
    ``-log(softmax(f(x))_c + 1e-8)`` or the squared error
    ``||softmax(f(x)) - e_c||^2``. ``y~`` sums to 1 but may have negative
    entries or entries above 1, so the loss may be negative.

    With sample weights ``w``, ``k`` is ``W / w_i`` (``W``: the bag's total
    weight): the row's weighted soft label is ``w_i y~ = W (alpha - p) +
    w_i p``, and the loss is the weighted mean over rows. Multiplying all
    weights by a constant leaves it unchanged; a row of weight 0 drops out;
    a bag of one row gets its proportions (a one-hot label: the weighted
    cross-entropy).

    Parameters
    ----------
    logits : Tensor of shape (n, n_classes)
    segments : LongTensor of shape (n,)
        Bag, in ``[0, n_bags)``, of every row.
    bag_props : Tensor of shape (n_bags, n_classes)
    bag_sizes : Tensor of shape (n_bags,)
        Full (weighted) size of every bag, not the number of its rows in the
        batch.
    prior : Tensor of shape (n_classes,)
    weights : Tensor of shape (n,), default=None
    loss : {"log", "bounded_log", "square"}, default="log"
        The instance loss (see :class:`EasyLLP`, whose default is
        ``"square"``).

    Returns
    -------
    loss : scalar Tensor

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


#: Bags whose spread of proportions exceeds random bags' by this factor, at
#: a chi-square p-value below ``_SPREAD_P_VALUE``, are reported as not i.i.d.
_SPREAD_RATIO = 1.5
_SPREAD_P_VALUE = 1e-3


def bag_spread(props, sizes, prior=None):
    """How much more the bags' proportions vary than random bags' would.

    For bags of ``k_b`` rows drawn at random from a population with class
    rates ``p``, ``k_b (alpha_b,c - p_c)^2 / p_c`` summed over classes has
    expectation about ``C - 1`` per bag (a multinomial's chi-square
    statistic). The ratio of the observed sum over all bags to
    ``n_bags (C - 1)`` is about 1 for random bags (slightly less: drawing
    without replacement) and grows when bags group similar rows (K-means
    clusters, regions, feature bins). The p-value is that of the chi-square
    statistic with ``(n_bags - 1)(C - 1)`` degrees of freedom.

    Parameters
    ----------
    props : array-like of shape (n_bags, n_classes)
    sizes : array-like of shape (n_bags,)
        Rows (or total sample weight) of every bag.
    prior : array-like of shape (n_classes,), default=None
        Population class rates; None takes the size-weighted mean proportions.

    Returns
    -------
    ratio : float
        Observed over random-bag spread.
    p_value : float
        Probability of a spread at least this large for random bags.

    Examples
    --------
    >>> import numpy as np
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
    """EasyLLP: debiased instance loss from label proportions (Busa-Fekete et al.).

    Every instance ``x`` of a bag ``B`` of ``k`` instances with proportions
    ``alpha_B`` is trained on the soft label

        ``y~ = k (alpha_B - p) + p``,

    with ``p`` the class prior, through ``sum_c y~_c l(f(x), c)``, by
    default with the cross-entropy ``l(f(x), c) = -log softmax(f(x))_c``.
    When a bag is ``k`` independent draws of the population, the expected
    loss equals the instance-level loss with the true labels, for *any*
    network and any loss ``l`` (the paper's debiasing result, written there
    for two classes as ``y~ = k alpha(B) - (k - 1) p`` with ``y~ l(h(x), 1)
    + (1 - y~) l(h(x), 0)``; the per-class form here reduces to it for two
    classes, see :func:`easyllp_loss`).

    Details:

    - ``p`` is the proportion of each class among the training rows (the
      bags' proportions weighted by their (weighted) sizes; with overlapping
      bags, among the (bag, row) pairs), computed in :meth:`prepare` on the
      training bags.
    - ``k`` is the bag's **full** size, looked up through
      ``BagBatch.bag_index``, also when ``max_bag_size`` subsamples it. With
      sample weights it is ``W_B / w_i`` (see :func:`easyllp_loss`).
    - The mean is over the instances of a batch (each bag weighs by its
      number of rows there), as in the paper's empirical risk.
    - The soft labels sum to 1 but can be **negative** (a class rarer in the
      bag than in the population, ``alpha_c < p_c (k - 1) / k``) or above 1,
      increasingly so for larger bags (their size multiplies the deviation
      from the prior): **the loss of a batch can be negative**, and its
      variance grows with ``k`` (the paper's guarantees lose a factor ``k``
      against supervised learning).
    - **The default loss is bounded.** With the cross-entropy
      (``loss="log"``), a negative soft label makes the empirical loss
      unbounded below (a network that drives that class's probability to 0
      lowers it without limit): on digits K-means bags, where soft labels
      range from -13 to +114, 60 epochs reach 30.1 % test accuracy. The
      squared error (the default) and the reference code's bounded log
      ``-log(p + 1e-8)`` are bounded below; on the same bags they reach
      85.7 % and 86.4 % (mean of 3 seeds, MLP 256-256).
    - **Early stopping is on by default** (``early_stopping="auto"`` of the
      estimator, when at least 5 bags can be held out): a flexible network
      still memorises the soft labels as training goes on (on digits in
      random bags of 16 the top class of the soft label is the true one for
      24 % of the rows). There, 60 epochs without it give 71.1 % (square
      loss) and 59.9 % (log loss); with it, 88.1 % and 82.6 % (best epochs
      9-11).
    - **The bags should be random.** The estimate is unbiased only for bags
      of i.i.d. draws of the population. :meth:`prepare` warns
      (:class:`~sklearn_llp.exceptions.NonRandomBagsWarning`) when the
      proportions vary far more than random bags of the same sizes would
      (:func:`bag_spread`: ratio above 1.5 at p < 0.001), as for bags
      grouped by a feature or by K-means; other methods (``"vat"``,
      ``"dllp"``) make no such assumption.

    Parameters
    ----------
    loss : {"square", "bounded_log", "log"}, default="square"
        The instance loss ``l(f(x), c)`` being estimated (the paper's
        estimator applies to any loss): ``"square"`` the squared error
        ``||softmax(f(x)) - e_c||^2`` (an instance's loss is then
        ``||softmax(f(x)) - y~||^2 + 1 - ||y~||^2``, bounded below);
        ``"bounded_log"`` the reference code's ``-log(softmax(f(x))_c +
        1e-8)``; ``"log"`` the exact cross-entropy, unbounded below with
        negative soft labels (see above).

    Attributes
    ----------
    class_prior_ : ndarray of shape (n_classes,)
        Class prior ``p`` of the training bags.
    bag_sizes_ : ndarray of shape (n_bags,)
        (Weighted) size ``k`` of every training bag.

    References
    ----------
    R. Busa-Fekete, H. Choi, T. Dick, C. Gentile, A. Munoz Medina. Easy
    learning from label proportions. NeurIPS 2023 (arXiv:2302.03115).

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="easyllp")
    >>> from sklearn_llp.methods import EasyLLP
    >>> clf = LLPClassifier(method=EasyLLP())  # the same
    """

    _parameter_constraints = {"loss": [StrOptions({"log", "bounded_log", "square"})]}
    early_stopping_default = True

    def __init__(self, loss="square"):
        self.loss = loss

    def prepare(self, bags, random_state):
        """Bag sizes and prior (see :class:`LLPMethod`); warn when the bags
        do not look random (:func:`bag_spread`)."""
        super().prepare(bags, random_state)
        ratio, p_value = bag_spread(bags.props, self.bag_sizes_, self.class_prior_)
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
        # the bag sizes and prior of prepare(), kept on the device
        dtype = torch.promote_types(logits.dtype, torch.float32)  # not in half
        weights = bags.take(bags.weights)
        return easyllp_loss(
            bags.take(logits).to(dtype),
            bags.segments,
            bags.bag_props.to(dtype),
            self.bag_tensor("bag_sizes_", logits, bags),
            self.bag_tensor("class_prior_", logits),
            None if weights is None else weights.to(dtype),
            self.loss,
        )
