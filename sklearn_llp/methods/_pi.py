"""The Pi-model: proportion loss plus Gaussian-noise consistency."""

from numbers import Real

import torch
import torch.nn.functional as F
from sklearn.utils._param_validation import Interval

from ._base import _RAMP_CONSTRAINTS, ConsistencyMethod, perturbation_mode
from ._vat import _input_units


def pi_loss(module, X, target_logits, noise_std, reduction="mean"):
    """Squared error of the probabilities of noisy ``X`` against ``target_logits``,
    the noise in the module's standardised units (times ``input_scale``).

    Examples
    --------
    >>> import torch
    >>> from sklearn_llp.methods.functional import pi_loss
    >>> net, X = torch.nn.Linear(3, 2), torch.randn(4, 3)
    >>> pi_loss(net, X, net(X).detach(), noise_std=0.0).item()
    0.0
    """
    with perturbation_mode(module):
        noise = noise_std * _input_units(module)[1] * torch.randn_like(X)
        noisy_logits = module(X + noise)
    target = F.softmax(target_logits, dim=1)
    per_row = ((F.softmax(noisy_logits, dim=1) - target) ** 2).sum(1)
    return per_row.mean() if reduction == "mean" else per_row


class PiModel(ConsistencyMethod):
    """DLLP plus Pi-model consistency (Laine & Aila 2017): Gaussian input noise.

    Parameters
    ----------
    alpha, rampup : float, default=1.0, 0.4
        Maximum weight of the consistency loss; share of the steps ramping it up.
    noise_std : float, default=0.15
        Standard deviation of the input noise, in the module's standardised
        units (as VAT's ``eps``).

    Examples
    --------
    >>> from sklearn_llp import LLPClassifier
    >>> clf = LLPClassifier(method="pi", method__noise_std=0.3)
    """

    _parameter_constraints = {
        **_RAMP_CONSTRAINTS,
        "noise_std": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, alpha=1.0, noise_std=0.15, rampup=0.4):
        self.alpha = alpha
        self.noise_std = noise_std
        self.rampup = rampup

    def consistency_loss(self, module, X, target_logits):
        return pi_loss(module, X, target_logits, self.noise_std, reduction="none")
