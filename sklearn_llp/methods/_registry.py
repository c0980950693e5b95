"""Method names known to ``LLPClassifier(method=...)`` and building a method."""

from sklearn.base import clone

from ._base import DLLP, LLPMethod
from ._easyllp import EasyLLP
from ._llpfc import LLPFC
from ._noisy import NoisyProportions
from ._pi import PiModel
from ._rot import ROT
from ._vat import VAT

_METHODS = {
    "dllp": DLLP,
    "vat": VAT,
    "pi": PiModel,
    "rot": ROT,
    "llpfc": LLPFC,
    "easyllp": EasyLLP,
    "noisy": NoisyProportions,
}


def register_method(name, method_class):
    """Make ``LLPClassifier(method=name)`` build ``method_class``.

    Parameters
    ----------
    name : str
        The name users pass as ``method``.
    method_class : type
        A subclass of :class:`LLPMethod`; ``method__<name>`` parameters of the
        classifier are passed to its ``__init__``.
    """
    if not (isinstance(method_class, type) and issubclass(method_class, LLPMethod)):
        raise TypeError("method_class must be a subclass of LLPMethod.")
    _METHODS[name] = method_class


def available_methods():
    """Sorted names accepted by ``LLPClassifier(method=...)``."""
    return sorted(_METHODS)


def _method_class(method):
    if isinstance(method, LLPMethod):
        return type(method)
    if isinstance(method, str) and method in _METHODS:
        return _METHODS[method]
    raise ValueError(
        f"method={method!r} is not a known method; use one of "
        f"{available_methods()} or an LLPMethod instance."
    )


def method_params(method):
    """The hyperparameters ``method`` (a name or an object) is built with."""
    if isinstance(method, LLPMethod):
        return method.get_params(deep=False)
    return _method_class(method)().get_params(deep=False)


def make_method(method, params=None):
    """A fresh, validated method from a name or an object and overrides.

    Parameters
    ----------
    method : str or LLPMethod
        A registered name (see :func:`available_methods`) or an instance,
        which is cloned (the object passed is never modified).
    params : dict, default=None
        Hyperparameters that override the method's own (the classifier's
        ``method__*`` parameters, without the prefix).

    Returns
    -------
    method : LLPMethod
        A new instance, its hyperparameters checked against its
        ``_parameter_constraints``.
    """
    method_class = _method_class(method)
    params = dict(params or {})
    accepted = method_class._get_param_names()
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"{['method__' + name for name in unknown]} are not hyperparameters of "
            f"{method_class.__name__}; it takes "
            f"{['method__' + name for name in accepted] or 'none'}."
        )
    if isinstance(method, LLPMethod):
        built = clone(method).set_params(**params)
    else:
        built = method_class(**params)
    return built.validate()
