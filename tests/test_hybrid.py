"""The hybrid method (:ref:`hybrid`): its pseudo-labels fill the bags' counts,
its loss by hand, and that it is VAT when the instance loss weighs nothing."""

import numpy as np
import torch

from sklearn_llp import LLPClassifier
from sklearn_llp.methods import VAT, BagBatch, Hybrid
from sklearn_llp.methods.functional import confident_pseudo_labels, proportion_loss


def test_pseudo_labels_fill_every_bags_counts_by_the_model_ranking():
    # bag 0: 4 rows, half of class 1; bag 1: 3 rows, all of class 0
    p1 = torch.tensor([0.9, 0.2, 0.6, 0.3, 0.8, 0.7, 0.1])
    log_probs = torch.stack([1 - p1, p1], dim=1).log()
    segments = torch.tensor([0, 0, 0, 0, 1, 1, 1])
    props = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    labels, confidence = confident_pseudo_labels(log_probs, segments, props, reg=0.05)
    # the two most likely rows of bag 0 are class 1; bag 1 has no class 1
    assert labels.tolist() == [1, 0, 1, 0, 0, 0, 0]
    assert (confidence[4:] > 0.999).all()  # the counts leave no doubt there
    assert ((confidence >= 0) & (confidence <= 1)).all()
    # a softer plan is less sure of the same labels
    soft_labels, soft = confident_pseudo_labels(log_probs, segments, props, reg=1.0)
    assert soft_labels[:4].tolist() == labels[:4].tolist()
    assert (soft[:4] < confidence[:4]).all()


def test_the_loss_by_hand_once_the_instance_weight_is_up():
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [0.5, 0.0], [0.0, 0.0]])
    segments = torch.tensor([0, 0, 1, 1])
    props = torch.tensor([[0.5, 0.5], [1.0, 0.0]])
    bags = BagBatch(segments, props, torch.tensor([0, 1]))
    method = Hybrid(alpha=0.0, beta=0.7, reg=0.5)
    got = method.get_loss(None, None, logits, bags, step=10, total_steps=10)

    log_p = torch.log_softmax(logits, 1).double().numpy()
    log_probs = torch.log_softmax(logits, 1)
    labels, conf = confident_pseudo_labels(log_probs, segments, props, 0.5)
    per_row = -conf.double().numpy() * log_p[np.arange(4), labels.numpy()]
    instance = np.mean([per_row[:2].mean(), per_row[2:].mean()])  # bags, then rows
    by_hand = proportion_loss(logits, segments, props).item() + 0.7 * instance
    np.testing.assert_allclose(got.item(), by_hand, rtol=1e-6)
    assert labels.tolist() == [0, 1, 0, 0]
    # at step 0 the ramp has the instance weight at 0.7 exp(-5)
    start = method.get_loss(None, None, logits, bags, step=0, total_steps=10)
    weight = 0.7 * np.exp(-5.0)
    expected = proportion_loss(logits, segments, props).item() + weight * instance
    np.testing.assert_allclose(start.item(), expected, rtol=1e-6)


def test_with_beta_0_it_is_vat_bit_for_bit(problem):
    X, bags, props, _ = problem
    common = dict(max_epochs=3, random_state=0, verbose=0, device="cpu")
    vat = LLPClassifier(method=VAT(), **common).fit(X, bags, props)
    hybrid = LLPClassifier(method="hybrid", method__beta=0.0, **common)
    hybrid.fit(X, bags, props)
    np.testing.assert_array_equal(hybrid.predict_proba(X), vat.predict_proba(X))
    assert type(hybrid.method_) is Hybrid
