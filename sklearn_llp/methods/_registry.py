"""Method names of the estimators: one registry per task, a name in one only."""

from sklearn.base import clone

from ._auto import AutoMethod
from ._base import DLLP, LLPMethod
from ._easyllp import EasyLLP
from ._hybrid import Hybrid
from ._llpfc import LLPFC
from ._noisy import NoisyProportions
from ._pi import PiModel
from ._regression import BagLoss, InstanceLoss, InterpolatingLoss, RegressionMethod
from ._rot import ROT
from ._vat import VAT

_REGISTRIES = {
    "classification": {
        "auto": AutoMethod,
        "dllp": DLLP,
        "vat": VAT,
        "pi": PiModel,
        "rot": ROT,
        "hybrid": Hybrid,
        "llpfc": LLPFC,
        "easyllp": EasyLLP,
        "noisy": NoisyProportions,
    },
    "regression": {
        "bag": BagLoss,
        "instance": InstanceLoss,
        "interpolating": InterpolatingLoss,
    },
}
_ESTIMATORS = {"classification": "LLPClassifier", "regression": "LLPRegressor"}


def _task_of(method_class):
    return (
        "regression" if issubclass(method_class, RegressionMethod) else "classification"
    )


def register_method(name, method_class):
    """Make ``method=name`` build ``method_class`` in the estimator of its task.

    Examples
    --------
    >>> from sklearn_llp.methods import DLLP, register_method
    >>> register_method("bag", DLLP)  # a regression method's name
    Traceback (most recent call last):
    ValueError: method name 'bag' is taken by a regression method; choose another name.
    """
    if not (isinstance(method_class, type) and issubclass(method_class, LLPMethod)):
        raise TypeError("method_class must be a subclass of LLPMethod.")
    task = _task_of(method_class)
    (other,) = set(_REGISTRIES) - {task}
    if name in _REGISTRIES[other]:
        raise ValueError(
            f"method name {name!r} is taken by a {other} method; choose another name."
        )
    _REGISTRIES[task][name] = method_class


def available_methods(task="classification"):
    """Sorted method names of ``LLPClassifier``, or of ``LLPRegressor``.

    Examples
    --------
    >>> from sklearn_llp.methods import available_methods
    >>> available_methods("regression")
    ['bag', 'instance', 'interpolating']
    """
    if task not in _REGISTRIES:
        raise ValueError(f"task must be one of {tuple(_REGISTRIES)}; got {task!r}.")
    return sorted(_REGISTRIES[task])


def _method_class(method, task=None):
    """The class of ``method``; with a ``task``, refuse the other task's."""
    if isinstance(method, LLPMethod):
        method_class = type(method)
    else:
        found = [r[method] for r in _REGISTRIES.values() if method in r]
        if not isinstance(method, str) or not found:
            known = available_methods(task or "classification")
            kind = "RegressionMethod" if task == "regression" else "LLPMethod"
            raise ValueError(
                f"method={method!r} is not a known method; use one of {known} or an "
                f"{kind} instance."
            )
        method_class = found[0]
    if task is not None and _task_of(method_class) != task:
        raise ValueError(
            f"method={method!r} is a {_task_of(method_class)} method, not one "
            f"for {_ESTIMATORS[task]}; use one of {available_methods(task)}"
            f"{' or a RegressionMethod instance' if task == 'regression' else ''}."
        )
    return method_class


def method_params(method, task=None):
    """The hyperparameters ``method`` (a name or an object) is built with.

    Examples
    --------
    >>> from sklearn_llp.methods import method_params
    >>> method_params("interpolating")
    {'lam': 'auto'}
    """
    method_class = _method_class(method, task)
    built = method if isinstance(method, LLPMethod) else method_class()
    return built.get_params(deep=False)


def make_method(method, params=None, task=None):
    """A fresh, validated method from a name or an instance, and ``method__*`` params.

    Examples
    --------
    >>> from sklearn_llp.methods import make_method
    >>> make_method("vat", {"alpha": 0.1})
    VAT(alpha=0.1)
    """
    method_class = _method_class(method, task)
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
        return clone(method).set_params(**params).validate()
    return method_class(**params).validate()
