"""The network estimators: skorch's ``NeuralNet`` trained on whole bags.

:class:`LLPNet` holds what every network estimator shares (methods as
components, whole-bag batches, held-out bags, device, threads and seeds);
:class:`LLPClassifier` and :class:`LLPRegressor` add what is theirs.
"""

from ._classifier import LLPClassifier as LLPClassifier
from ._data import BagBatchSampler as BagBatchSampler
from ._data import BagDataset as BagDataset
from ._net import LLPNet
from ._regressor import LLPRegressor as LLPRegressor

__all__ = ["LLPNet"]  # the heads are sklearn_llp.LLPClassifier and LLPRegressor
