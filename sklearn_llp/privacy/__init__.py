"""Simulated differentially private releases, and weights for their noise."""

from ._mechanisms import NOISE_NORMS as NOISE_NORMS
from ._mechanisms import dp_noise_scale, noise_variance
from ._release import dp_bag_means, dp_proportions, released_rows
from ._simplex import project_to_simplex
from ._weights import noise_aware_bag_weights

__all__ = [
    "dp_bag_means",
    "dp_noise_scale",
    "dp_proportions",
    "noise_aware_bag_weights",
    "noise_variance",
    "project_to_simplex",
    "released_rows",
]
