"""Every loss against a hand computation."""

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sklearn_llp.methods import DLLP, VAT, BagBatch
from sklearn_llp.methods.functional import (
    exp_rampup,
    kl_divergence_with_logits,
    l2_normalize,
    proportion_loss,
    segment_mean,
    vat_loss,
    vat_perturbation,
)


def test_proportion_loss_by_hand():
    # bag 0: rows 0, 1; bag 1: row 2
    logits = torch.log(torch.tensor([[0.8, 0.2], [0.4, 0.6], [0.3, 0.7]]))
    segments = torch.tensor([0, 0, 1])
    props = torch.tensor([[0.5, 0.5], [0.0, 1.0]])
    # bag means: [0.6, 0.4] and [0.3, 0.7]
    expected = (-(0.5 * math.log(0.6) + 0.5 * math.log(0.4)) - math.log(0.7)) / 2
    loss = proportion_loss(logits, segments, props)
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_proportion_loss_is_cross_entropy_for_singleton_bags():
    torch.manual_seed(0)
    logits = torch.randn(7, 4)
    labels = torch.tensor([0, 3, 1, 1, 2, 0, 3])
    loss = proportion_loss(logits, torch.arange(7), F.one_hot(labels, 4).float())
    assert loss.item() == pytest.approx(F.cross_entropy(logits, labels).item(), 1e-6)


def test_proportion_loss_is_mean_of_probabilities_not_of_log_probabilities():
    # A geometric mean of the probabilities would give a different value.
    logits = torch.log(torch.tensor([[0.9, 0.1], [0.1, 0.9]]))
    loss = proportion_loss(logits, torch.tensor([0, 0]), torch.tensor([[0.5, 0.5]]))
    assert loss.item() == pytest.approx(math.log(2), rel=1e-6)


def test_segment_mean_equals_a_loop_over_variable_size_bags():
    rng = np.random.RandomState(0)
    sizes = rng.randint(1, 30, size=25)
    segments = np.repeat(np.arange(25), sizes)
    rng.shuffle(segments)
    values = rng.normal(size=(len(segments), 5))
    expected = np.stack([values[segments == b].mean(0) for b in range(25)])
    result = segment_mean(
        torch.tensor(values), torch.tensor(segments), n_segments=25
    ).numpy()
    np.testing.assert_allclose(result, expected, rtol=1e-12)


@pytest.mark.parametrize(
    "step, expected",
    [(0, math.exp(-5)), (50, math.exp(-1.25)), (75, math.exp(-5 / 16)), (100, 1.0)],
)
def test_exp_rampup_values(step, expected):
    assert exp_rampup(step, 100) == pytest.approx(expected)


def test_exp_rampup_stays_at_one_and_handles_no_rampup():
    assert exp_rampup(10_000, 100) == 1.0
    assert exp_rampup(0, 0) == 1.0


def test_vat_rampup_counts_global_steps():
    method = VAT(alpha=0.5, rampup=0.5)
    assert method.rampup_weight(0.5, 0.5, 0, 200) == pytest.approx(0.5 * math.exp(-5))
    assert method.rampup_weight(0.5, 0.5, 50, 200) == pytest.approx(
        0.5 * math.exp(-1.25)
    )
    assert method.rampup_weight(0.5, 0.5, 150, 200) == 0.5


def test_kl_divergence_by_hand():
    p, q = torch.tensor([[0.5, 0.5]]), torch.tensor([[0.25, 0.75]])
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    result = kl_divergence_with_logits(torch.log(p), torch.log(q))
    assert result.item() == pytest.approx(expected, rel=1e-6)


def test_l2_normalize_survives_tiny_gradients():
    d = torch.tensor([[3e-30, 4e-30], [0.0, 0.0]])
    out = l2_normalize(d)
    np.testing.assert_allclose(out[0].numpy(), [0.6, 0.8], rtol=1e-6)
    assert torch.all(out[1] == 0)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)
    )


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_vat_perturbation_has_norm_eps(eps):
    model, X = _model(), torch.randn(32, 6)
    r = vat_perturbation(model, X, model(X).detach(), eps=eps)
    np.testing.assert_allclose(r.norm(dim=1).numpy(), eps, rtol=1e-5)


def test_vat_perturbation_finds_a_worse_direction_than_random():
    model, X = _model(), torch.randn(256, 6)
    target = model(X).detach()
    r_adv = vat_perturbation(model, X, target, eps=1.0)
    r_random = l2_normalize(torch.randn_like(X))
    adversarial = kl_divergence_with_logits(target, model(X + r_adv))
    random = kl_divergence_with_logits(target, model(X + r_random))
    assert adversarial > 2 * random


def test_vat_loss_is_nonnegative_and_zero_for_a_constant_model():
    model, X = _model(), torch.randn(32, 6)
    assert vat_loss(model, X, model(X).detach(), eps=1.0).item() >= 0
    constant = torch.nn.Linear(6, 3)
    with torch.no_grad():
        constant.weight.zero_()
    loss = vat_loss(constant, X, constant(X).detach(), eps=1.0)
    assert abs(loss.item()) < 1e-7


def test_vat_gradient_flows_through_the_perturbed_pass_only():
    model, X = _model(), torch.randn(16, 6)
    target = model(X)  # not detached on purpose: vat_loss must not need it
    loss = vat_loss(model, X, target.detach(), eps=1.0)
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_dllp_and_vat_methods_by_hand():
    model, X = _model(), torch.randn(8, 6)
    bags = BagBatch(
        torch.tensor([0] * 4 + [1] * 4),
        torch.tensor([[1.0, 0, 0]] * 2),
        torch.arange(2),
    )
    logits = model(X)
    dllp = DLLP().get_loss(model, X, logits, bags, 0, 10)
    assert dllp.item() == pytest.approx(
        proportion_loss(logits, bags.segments, bags.bag_props).item()
    )
    torch.manual_seed(1)
    vat = VAT(alpha=0.3, eps=2.0, rampup=0.0).get_loss(model, X, logits, bags, 5, 10)
    torch.manual_seed(1)
    expected = dllp + 0.3 * vat_loss(model, X, logits.detach(), eps=2.0)
    assert vat.item() == pytest.approx(expected.item(), rel=1e-5)


def _exact_hessian_direction(model, X, d):
    """``H d`` per row in float64: H the Hessian of r -> KL(f(x) || f(x + r))
    at r = 0, by double backward."""
    model64 = copy.deepcopy(model).double()
    X64, d64 = X.double(), d.double()
    with torch.no_grad():
        target = model64(X64)
    r = torch.zeros_like(X64, requires_grad=True)
    kl = kl_divergence_with_logits(target, model64(X64 + r), reduction="none").sum()
    (grad,) = torch.autograd.grad(kl, r, create_graph=True)
    (hd,) = torch.autograd.grad((grad * d64).sum(), r)
    return hd / hd.norm(dim=1, keepdim=True)


def _confident_mlp(X, y, steps):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(X.shape[1], 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 256),
        torch.nn.ReLU(),
        torch.nn.Linear(256, 10),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(steps):
        rows = torch.arange(step * 64, step * 64 + 64) % len(X)
        loss = torch.nn.functional.cross_entropy(model(X[rows]), y[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


@pytest.mark.parametrize("scale", [1.0, 16.0])  # standardised and raw-pixel scale
@pytest.mark.parametrize("steps", [0, 300])  # untrained, and confident
def test_vat_direction_matches_the_exact_hessian_vector_product(steps, scale):
    """The float32 power iteration points where float64 ``H d`` points."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = torch.tensor((X - X.mean(0)) / (X.std(0) + 1e-8) * scale, dtype=torch.float32)
    y = torch.tensor(y)
    model = _confident_mlp(X, y, steps)
    batch = X[:256]
    with torch.no_grad():
        target = model(batch)
    if steps:  # most rows predicted with probability > 0.99
        assert (target.softmax(1).max(1).values > 0.99).float().mean() > 0.5
    torch.manual_seed(1)
    r_adv = vat_perturbation(model, batch, target, eps=1.0)
    torch.manual_seed(1)
    d = l2_normalize(torch.randn_like(batch))
    cos = (r_adv.double() * _exact_hessian_direction(model, batch, d)).sum(1).abs()
    assert cos.mean() > 0.97 and torch.quantile(cos, 0.05) > 0.95
    # the paper's xi = 1e-6 is float32 noise: the test can tell the difference
    torch.manual_seed(1)
    paper = vat_perturbation(model, batch, target, eps=1.0, xi=1e-6)
    paper_cos = (paper.double() * _exact_hessian_direction(model, batch, d)).sum(1)
    assert paper_cos.abs().mean() < 0.9
