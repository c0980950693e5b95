"""What ``help()`` shows first: the example, then the key parameters."""

import pydoc

import pytest

from sklearn_llp import LLPClassifier, LLPRegressor

KEY_PARAMETERS = ("method", "max_epochs", "lr", "batch_size", "random_state")


@pytest.mark.parametrize("estimator", [LLPClassifier, LLPRegressor])
def test_help_opens_with_the_example_and_the_key_parameters(estimator):
    lines = pydoc.render_doc(estimator, renderer=pydoc.plaintext).splitlines()
    text = [line.strip(" |") for line in lines]
    examples = text.index("Examples")
    parameters = text.index("Parameters")
    # the class's own docstring, not the 600 lines inherited from skorch
    assert examples < parameters < 60, (examples, parameters)
    names = [line.split(" :")[0] for line in text[parameters:] if " : " in line]
    assert tuple(names[: len(KEY_PARAMETERS)]) == KEY_PARAMETERS, names[:8]
