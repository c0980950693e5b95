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

    Raised by the bag scorers (:mod:`sklearn_llp.metrics`) for bags in
    ``train_bag_ids_``; usually ``cv=5`` with ``y=bags``, which splits every
    bag across folds. :class:`sklearn_llp.model_selection.BagKFold` keeps
    bags whole.
    """


class FitDivergedError(FloatingPointError):
    """The training loss became NaN or infinite: the fit diverged.

    Raised by ``fit`` at the first non-finite batch loss, naming the epoch,
    the batch and likely causes; the model then counts as not fitted.
    """


class FewBagsWarning(UserWarning):
    """Too few bags to hold 5 out: ``early_stopping="auto"`` stays off.

    Under 50 bags at ``validation_fraction`` 0.1 a fit does not judge its
    epochs (5 held-out bags choose them too noisily:
    :ref:`regression_defaults`) and may overfit its bag loss; keep
    ``max_epochs`` small, or pass ``early_stopping=False`` to silence it.
    """


class ModelResetWarning(UserWarning):
    """A parameter change re-initialised the trained network.

    ``set_params(module__...)`` (or ``module=``, ``compile=``) on a fitted
    estimator builds a new, untrained network, as skorch does.
    """


class IdentifiabilityWarning(UserWarning):
    """The bags may not identify an instance-level classifier.

    Too few bags, too little variation or a low-rank proportion matrix:
    many classifiers then match every bag equally well. See
    :func:`sklearn_llp.bags.check_identifiability`.
    """


class NonRandomBagsWarning(UserWarning):
    """The bags' proportions vary far more than random bags' would.

    Raised by methods that assume random bags (``method="easyllp"``) when
    the bags look grouped; see :func:`sklearn_llp.methods.functional.bag_spread`.
    """
