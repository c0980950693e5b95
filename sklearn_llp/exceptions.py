"""Warnings and errors of sklearn-llp."""

__all__ = ["FitDivergedError", "IdentifiabilityWarning", "ModelResetWarning"]


class FitDivergedError(FloatingPointError):
    """The training loss became NaN or infinite: the fit diverged.

    Raised by ``LLPClassifier.fit`` at the first batch whose loss is not
    finite, naming the epoch, the batch and the likely causes. The weights
    are then unusable and the model counts as not fitted.
    """


class ModelResetWarning(UserWarning):
    """A parameter change re-initialised the trained network.

    ``set_params(module__...)`` (or ``module=``, ``compile=``) on a fitted
    ``LLPClassifier`` builds a new, untrained network, as skorch does; the
    model then counts as not fitted until the next ``fit``.
    """


class IdentifiabilityWarning(UserWarning):
    """The bags may not identify an instance-level classifier.

    Few bags for the number of classes and features, proportions that
    barely vary from bag to bag, or a bag-proportion matrix of low rank:
    many different classifiers then match every bag's proportions equally
    well, and fits from different seeds can disagree on instances although
    all of them reproduce the bags. See
    :func:`sklearn_llp.bags.check_identifiability`.
    """
