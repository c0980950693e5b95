"""sklearn-llp: Learning from Label Proportions for scikit-learn.

Train an instance-level classifier from bags of instances labelled only by
the class proportions of each bag: ``LLPClassifier().fit(X, bags, props)``;
or a regressor from the mean target of each bag:
``LLPRegressor().fit(X, bags, targets)``.

Subpackages
-----------
bags
    Bag generators (uniform, K-means, by feature values) and proportion tables.
datasets
    UCI Adult (census income), bundled for offline use.
exceptions
    The warnings and errors of the package.
linear
    Mean Map, a fast linear estimator from bag means (no PyTorch).
methods
    The training losses: DLLP, LLP-VAT, Pi-model, ROT, LLPFC, EasyLLP, the
    noise-aware loss for privacy-protected proportions, and the interface to
    add one.
metrics
    Bag-level errors (hard/soft L1 and KL) and scorers for model selection.
model_selection
    Splitters that keep every bag whole.
modules
    PyTorch networks (the default MLP).
plotting
    Bag-size histograms and bag-level calibration (needs matplotlib).
utils
    The validated bag object (``Bags``) and its validator (``check_bags``).
"""

from . import (
    bags,
    core,
    datasets,
    exceptions,
    linear,
    methods,
    metrics,
    model_selection,
    modules,
    neural,
    plotting,
    privacy,
)
from .neural import LLPClassifier, LLPRegressor

__version__ = "0.1.0"

__all__ = [
    "LLPClassifier",
    "LLPRegressor",
    "bags",
    "core",
    "datasets",
    "exceptions",
    "linear",
    "methods",
    "metrics",
    "model_selection",
    "modules",
    "neural",
    "plotting",
    "privacy",
    "__version__",
]
