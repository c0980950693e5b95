"""Every loss against a hand computation: the proportion loss, VAT's pieces,
and the regression losses of a batch that holds a sample of its bags."""

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from sklearn_llp.core import check_bags
from sklearn_llp.methods import VAT, BagBatch, BagLoss, InstanceLoss, InterpolatingLoss
from sklearn_llp.methods.functional import (
    kl_divergence_with_logits,
    l2_normalize,
    pi_loss,
    proportion_loss,
    vat_loss,
    vat_perturbation,
)
from sklearn_llp.modules import MLP


def test_proportion_loss_by_hand():
    # bag 0: rows 0, 1; bag 1: row 2; bag means [0.6, 0.4] and [0.3, 0.7]
    logits = torch.log(torch.tensor([[0.8, 0.2], [0.4, 0.6], [0.3, 0.7]]))
    props = torch.tensor([[0.5, 0.5], [0.0, 1.0]])
    expected = (-(0.5 * math.log(0.6) + 0.5 * math.log(0.4)) - math.log(0.7)) / 2
    loss = proportion_loss(logits, torch.tensor([0, 0, 1]), props)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    # the mean of the probabilities, not of the log-probabilities
    logits = torch.log(torch.tensor([[0.9, 0.1], [0.1, 0.9]]))
    loss = proportion_loss(logits, torch.tensor([0, 0]), torch.tensor([[0.5, 0.5]]))
    assert loss.item() == pytest.approx(math.log(2), rel=1e-6)
    # bags of one row: the cross-entropy
    torch.manual_seed(0)
    logits, labels = torch.randn(7, 4), torch.tensor([0, 3, 1, 1, 2, 0, 3])
    loss = proportion_loss(logits, torch.arange(7), F.one_hot(labels, 4).float())
    assert loss.item() == pytest.approx(F.cross_entropy(logits, labels).item(), 1e-6)


@pytest.mark.parametrize(
    "step, rampup_steps, expected",
    [(0, 100, math.exp(-5)), (50, 100, math.exp(-1.25)), (75, 100, math.exp(-5 / 16))]
    + [(100, 100, 1.0), (10_000, 100, 1.0), (0, 0, 1.0)],  # last: no ramp-up
)
def test_the_consistency_weight_ramps_up_over_global_steps(
    step, rampup_steps, expected
):
    # rampup=0.5 of 2 * rampup_steps planned steps: T = rampup_steps
    weight = VAT().rampup_weight(0.5, 0.5, step, 2 * rampup_steps)
    assert weight == pytest.approx(0.5 * expected)


def test_kl_divergence_and_l2_normalize_by_hand():
    p, q = torch.tensor([[0.5, 0.5]]), torch.tensor([[0.25, 0.75]])
    expected = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    result = kl_divergence_with_logits(torch.log(p), torch.log(q))
    assert result.item() == pytest.approx(expected, rel=1e-6)
    out = l2_normalize(torch.tensor([[3e-30, 4e-30], [0.0, 0.0]]))  # no underflow
    np.testing.assert_allclose(out[0].numpy(), [0.6, 0.8], rtol=1e-6)
    assert torch.all(out[1] == 0)


def _model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3)
    )


def test_vat_perturbation_has_norm_eps_and_beats_a_random_direction():
    model, X = _model(), torch.randn(256, 6)
    target = model(X).detach()
    for eps in (0.1, 1.0, 4.0):
        r = vat_perturbation(model, X, target, eps=eps)
        np.testing.assert_allclose(r.norm(dim=1).numpy(), eps, rtol=1e-5)
    adversarial = kl_divergence_with_logits(target, model(X + r / 4))
    random = model(X + l2_normalize(torch.randn_like(X)))
    random = kl_divergence_with_logits(target, random)
    assert adversarial > 2 * random


def test_vat_and_pi_perturb_a_standardising_module_in_its_units():
    """On an MLP that standardises, ``r / input_scale`` has norm ``eps`` and both
    losses equal those of its layers fed the standardised rows (same draws)."""
    torch.manual_seed(0)
    net = MLP(6, 3, hidden_sizes=(16,))
    with torch.no_grad():
        net.input_mean.copy_(torch.randn(6) * 50)
        net.input_scale.copy_(torch.rand(6) * 100 + 0.01)
    X = net.input_mean + net.input_scale * torch.randn(64, 6)
    Z = (X - net.input_mean) / net.input_scale
    target = net(X).detach()
    for eps, wrapped in [(0.5, net), (2.0, torch.nn.DataParallel(net))]:
        r = vat_perturbation(wrapped, X, target, eps=eps)
        np.testing.assert_allclose((r / net.input_scale).norm(dim=1), eps, rtol=1e-4)
    for loss in (
        lambda m, A: vat_loss(m, A, target, eps=1.0),
        lambda m, A: pi_loss(m, A, target, noise_std=0.3),
    ):
        torch.manual_seed(1)
        scaled = loss(net, X)
        torch.manual_seed(1)
        assert scaled.item() == pytest.approx(loss(net.layers, Z).item(), rel=1e-3)


def test_vat_loss_is_zero_for_a_constant_model_and_trains_the_perturbed_pass():
    X = torch.randn(32, 6)
    constant = torch.nn.Linear(6, 3)
    with torch.no_grad():
        constant.weight.zero_()
    assert abs(vat_loss(constant, X, constant(X).detach(), eps=1.0).item()) < 1e-7
    model = _model()
    loss = vat_loss(model, X, model(X).detach(), eps=1.0)
    assert loss.item() >= 0
    loss.backward()  # the target is detached: the gradient is the perturbed pass's
    assert all(p.grad is not None for p in model.parameters())


def test_vat_method_adds_the_weighted_vat_loss_to_the_proportion_loss():
    model, X = _model(), torch.randn(8, 6)
    segments, props = torch.tensor([0] * 4 + [1] * 4), torch.tensor([[1.0, 0, 0]] * 2)
    bags, logits = BagBatch(segments, props, torch.arange(2)), model(X)
    torch.manual_seed(1)
    vat = VAT(alpha=0.3, eps=2.0, rampup=0.0).get_loss(model, X, logits, bags, 5, 10)
    torch.manual_seed(1)
    consistency = vat_loss(model, X, logits.detach(), eps=2.0)
    expected = proportion_loss(logits, segments, props) + 0.3 * consistency
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
    nn = torch.nn
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256))
    model.extend([nn.ReLU(), nn.Linear(256, 10)])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(steps):
        rows = torch.arange(step * 64, step * 64 + 64) % len(X)
        optimizer.zero_grad()
        F.cross_entropy(model(X[rows]), y[rows]).backward()
        optimizer.step()
    return model


@pytest.mark.parametrize("scale", [1.0, 16.0])  # standardised and raw-pixel scale
@pytest.mark.parametrize("steps", [0, 300])  # untrained, and confident
@pytest.mark.slow
def test_vat_direction_matches_the_exact_hessian_vector_product(steps, scale):
    """The float32 power iteration points where float64 ``H d`` points."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = torch.tensor((X - X.mean(0)) / (X.std(0) + 1e-8) * scale, dtype=torch.float32)
    model = _confident_mlp(X, torch.tensor(y), steps)
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


# --- Regression losses of a batch (issue 32, case 2) ---
@pytest.mark.parametrize(
    "method, expected",
    [(BagLoss(), 4 / 6.75), (InstanceLoss(), 12 / 6.75)]
    + [(InterpolatingLoss(0.5), (4 + 0.5 * 12) / 6.75)],
)
def test_regression_losses_of_a_weighted_batch_by_hand(method, expected):
    # bags a: 4 rows of weight 1, mean 2; b: 2 rows of weight 2, mean 5; c: 2
    # rows of weight 0.5. The batch holds a and b whole, b first: b predicts
    # 3, 5 (mean 4, W 4): bag term 4 * 1, instance 2 * 4 + 0; a 1, 3, 1, 3
    # (mean 2): bag 0, instance 4. Over 6 pairs x mean pair weight 9/8: 6.75.
    w, targets = np.array([1, 1, 1, 1, 2, 2, 0.5, 0.5]), dict(a=2.0, b=5.0, c=0.0)
    bags = check_bags(list("aaaabbcc"), targets=targets, sample_weight=w)
    segments, means = torch.tensor([0, 0, 1, 1, 1, 1]), torch.tensor([[5.0], [2.0]])
    weights = torch.tensor([2.0, 2.0, 1.0, 1.0, 1.0, 1.0])
    batch = BagBatch(segments, means, torch.tensor([1, 0]), weights=weights)
    predictions = torch.tensor([[3.0], [5.0], [1.0], [3.0], [1.0], [3.0]])
    loss = method.prepare(bags, None).get_loss(None, None, predictions, batch, 0, 1)
    assert loss.item() == pytest.approx(expected, rel=1e-6)
