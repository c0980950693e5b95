"""Data-parallel training across processes or GPUs with Hugging Face Accelerate
(``pip install "sklearn-llp[parallel]"``; :ref:`gpu_scaling`)."""

from ._accelerate import AcceleratedLLPClassifier

__all__ = ["AcceleratedLLPClassifier"]
