"""EasyLLP: an unbiased estimate of every instance's loss from its bag's proportions."""

import torch
from sklearn.utils._param_validation import StrOptions

from ._base import LLPMethod


def _class_losses(logits, loss):
    """``l(f(x), c)`` for every row and class: (n, n_classes)."""
    if loss == "log":
        return -torch.log_softmax(logits, dim=1)
    probs = torch.softmax(logits, dim=1)  # squared error to the one-hot e_c
    return (probs * probs).sum(1, keepdim=True) - 2 * probs + 1


def easyllp_loss(
    logits, segments, bag_props, bag_sizes, prior, weights=None, loss="log"
):
    """EasyLLP's debiased loss, averaged over the rows of a batch.

    An instance of a bag of ``k`` instances with proportions ``alpha`` gets
    the soft label ``y~ = k (alpha - p) + p`` (``p``: the class prior) and
    the loss ``sum_c y~_c l(f(x), c)`` (Busa-Fekete et al. 2023), with ``l``
    the cross-entropy ``-log softmax(f(x))_c`` or the squared error
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
    loss : {"log", "square"}, default="log"

    Returns
    -------
    loss : scalar Tensor

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods import easyllp_loss
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
      against supervised learning). With the cross-entropy, a negative
      soft label makes the empirical loss unbounded below (a network that
      drives that class's probability to 0 lowers it without limit), so a
      flexible network overfits the soft labels as training goes on: on
      digits in bags of 16 (MLP 256-256) test accuracy peaks near 10 epochs
      (0.83) and falls to 0.76 after 20 and 0.55 after 100 (DLLP: 0.95,
      0.97, 0.97). Train briefly, select the number of epochs on held-out
      bags, or use ``loss="square"``.

    Parameters
    ----------
    loss : {"log", "square"}, default="log"
        The instance loss ``l(f(x), c)`` being estimated: ``"log"`` the
        cross-entropy; ``"square"`` the squared error ``||softmax(f(x)) -
        e_c||^2``. The paper's estimator applies to any loss; with the
        squared error an instance's loss is ``||softmax(f(x)) - y~||^2 + 1 -
        ||y~||^2``, bounded below, which behaves better (digits in bags of
        16: 0.88 after 10 epochs, 0.84 after 20, 0.59 after 100).

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

    _parameter_constraints = {"loss": [StrOptions({"log", "square"})]}

    def __init__(self, loss="log"):
        self.loss = loss

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
