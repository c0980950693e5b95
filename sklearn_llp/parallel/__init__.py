"""Data-parallel training: one fit across processes or GPUs.

:class:`AcceleratedLLPClassifier` trains with Hugging Face Accelerate
(skorch's ``AccelerateMixin``): launch the script with
``accelerate launch --multi_gpu --num_processes N script.py`` and every
process trains on its own share of whole bags (``pip install
"sklearn-llp[parallel]"``).
"""

from ._accelerate import AcceleratedLLPClassifier

__all__ = ["AcceleratedLLPClassifier"]
