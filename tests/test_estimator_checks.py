"""scikit-learn's common estimator checks.

In these checks ``y`` holds class labels (or targets) and ``props`` is not
passed, so the classifiers (and the regressor) run their supervised fallback
(every row its own bag), which is exactly ordinary supervised learning.
"""

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_llp import LLPClassifier, LLPRegressor
from sklearn_llp.linear import MeanMapClassifier

EXPECTED_FAILED_CHECKS = {
    "check_no_attributes_set_in_init": (
        "skorch's NeuralNet.__init__ sets history_, initialized_ and "
        "virtual_params_ (skorch design)."
    ),
    "check_do_not_raise_errors_in_init_or_set_params": (
        "skorch's set_params re-initialises the callbacks at once, so the "
        "nonsense value this check gives `callbacks` raises there instead of "
        "in fit (skorch design)."
    ),
    "check_sample_weight_equivalence_on_dense_data": (
        "Mini-batch training: repeating rows changes the batches and the number "
        "of optimizer steps, so the fit differs although the loss is the same "
        "(tests/test_sample_weight.py checks the loss and the bag means)."
    ),
    "check_sample_weight_equivalence_on_sparse_data": (
        "Mini-batch training: see check_sample_weight_equivalence_on_dense_data."
    ),
}


#: The regressor's loss on bag means is weight-equivalent, but its float32
#: outputs move in the last bits: the default MLP's input statistics (weighted
#: vs repeated rows) and a row's GEMM rounding by its place in the batch;
#: measured 8.1e-8 (weights) and 1.8e-7 (subsets), the checks ask for 1e-7.
ROUNDING = "float32 rounding: predictions agree to 2e-7, the check asks 1e-7."
REGRESSOR_FAILED_CHECKS = {
    **{k: v for k, v in EXPECTED_FAILED_CHECKS.items() if "weight" not in k},
    "check_sample_weight_equivalence_on_dense_data": ROUNDING,
    "check_sample_weight_equivalence_on_sparse_data": ROUNDING,
    "check_methods_subset_invariance": ROUNDING,
}


def _expected_failed_checks(estimator):
    if isinstance(estimator, MeanMapClassifier):
        return {}  # no skorch, no mini-batches: it passes every check
    if isinstance(estimator, LLPClassifier):
        return EXPECTED_FAILED_CHECKS
    return REGRESSOR_FAILED_CHECKS


@pytest.mark.estimator_checks
@parametrize_with_checks(
    [
        *(
            cls(max_epochs=8, batch_size=32, verbose=0, random_state=0)
            for cls in (LLPClassifier, LLPRegressor)
        ),
        MeanMapClassifier(),
    ],
    expected_failed_checks=_expected_failed_checks,
)
@pytest.mark.slow
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
