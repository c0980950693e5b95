"""PyTorch modules usable as ``LLPClassifier(module=...)``."""

from ._mlp import MLP

__all__ = ["MLP"]
