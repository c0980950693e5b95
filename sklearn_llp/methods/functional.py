"""The tensor operations of the methods: deterministic segment reductions, losses."""

from ._base import perturbation_mode
from ._easyllp import bag_spread, easyllp_loss
from ._hybrid import confident_pseudo_labels
from ._llpfc import forward_correction_loss, llpfc_transition_matrices
from ._noisy import noisy_count_loss, noisy_proportion_loss, noisy_proportion_weights
from ._pi import pi_loss
from ._regression import interpolating_loss, regression_losses
from ._rot import pseudo_label_loss, sinkhorn_pseudo_labels
from ._segments import attach_plan as attach_plan
from ._segments import (
    gather_rows,
    kl_divergence_with_logits,
    l2_normalize,
    proportion_loss,
    segment_mean,
    segment_sum,
    weighted_mean,
)
from ._vat import vat_loss, vat_perturbation

__all__ = [
    "bag_spread",
    "confident_pseudo_labels",
    "easyllp_loss",
    "forward_correction_loss",
    "gather_rows",
    "interpolating_loss",
    "kl_divergence_with_logits",
    "l2_normalize",
    "llpfc_transition_matrices",
    "noisy_count_loss",
    "noisy_proportion_loss",
    "noisy_proportion_weights",
    "perturbation_mode",
    "pi_loss",
    "proportion_loss",
    "pseudo_label_loss",
    "regression_losses",
    "segment_mean",
    "segment_sum",
    "sinkhorn_pseudo_labels",
    "vat_loss",
    "vat_perturbation",
    "weighted_mean",
]
