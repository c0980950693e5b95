"""Linear LLP estimators that learn from bag means alone (no PyTorch):
:class:`MeanMapClassifier`, logistic regression on an estimated mean operator."""

from ._mean_map import MeanMapClassifier

__all__ = ["MeanMapClassifier"]
