"""sklearn-llp: Learning from Label Proportions for scikit-learn.

Train an instance-level classifier from bags of instances labelled only by
the class proportions of each bag: ``LLPClassifier().fit(X, bags, props)``.
"""

from ._classifier import LLPClassifier

__version__ = "0.1.0"

__all__ = ["LLPClassifier", "__version__"]
