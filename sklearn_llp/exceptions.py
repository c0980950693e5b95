"""Warnings and errors of sklearn-llp."""

__all__ = [
    "BagLeakageWarning",
    "FitDivergedError",
    "IdentifiabilityWarning",
    "ModelResetWarning",
    "NonRandomBagsWarning",
]


class BagLeakageWarning(UserWarning):
    """Bags being scored were also trained on: the score is not held out.

    Raised by the bag scorers (:mod:`sklearn_llp.metrics`) when a fitted
    ``LLPClassifier`` (``train_bag_ids_``) is scored on bags it trained on.
    The usual cause is ``cv=5`` (or any splitter of rows) with ``y=bags``:
    for a classifier an integer ``cv`` is a ``StratifiedKFold`` over the bag
    ids, which puts part of every bag in every fold, so each test fold
    scores fragments of bags whose other rows were trained on. Use
    ``cv=BagKFold(5)`` (:class:`sklearn_llp.model_selection.BagKFold`),
    which keeps every bag whole in one fold.
    """


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


class NonRandomBagsWarning(UserWarning):
    """The bags' proportions vary far more than random bags' would.

    Raised by methods whose guarantee assumes bags drawn at random from the
    population (``method="easyllp"``: its soft labels are unbiased only for
    i.i.d. bags) when the bags look grouped by feature or cluster. See
    :func:`sklearn_llp.methods.functional.bag_spread`.
    """
