"""sklearn-llp: Learning from Label Proportions for scikit-learn.

Train an instance-level classifier from bags of instances labelled only by
the class proportions of each bag: ``LLPClassifier().fit(X, bags, props)``;
or a regressor from the mean target of each bag:
``LLPRegressor().fit(X, bags, targets)``.

Subpackages: ``bags`` (generators, proportion tables, identifiability),
``core`` (``Bags``, ``check_bags``), ``datasets`` (UCI Adult), ``exceptions``,
``linear`` (Mean Map), ``methods`` (the training losses), ``metrics`` (bag
errors, scorers), ``model_selection`` (splitters keeping bags whole),
``modules`` (networks), ``neural``, ``plotting`` (matplotlib),
``privacy`` (simulated differentially private releases).
"""

import importlib

#: Imported on first use (PEP 562): ``import sklearn_llp`` loads no torch,
#: and ``sklearn_llp.linear`` (Mean Map) never needs it.
_SUBPACKAGES = """bags core datasets exceptions linear methods metrics
model_selection modules neural plotting privacy""".split()
__version__ = "0.1.0"
__all__ = ["LLPClassifier", "LLPRegressor", *_SUBPACKAGES, "__version__"]


def __getattr__(name):
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    if name in ("LLPClassifier", "LLPRegressor"):
        return getattr(importlib.import_module(".neural", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__})
