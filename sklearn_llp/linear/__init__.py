"""Linear LLP estimators that learn from bag means alone (no PyTorch).

:class:`MeanMapClassifier` estimates the class-conditional means from the
bags' feature means and proportions by least squares, and plugs them into the
sufficient statistics of a (multinomial) logistic regression: one pass over
the data for the bag means, then an L-BFGS fit.
"""

from ._mean_map import MeanMapClassifier

__all__ = ["MeanMapClassifier"]
