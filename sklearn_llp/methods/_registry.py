"""Method names known to ``LLPClassifier(method=...)``."""

import warnings

from ._base import DLLP, LLPMethod
from ._pi import PiModel
from ._rot import ROT
from ._vat import VAT

_METHODS = {"dllp": DLLP, "vat": VAT, "pi": PiModel, "rot": ROT}


def register_method(name, method_class):
    """Make ``LLPClassifier(method=name)`` build ``method_class``.

    Parameters
    ----------
    name : str
        The name users pass as ``method``.
    method_class : type
        A subclass of :class:`LLPMethod`. The classifier's method
        hyperparameters (``alpha``, ``eps``, ...) that are not None and that
        ``method_class.__init__`` accepts are passed to it.
    """
    if not (isinstance(method_class, type) and issubclass(method_class, LLPMethod)):
        raise TypeError("method_class must be a subclass of LLPMethod.")
    _METHODS[name] = method_class


def available_methods():
    """Sorted names accepted by ``LLPClassifier(method=...)``."""
    return sorted(_METHODS)


def make_method(method, **hyperparams):
    """Resolve ``method`` (a name or an :class:`LLPMethod`) to an instance.

    A name builds its registered class with those ``hyperparams`` that are not
    None and that the class accepts; an instance is used as it is.
    """
    given = {k: v for k, v in hyperparams.items() if v is not None}
    if isinstance(method, LLPMethod):
        if given:
            warnings.warn(
                f"{sorted(given)} ignored: a method object carries its own "
                "hyperparameters; set them on the object.",
                UserWarning,
                stacklevel=3,
            )
        return method
    if isinstance(method, str) and method in _METHODS:
        method_class = _METHODS[method]
        accepted = method_class._get_param_names()
        unused = sorted(set(given) - set(accepted))
        if unused:
            warnings.warn(
                f"{unused} ignored: method={method!r} does not use them.",
                UserWarning,
                stacklevel=3,
            )
        return method_class(**{k: v for k, v in given.items() if k in accepted})
    raise ValueError(
        f"method={method!r} is not a known method; use one of "
        f"{available_methods()} or an LLPMethod instance."
    )
