"""Make bags and proportion tables, and check that bags can identify a classifier."""

from ._base import warn_if_names_lost as warn_if_names_lost
from ._feature import FeatureBagGenerator
from ._identifiability import IdentifiabilityReport, check_identifiability
from ._identifiability import warn_if_unidentifiable as warn_if_unidentifiable
from ._kmeans import KMeansBagGenerator
from ._proportions import expand_proportions, label_proportions
from ._proportions import id_bags as id_bags
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
