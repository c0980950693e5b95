"""Method names known to ``LLPClassifier(method=...)`` and
``LLPRegressor(method=...)``, and building a method.

Two registries, one per task: the classification methods learn label
proportions, the regression methods (subclasses of
:class:`~sklearn_llp.methods.RegressionMethod`) bag means. A name belongs to
one task only.
"""

from sklearn.base import clone

from ._base import DLLP, LLPMethod
from ._easyllp import EasyLLP
from ._llpfc import LLPFC
from ._noisy import NoisyProportions
from ._pi import PiModel
from ._regression import BagLoss, InstanceLoss, InterpolatingLoss, RegressionMethod
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

_REGRESSION_METHODS = {
    "bag": BagLoss,
    "instance": InstanceLoss,
    "interpolating": InterpolatingLoss,
}

_TASKS = ("classification", "regression")


def _registry(task):
    if task not in _TASKS:
        raise ValueError(f"task must be one of {_TASKS}; got {task!r}.")
    return _REGRESSION_METHODS if task == "regression" else _METHODS


def _task_of(method_class):
    if issubclass(method_class, RegressionMethod):
        return "regression"
    return "classification"


def register_method(name, method_class):
    """Make ``LLPClassifier(method=name)`` build ``method_class``.

    A subclass of :class:`~sklearn_llp.methods.RegressionMethod` is
    registered for ``LLPRegressor(method=name)`` instead.

    Parameters
    ----------
    name : str
        The name users pass as ``method``; a name of the other task's
        registry is refused.
    method_class : type
        A subclass of :class:`LLPMethod`; ``method__<name>`` parameters of the
        estimator are passed to its ``__init__``.
    """
    if not (isinstance(method_class, type) and issubclass(method_class, LLPMethod)):
        raise TypeError("method_class must be a subclass of LLPMethod.")
    task = _task_of(method_class)
    other = "classification" if task == "regression" else "regression"
    if name in _registry(other):
        raise ValueError(
            f"method name {name!r} is taken by a {other} method; choose another name."
        )
    _registry(task)[name] = method_class


def available_methods(task="classification"):
    """Sorted names accepted by ``LLPClassifier(method=...)``, or with
    ``task="regression"`` by ``LLPRegressor(method=...)``."""
    return sorted(_registry(task))


def _method_class(method, task=None):
    """The class of ``method``; with a ``task``, refuse the other task's."""
    if isinstance(method, LLPMethod):
        method_class = type(method)
    elif isinstance(method, str) and any(method in _registry(t) for t in _TASKS):
        method_class = _METHODS.get(method) or _REGRESSION_METHODS[method]
    else:
        known = available_methods(task or "classification")
        raise ValueError(
            f"method={method!r} is not a known method; use one of {known} or an "
            f"{'RegressionMethod' if task == 'regression' else 'LLPMethod'} "
            "instance."
        )
    if task is not None and _task_of(method_class) != task:
        estimator = "LLPRegressor" if task == "regression" else "LLPClassifier"
        raise ValueError(
            f"method={method!r} is a {_task_of(method_class)} method, not one "
            f"for {estimator}; use one of {available_methods(task)}"
            f"{' or a RegressionMethod instance' if task == 'regression' else ''}."
        )
    return method_class


def method_params(method, task=None):
    """The hyperparameters ``method`` (a name or an object) is built with.

    ``task`` ("classification" or "regression") refuses a method of the
    other task; None looks the name up in both registries.
    """
    if isinstance(method, LLPMethod):
        _method_class(method, task)
        return method.get_params(deep=False)
    return _method_class(method, task)().get_params(deep=False)


def make_method(method, params=None, task=None):
    """A fresh, validated method from a name or an object and overrides.

    Parameters
    ----------
    method : str or LLPMethod
        A registered name (see :func:`available_methods`) or an instance,
        which is cloned (the object passed is never modified).
    params : dict, default=None
        Hyperparameters that override the method's own (the classifier's
        ``method__*`` parameters, without the prefix).
    task : {"classification", "regression"}, default=None
        Refuse a method of the other task (a ``ValueError`` naming the
        estimator's methods); None accepts both.

    Returns
    -------
    method : LLPMethod
        A new instance, its hyperparameters checked against its
        ``_parameter_constraints``.
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
        built = clone(method).set_params(**params)
    else:
        built = method_class(**params)
    return built.validate()
