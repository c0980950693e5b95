"""LLP-VAT: proportion loss plus virtual adversarial consistency."""

import torch

from ._base import ConsistencyMethod, perturbation_mode
from ._losses import kl_divergence_with_logits, l2_normalize


def vat_perturbation(module, X, target_logits, eps, xi=1e-6, n_power=1):
    """Adversarial direction of radius ``eps`` found by power iteration.

    Approximates ``argmax_{||r|| <= eps} KL(f(x) || f(x + r))`` per instance
    (Miyato et al. 2018): start from a random unit direction ``d``, replace it
    by the normalised gradient of ``KL(f(x) || f(x + xi d))`` with respect to
    ``d`` ``n_power`` times, and scale to ``eps``.

    Parameters
    ----------
    module : torch.nn.Module
    X : Tensor of shape (n, ...)
    target_logits : Tensor of shape (n, k)
        Logits of the clean input, without gradient.
    eps : float
        L2 radius of the perturbation of every instance.
    xi : float, default=1e-6
        Finite-difference step of the power iteration.
    n_power : int, default=1
        Power iterations.

    Returns
    -------
    r_adv : Tensor of the shape of ``X``, without gradient
        Every instance's perturbation has L2 norm ``eps``.
    """
    d = l2_normalize(torch.randn_like(X))
    for _ in range(n_power):
        d.requires_grad_(True)
        distance = kl_divergence_with_logits(target_logits, module(X + xi * d))
        (grad,) = torch.autograd.grad(distance, d)
        # In float32 a step of xi can leave a confident softmax bit-identical,
        # giving an all-zero gradient; such rows keep their current direction.
        stuck = (grad.flatten(1) == 0).all(dim=1).view(-1, *([1] * (X.dim() - 1)))
        d = torch.where(stuck, d.detach(), l2_normalize(grad.detach()))
    return eps * d


def vat_loss(module, X, target_logits, eps, xi=1e-6, n_power=1):
    """``mean KL(f(x) || f(x + r_adv))`` with the clean prediction held fixed."""
    with perturbation_mode(module):
        r_adv = vat_perturbation(module, X, target_logits, eps, xi, n_power)
        return kl_divergence_with_logits(target_logits, module(X + r_adv))


class VAT(ConsistencyMethod):
    """LLP-VAT (Tsai & Lin 2020): DLLP plus virtual adversarial training.

    The loss of a batch is ``L_prop + w(t) * L_vat`` where ``L_prop`` is the
    proportion loss of :class:`DLLP`, ``L_vat`` the mean over instances of
    ``KL(f(x) || f(x + r_adv))`` with ``f(x)`` held fixed and ``r_adv`` the
    adversarial perturbation of L2 norm ``eps`` found by ``n_power`` power
    iterations with step ``xi``, and ``w(t) = alpha * exp(-5 (1 - t/T)^2)``
    ramps up over the first ``T = rampup * total_steps`` optimizer steps.

    The perturbed passes run without dropout and without updating BatchNorm
    running statistics (see :func:`perturbation_mode`): dropout noise would
    otherwise count as inconsistency, and the loss of a smooth model would not
    vanish as ``eps`` goes to 0.

    Parameters
    ----------
    alpha : float, default=0.05
        Maximum weight of the consistency loss (the paper tries 0.01-0.5).
    eps : float, default=1.0
        L2 radius of the adversarial perturbation, in input units (the paper
        uses 1 for SVHN and 6 for CIFAR images).
    xi : float, default=1e-6
        Finite-difference step of the power iteration.
    n_power : int, default=1
        Power iterations.
    rampup : float, default=0.4
        Fraction of the planned optimizer steps over which the weight ramps
        up; 0 disables the ramp-up.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> from sklearn_llp.methods import VAT
    >>> clf = LLPClassifier(method=VAT(alpha=0.1, eps=2.0))
    """

    def __init__(self, alpha=0.05, eps=1.0, xi=1e-6, n_power=1, rampup=0.4):
        self.alpha = alpha
        self.eps = eps
        self.xi = xi
        self.n_power = n_power
        self.rampup = rampup

    def consistency_loss(self, module, X, target_logits):
        return vat_loss(module, X, target_logits, self.eps, self.xi, self.n_power)
