"""Warnings and errors of sklearn-llp."""

__all__ = [
    "BagLeakageWarning",
    "FewBagsWarning",
    "FitDivergedError",
    "IdentifiabilityWarning",
    "ModelResetWarning",
    "NonRandomBagsWarning",
]


class BagLeakageWarning(UserWarning):
    """Bags being scored were also trained on: the score is not held out.

    Usually ``cv=5`` with ``y=bags``, which splits every bag across folds;
    :class:`sklearn_llp.model_selection.BagKFold` keeps bags whole."""


class FitDivergedError(FloatingPointError):
    """The training loss became NaN or infinite: the fit diverged.

    The model then counts as not fitted."""


class FewBagsWarning(UserWarning):
    """Too few bags to hold 5 out: ``early_stopping="auto"`` stays off.

    The fit may overfit its bag loss (:ref:`regression_defaults`); keep
    ``max_epochs`` small, or pass ``early_stopping=False`` to silence it."""


class ModelResetWarning(UserWarning):
    """A parameter change (``module__*``, ``module``, ``compile``) re-initialised
    the trained network, as skorch does."""


class IdentifiabilityWarning(UserWarning):
    """The bags may not identify an instance-level classifier.

    See :func:`sklearn_llp.bags.check_identifiability`."""


class NonRandomBagsWarning(UserWarning):
    """The bags' proportions vary far more than random bags' would.

    For a method that assumes random bags; see
    :func:`~sklearn_llp.methods.functional.bag_spread`."""
