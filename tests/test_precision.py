"""Mixed precision: half-precision passes, float32 losses, still learning."""

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import UniformBagGenerator
from sklearn_llp.methods.functional import proportion_loss


def test_the_proportion_loss_is_float32_for_half_logits():
    logits = torch.randn(8, 3).to(torch.float16)
    segments = torch.tensor([0] * 4 + [1] * 4)
    props = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    loss = proportion_loss(logits, segments, props)
    assert loss.dtype == torch.float32 and torch.isfinite(loss)
    # a class predicted nowhere still costs a finite loss (1e-8 is 0 in half)
    hard = torch.tensor([[30.0, -30.0, -30.0]] * 8, dtype=torch.float16)
    assert torch.isfinite(proportion_loss(hard, segments, props))
    expected = proportion_loss(logits.float(), segments, props)
    assert loss.item() == pytest.approx(expected.item(), rel=1e-6)


@pytest.mark.parametrize("precision", ["bfloat16", "float16"])
def test_only_float16_fits_scale_the_gradients(small_bags, precision):
    # (float32 weights and outputs for every network: tests/test_conformance.py)
    X, bags, props, _ = small_bags
    params = dict(module__hidden_sizes=(8,), max_epochs=2, verbose=0, random_state=0)
    clf = LLPClassifier(method="vat", precision=precision, device="cpu", **params)
    clf.fit(X, bags, props)
    assert np.isfinite(clf.history[:, "train_loss"]).all()
    assert hasattr(clf, "grad_scaler_") == (precision == "float16")


@pytest.mark.slow
def test_bfloat16_learns_digits_in_bags_of_16():
    X, y = load_digits(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    bags, props = UniformBagGenerator(16, random_state=0).make_bags(X, y)
    keep = bags >= 0
    params = dict(max_epochs=40, verbose=0, random_state=0, device="cpu")
    clf = LLPClassifier(method="dllp", precision="bfloat16", **params)
    clf.fit(X[keep], bags[keep], props[keep])
    accuracy = np.mean(clf.predict(X) == y)
    assert accuracy >= 0.93, accuracy
