"""LLP-VAT: proportion loss plus virtual adversarial consistency."""

from numbers import Integral, Real

import torch
from sklearn.utils._param_validation import Interval, StrOptions

from ._base import _RAMP_CONSTRAINTS, ConsistencyMethod, perturbation_mode
from ._segments import kl_divergence_with_logits, l2_normalize

#: ``xi="auto"``: the finite-difference step is this fraction of the batch's
#: RMS row norm. Measured by ``benchmarks/studies/vat_xi.py`` against the exact
#: float64 Hessian-vector product on digits, MNIST ([0, 1] and standardised)
#: and 3072-d Gaussian inputs, untrained to confident MLPs: mean |cos| >=
#: 0.996 and 5th percentile >= 0.978 in every setting, where the paper's
#: xi = 1e-6 gives 0.32-0.85 (5th percentiles 0.03-0.20: rounding noise).
XI_SCALE = 3e-3


def _finite_difference_step(X, xi):
    if xi != "auto":
        return xi
    rms = X.detach().flatten(1).float().pow(2).sum(1).mean().sqrt()
    return XI_SCALE * rms.clamp_min(torch.finfo(torch.float32).eps)


def _autocast_enabled(device_type):
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4 takes no device type
        if device_type == "cuda":
            return torch.is_autocast_enabled()
        return device_type == "cpu" and torch.is_autocast_cpu_enabled()


def vat_perturbation(module, X, target_logits, eps, xi="auto", n_power=1):
    """Adversarial direction of radius ``eps`` found by power iteration.

    Approximates ``argmax_{||r|| <= eps} KL(f(x) || f(x + r))`` per instance
    (Miyato et al. 2018): start from a random unit direction ``d``, replace it
    by the normalised gradient of ``KL(f(x) || f(x + xi d))`` with respect to
    ``d`` ``n_power`` times, and scale to ``eps``. The gradient is ``xi`` times
    the Hessian-vector product ``H d`` up to ``O(xi^2)``; two measures keep
    it above float32 rounding:

    - the KL of the power iteration is computed from the logits cast to
      float64 (an ``n x k`` cast): in float32, the probability of a confident
      prediction moves by less than its rounding error;
    - under ``torch.autocast`` the power iteration runs in float32 (a finite
      difference of bfloat16 logits is noise), against float32 clean logits.

    Parameters
    ----------
    module : torch.nn.Module
    X : Tensor of shape (n, ...)
    target_logits : Tensor of shape (n, k)
        Logits of the clean input, without gradient.
    eps : float
        L2 radius of the perturbation of every instance.
    xi : float or "auto", default="auto"
        Finite-difference step of the power iteration. ``"auto"`` is
        :data:`XI_SCALE` (3e-3) times the RMS L2 norm of the batch's rows, so
        the step follows the input scale (standardised features, [0, 1] or
        raw 0-255 pixels alike). The paper's ``1e-6`` is below float32
        resolution: its direction is close to random.
    n_power : int, default=1
        Power iterations.

    Returns
    -------
    r_adv : Tensor of the shape of ``X``, without gradient
        Every instance's perturbation has L2 norm ``eps``.
    """
    step = _finite_difference_step(X, xi)
    d = l2_normalize(torch.randn_like(X))
    outer_autocast = _autocast_enabled(X.device.type)
    with torch.autocast(X.device.type, enabled=False):
        if outer_autocast or target_logits.dtype != torch.float32:
            with torch.no_grad():  # clean logits at the same precision
                reference = module(X.float()).double()
        else:
            reference = target_logits.double()
        for _ in range(n_power):
            d.requires_grad_(True)
            logits = module(X.float() + step * d)
            distance = kl_divergence_with_logits(reference, logits.double())
            (grad,) = torch.autograd.grad(distance, d)
            # A row whose softmax does not move at all keeps its direction.
            stuck = (grad.flatten(1) == 0).all(dim=1).view(-1, *([1] * (X.dim() - 1)))
            d = torch.where(stuck, d.detach(), l2_normalize(grad.detach().to(d.dtype)))
    return eps * d


def vat_loss(module, X, target_logits, eps, xi="auto", n_power=1, reduction="mean"):
    """``KL(f(x) || f(x + r_adv))`` with the clean prediction held fixed.

    ``reduction="mean"`` averages over instances, ``"none"`` returns one
    value per instance.
    """
    with perturbation_mode(module):
        r_adv = vat_perturbation(module, X, target_logits, eps, xi, n_power)
        return kl_divergence_with_logits(
            target_logits, module(X + r_adv), reduction=reduction
        )


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
    xi : float or "auto", default="auto"
        Finite-difference step of the power iteration; ``"auto"`` is 3e-3
        times the RMS row norm of the batch (see :func:`vat_perturbation`:
        the paper's 1e-6 is below float32 resolution).
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
    >>> clf = LLPClassifier(method="vat", method__alpha=0.1, method__eps=2.0)
    """

    _parameter_constraints = {
        **_RAMP_CONSTRAINTS,
        "eps": [Interval(Real, 0, None, closed="left")],
        "xi": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "n_power": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, alpha=0.05, eps=1.0, xi="auto", n_power=1, rampup=0.4):
        self.alpha = alpha
        self.eps = eps
        self.xi = xi
        self.n_power = n_power
        self.rampup = rampup

    def consistency_loss(self, module, X, target_logits):
        return vat_loss(
            module, X, target_logits, self.eps, self.xi, self.n_power, reduction="none"
        )
