"""ROT and its Sinkhorn, the Pi-model and perturbation_mode, user methods.

The methods learning from bags are in test_method_suite.py."""

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from torch import nn

from sklearn_llp import LLPClassifier
from sklearn_llp.methods import ROT, BagBatch, LLPMethod
from sklearn_llp.methods.functional import (
    perturbation_mode,
    pi_loss,
    proportion_loss,
    pseudo_label_loss,
    sinkhorn_pseudo_labels,
)


def random_bags(sizes, n_classes, seed, scale=2.0, dtype=torch.float64):
    """Logits, segments and proportions of bags of the given sizes, their rows
    interleaved; some proportions are exactly zero."""
    rng = np.random.RandomState(seed)
    segments = rng.permutation(np.repeat(np.arange(len(sizes)), sizes))
    props = rng.dirichlet(np.ones(n_classes), len(sizes))
    props[rng.rand(*props.shape) < 0.2] = 0.0
    props[np.arange(len(sizes)), rng.randint(0, n_classes, len(sizes))] += 0.1
    props /= props.sum(1, keepdims=True)
    logits = scale * rng.normal(size=(len(segments), n_classes))
    as_tensor = dict(dtype=dtype)
    return (
        torch.tensor(logits, **as_tensor),
        torch.from_numpy(segments),
        torch.tensor(props, **as_tensor),
    )


# --- Sinkhorn pseudo-labels ---
@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=6),
    n_classes=st.integers(2, 6),
    seed=st.integers(0, 2**16),
)
def test_sinkhorn_marginals_on_variable_size_bags(sizes, n_classes, seed):
    # a bag of one row, and a pure bag (one class), come first
    logits, segments, props = random_bags([1, 3, *sizes], n_classes, seed)
    props[1] = torch.eye(n_classes, dtype=props.dtype)[seed % n_classes]
    plan = sinkhorn_pseudo_labels(
        logits.log_softmax(1), segments, props, reg=1.0, n_iter=300
    )
    assert plan.shape == logits.shape and torch.all(plan >= 0)
    torch.testing.assert_close(plan.sum(1), torch.ones(len(plan), dtype=plan.dtype))
    counts = props * torch.bincount(segments)[:, None]
    columns = torch.zeros_like(counts).index_add_(0, segments, plan)
    torch.testing.assert_close(columns, counts, atol=1e-5, rtol=0)
    assert torch.all(plan[props[segments] == 0] == 0)
    torch.testing.assert_close(plan[segments == 0], props[:1])  # its proportions
    torch.testing.assert_close(plan[segments == 1], props[[1] * 3])  # its class


@pytest.mark.parametrize("reg", [1.0, 0.5])
def test_sinkhorn_matches_pot_bag_by_bag(reg):
    ot = pytest.importorskip("ot")  # POT, the reference; not a dependency
    sizes = [1, 3, 17, 40, 64]
    logits, segments, props = random_bags(sizes, 5, seed=1, scale=1.5)
    log_probs = logits.log_softmax(1)
    plan = sinkhorn_pseudo_labels(log_probs, segments, props, reg=reg, n_iter=1000)
    for b, size in enumerate(sizes):
        rows = (segments == b).numpy()
        marginals = np.ones(size), props[b].numpy() * size
        cost = -log_probs[rows].numpy()
        expected = ot.sinkhorn(*marginals, cost, reg, numItermax=10**5, stopThr=1e-13)
        np.testing.assert_allclose(plan[rows].numpy(), expected, atol=1e-7)


def test_sinkhorn_reg_one_rescales_the_predicted_probabilities():
    # T = diag(u) P diag(v): each row of T / P is constant within a class.
    logits, segments, props = random_bags([6], 3, seed=4)
    props[:] = torch.tensor([0.5, 0.3, 0.2], dtype=props.dtype)
    probs = logits.softmax(1)
    plan = sinkhorn_pseudo_labels(probs.log(), segments, props, 1.0, 500)
    ratio = plan / probs
    ratio = ratio / ratio[:, :1]
    torch.testing.assert_close(ratio, ratio[:1].expand_as(ratio))


def test_sinkhorn_is_stable_for_confident_float32_predictions():
    logits, segments, props = random_bags(
        [16, 200, 3], 10, seed=6, scale=60.0, dtype=torch.float32
    )
    logits.requires_grad_(True)
    plan = sinkhorn_pseudo_labels(logits.log_softmax(1), segments, props, 0.05, 100)
    assert torch.isfinite(plan).all() and not plan.requires_grad
    torch.testing.assert_close(plan.sum(1), torch.ones(len(plan)))
    with pytest.raises(ValueError, match="reg"):
        sinkhorn_pseudo_labels(logits.log_softmax(1), segments, props, reg=0.0)


# --- ROT loss ---
def test_rot_loss_by_hand_and_pseudo_labels_held_fixed():
    logits, segments, props = random_bags([2, 5], 3, seed=9)
    logits.requires_grad_(True)
    bags = BagBatch(segments, props, torch.arange(len(props)))
    method = ROT(rot_alpha=0.3, reg=0.5, n_iter=80)
    loss = method.get_loss(None, None, logits, bags, 0, 10)

    plan = sinkhorn_pseudo_labels(logits.log_softmax(1), segments, props, 0.5, 80)
    ce = -(plan * logits.log_softmax(1)).sum(1)
    ot_loss = (ce[segments == 0].mean() + ce[segments == 1].mean()) / 2
    expected = 0.3 * proportion_loss(logits, segments, props) + 0.7 * ot_loss
    torch.testing.assert_close(loss, expected)
    torch.testing.assert_close(pseudo_label_loss(logits, segments, plan, 2), ot_loss)
    one = ROT(rot_alpha=1.0).get_loss(None, None, logits, bags, 0, 10)
    assert torch.equal(one, proportion_loss(logits, segments, props))

    # The gradient is that of the cross-entropy with T a constant.
    (grad,) = torch.autograd.grad(loss, logits)
    (expected_grad,) = torch.autograd.grad(expected, logits)
    torch.testing.assert_close(grad, expected_grad)


# --- Pi-model loss and perturbation_mode ---
@pytest.mark.parametrize("noise_std", [0.0, 0.5])
def test_pi_loss_by_hand_on_a_linear_module(noise_std):
    W = torch.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, -1.0]])
    b = torch.tensor([0.1, -0.3])
    module = nn.Linear(3, 2)
    with torch.no_grad():
        module.weight.copy_(W), module.bias.copy_(b)
    X, target_logits = torch.randn(4, 3), torch.randn(4, 2)
    torch.manual_seed(0)
    noisy = X + noise_std * torch.randn(4, 3)
    torch.manual_seed(0)
    loss = pi_loss(module, X, target_logits, noise_std)
    probs = torch.softmax(noisy @ W.T + b, 1)
    expected = ((probs - torch.softmax(target_logits, 1)) ** 2).sum(1).mean()
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    loss.backward()
    assert module.weight.grad.abs().sum() > 0


def test_perturbation_mode_freezes_dropout_and_batchnorm_statistics():
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5))
    module.train()
    X = torch.randn(16, 4)
    module(X)  # one ordinary step, so the running statistics are not trivial
    norm, dropout = module[1], module[2]
    before = {k: v.clone() for k, v in module.state_dict().items()}
    with perturbation_mode(module):
        assert not dropout.training
        torch.testing.assert_close(module(X), module(X))  # no dropout noise
        # batch statistics, not the running ones, normalise the batch
        stats = (norm.running_mean, norm.running_var, norm.weight, norm.bias)
        eval_like = nn.functional.batch_norm(module[0](X), *stats)
        assert not torch.allclose(norm(module[0](X)), eval_like)
    for key, value in module.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert dropout.training and norm.training and norm.track_running_stats
    module(X)
    assert norm.num_batches_tracked.item() == before["1.num_batches_tracked"] + 1
    # modes are restored after an error; a dropout switched off stays off
    dropout.eval()
    with pytest.raises(RuntimeError), perturbation_mode(module):
        raise RuntimeError
    assert not dropout.training and norm.training and norm.track_running_stats


# --- User-defined methods ---
class ScaledProportionLoss(LLPMethod):
    """The proportion loss of logits divided by a temperature ``a``."""

    def __init__(self, a=1.0):
        self.a = a

    def get_loss(self, module, X, logits, bags, step, total_steps):
        self.n_calls_ = getattr(self, "n_calls_", 0) + 1
        return proportion_loss(logits / self.a, bags.segments, bags.bag_props)


@pytest.mark.slow
def test_user_method_objects_in_grid_search_are_cloned_for_every_fit(digits_bags):
    X_train, bags, props, y_train, _, _ = digits_bags
    X = pd.DataFrame(X_train, columns=[f"px{i}" for i in range(X_train.shape[1])])

    def accuracy(estimator, X, y):
        # y holds bag ids; the true labels are looked up by row (the index).
        return np.mean(estimator.predict(X) == y_train[X.index])

    grid = [ScaledProportionLoss(a=1), ScaledProportionLoss(a=2)]
    search = GridSearchCV(
        LLPClassifier(max_epochs=15, random_state=0, verbose=0),
        {"method": grid},
        cv=GroupKFold(2),
        scoring=accuracy,
    )
    search.fit(X, bags, groups=bags, props=props)
    assert [m.a for m in search.cv_results_["param_method"]] == [1, 2]
    assert np.all(search.cv_results_["mean_test_score"] > 0.8)
    # every fit trains a clone: the objects given are never modified
    assert not any(hasattr(method, "n_calls_") for method in grid)
    best = search.best_estimator_
    assert isinstance(best.method_, ScaledProportionLoss)
    assert best.method_ is not best.method
    assert best.method_.a == search.best_params_["method"].a
    assert best.method_.n_calls_ == best.n_train_steps_ > 0
    cloned = clone(best)
    assert cloned.method is not best.method and not hasattr(cloned.method, "n_calls_")
    assert cloned.method.get_params() == {"a": best.method_.a}
