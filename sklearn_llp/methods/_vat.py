"""LLP-VAT: proportion loss plus virtual adversarial consistency."""

from numbers import Integral, Real

import torch
from sklearn.utils._param_validation import Interval, StrOptions

from ..modules._mlp import unwrapped
from ._base import _RAMP_CONSTRAINTS, ConsistencyMethod, perturbation_mode
from ._segments import kl_divergence_with_logits, l2_normalize

#: ``xi="auto"``: the finite-difference step is this fraction of the batch's
#: RMS row norm in standardised units (measured: :ref:`vat_xi`).
XI_SCALE = 3e-3


def _autocast_enabled(device_type):
    try:
        return torch.is_autocast_enabled(device_type)
    except TypeError:  # torch < 2.4 takes no device type
        if device_type == "cuda":
            return torch.is_autocast_enabled()
        return device_type == "cpu" and torch.is_autocast_cpu_enabled()


def _input_units(module):
    """``(mean, scale)`` of a module that standardises its input with tensors
    ``input_mean``/``input_scale`` (the default MLP), else ``(0, 1)``."""
    inner = unwrapped(module)
    if torch.is_tensor(getattr(inner, "input_scale", None)):
        return getattr(inner, "input_mean", 0.0), inner.input_scale
    return 0.0, 1.0


def vat_perturbation(module, X, target_logits, eps, xi="auto", n_power=1):
    """``argmax_{||r|| <= eps} KL(f(x) || f(x + r))`` per row (:ref:`vat_xi`),
    ``||r||`` in the module's standardised units (``r / input_scale``).

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import vat_perturbation
    >>> net, X = torch.nn.Linear(3, 2), torch.randn(5, 3)
    >>> r = vat_perturbation(net, X, net(X).detach(), eps=2.0)
    >>> torch.allclose(r.norm(dim=1), torch.full((5,), 2.0))
    True
    """
    mean, scale = _input_units(module)
    step = xi
    if xi == "auto":
        Z = (X.detach().float() - mean) / scale  # standardised units
        rms = Z.flatten(1).pow(2).sum(1).mean().sqrt()
        step = XI_SCALE * rms.clamp_min(torch.finfo(torch.float32).eps)
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
            logits = module(X.float() + step * scale * d)
            distance = kl_divergence_with_logits(reference, logits.double())
            (grad,) = torch.autograd.grad(distance, d)
            # A row whose softmax does not move at all keeps its direction.
            stuck = (grad.flatten(1) == 0).all(dim=1).view(-1, *([1] * (X.dim() - 1)))
            d = torch.where(stuck, d.detach(), l2_normalize(grad.detach().to(d.dtype)))
    return eps * scale * d


def vat_loss(module, X, target_logits, eps, xi="auto", n_power=1, reduction="mean"):
    """``KL(f(x) || f(x + r))`` for ``r`` of :func:`vat_perturbation`, or its mean.

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import vat_loss
    >>> net, X = torch.nn.Linear(3, 2), torch.randn(5, 3)
    >>> vat_loss(net, X, net(X).detach(), eps=1.0).item() >= 0
    True
    """
    with perturbation_mode(module):
        r_adv = vat_perturbation(module, X, target_logits, eps, xi, n_power)
        return kl_divergence_with_logits(
            target_logits, module(X + r_adv), reduction=reduction
        )


class VAT(ConsistencyMethod):
    """LLP-VAT (Tsai & Lin 2020): DLLP plus adversarial consistency (:ref:`llp_vat`).

    Parameters
    ----------
    alpha, rampup : float, default=0.05, 0.4
        Maximum weight of the consistency loss; share of the steps ramping it up.
    eps : float, default=1.0
        L2 radius of the perturbation, in the module's standardised units
        (the default MLP's; a module without ``input_scale``: input units).
    xi, n_power : float or "auto", int, default="auto", 1
        Finite-difference step and iterations of the power iteration.

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
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
