"""Differentially private releases of bag proportions and bag means.

:func:`dp_proportions` and :func:`dp_bag_means` release what an LLP learner
needs with calibrated noise; :func:`noise_variance` and
:func:`noise_aware_bag_weights` let a learner account for that noise.
"""

from ._release import (
    NOISE_NORMS as NOISE_NORMS,
)
from ._release import (
    dp_bag_means,
    dp_noise_scale,
    dp_proportions,
    noise_aware_bag_weights,
    noise_variance,
    project_to_simplex,
    released_rows,
)

__all__ = [
    "dp_bag_means",
    "dp_noise_scale",
    "dp_proportions",
    "noise_aware_bag_weights",
    "noise_variance",
    "project_to_simplex",
    "released_rows",
]
