"""Make bags from instances, and label proportions from labelled bags.

The generators turn a plain data set into an LLP problem: each returns one
bag id per row (``fit_transform``), or bag ids and sample-aligned label
proportions at once (``make_bags``) for simulation studies. The bag id
``-1`` marks a row that belongs to no bag.
"""

from ._feature import FeatureBagGenerator
from ._identifiability import IdentifiabilityReport, check_identifiability
from ._identifiability import warn_if_unidentifiable as warn_if_unidentifiable
from ._kmeans import KMeansBagGenerator
from ._proportions import expand_proportions, label_proportions
from ._uniform import UniformBagGenerator

__all__ = [
    "FeatureBagGenerator",
    "IdentifiabilityReport",
    "KMeansBagGenerator",
    "UniformBagGenerator",
    "check_identifiability",
    "expand_proportions",
    "label_proportions",
]
