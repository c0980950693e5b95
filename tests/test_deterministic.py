"""Deterministic by construction: no atomic scatter-add in a training step.

Bag sums are :func:`segment_sum` (``torch.segment_reduce`` over contiguous
bags) and the gradient of the overlapping-bag gather is such a segment sum,
so on CUDA the order of additions never varies. Checked here on the CPU:
the results equal the former ``index_add_`` code, no step of any method
calls ``index_add_``/``scatter_add_`` (mocked to fail) or has an indexing
node in its autograd graph (whose backward is an atomic scatter-add on
CUDA), every method fits under ``torch.use_deterministic_algorithms(True)``,
and :func:`deterministic` restores the caller's settings.
"""

import os
from unittest import mock

import numpy as np
import pytest
import torch
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier
from sklearn_llp._runtime import deterministic
from sklearn_llp.methods import (
    _losses,
    available_methods,
    proportion_loss,
    segment_mean,
)
from sklearn_llp.methods._losses import gather_rows, segment_sum
from sklearn_llp.methods._rot import sinkhorn_pseudo_labels


def index_add_sum(values, segments, n):
    """The former segment sum."""
    return values.new_zeros((n, *values.shape[1:])).index_add_(0, segments, values)


def _segments(rng, n_segments, sizes, shuffle):
    segments = np.repeat(np.arange(n_segments), sizes)
    if shuffle:
        rng.shuffle(segments)
    return torch.as_tensor(segments)


@pytest.mark.parametrize("equal", [False, True], ids=["sizes-vary", "sizes-equal"])
@pytest.mark.parametrize("shuffle", [False, True], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_segment_sum_equals_index_add_with_gradients(shuffle, dtype, equal, device):
    rng = np.random.RandomState(0)
    # empty segments included; equal sizes take the reshape-and-sum path
    sizes = 6 if equal else rng.randint(0, 9, size=40)
    segments = _segments(rng, 40, sizes, shuffle).to(device)
    values = torch.randn(len(segments), 3, dtype=dtype, device=device)
    values.requires_grad_()
    weights = torch.randn(40, 3, dtype=dtype, device=device, requires_grad=True)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == torch.float32 else {}
    result = segment_sum(values, segments, 40)
    expected = index_add_sum(values, segments, 40)
    torch.testing.assert_close(result, expected, **tol)
    (grad,) = torch.autograd.grad((result * weights).sum(), values, create_graph=True)
    (grad_ref,) = torch.autograd.grad(
        (expected * weights).sum(), values, create_graph=True
    )
    torch.testing.assert_close(grad, grad_ref, **tol)
    # differentiable twice, as index_add_ was
    (second,) = torch.autograd.grad((grad**3).sum(), weights)
    (second_ref,) = torch.autograd.grad((grad_ref**3).sum(), weights)
    torch.testing.assert_close(second, second_ref, **tol)


@pytest.mark.parametrize(
    "segments, n_segments",
    [
        ([0, 0, 1, 1, 2, 2], 3),  # sorted, equal sizes
        ([0, 0, 0, 2, 2, 3], 5),  # sorted, empty segments
        ([2, 0, 2, 1, 0, 1], 3),  # unsorted
        ([1], 2),
        ([], 0),
        ([], 3),
    ],
)
def test_the_gpu_plan_agrees_with_the_cpu_plan(segments, n_segments, device):
    # the torch code path that CUDA takes, run on the test device
    segments = torch.tensor(segments, dtype=torch.long)
    cpu = _losses._plan_numpy(segments, n_segments)
    gpu = _losses._plan_torch(segments.to(device), n_segments)
    for name in ("order", "segments", "offsets", "counts"):
        a, b = getattr(cpu, name), getattr(gpu, name)
        assert (a is None) == (b is None), name
        if a is not None:
            assert torch.equal(torch.as_tensor(a), b.cpu()), name
    expected_size = None if gpu.order is not None else cpu.size
    assert gpu.size == expected_size


def test_segment_sum_of_vectors_and_trailing_dimensions():
    segments = torch.tensor([2, 0, 2, 1, 0])
    flat = torch.arange(5.0)
    torch.testing.assert_close(
        segment_sum(flat, segments, 4), index_add_sum(flat, segments, 4)
    )
    cube = torch.randn(5, 2, 3)
    torch.testing.assert_close(
        segment_sum(cube, segments, 3), index_add_sum(cube, segments, 3)
    )
    assert segment_sum(
        torch.zeros(0, 2), torch.zeros(0, dtype=torch.long), 3
    ).shape == (
        3,
        2,
    )


@pytest.mark.parametrize("segments", [[0, 3, 1], [0, -1, 1], [0, 1, 3]])
def test_out_of_range_segments_raise(segments):
    with pytest.raises(IndexError, match="out of range"):
        segment_sum(torch.ones(3, 2), torch.tensor(segments), 3)


@pytest.mark.parametrize("weighted", [False, True])
def test_segment_mean_and_proportion_loss_equal_the_index_add_version(weighted):
    rng = np.random.RandomState(1)
    segments = _segments(rng, 30, rng.randint(1, 20, size=30), shuffle=True)
    n = len(segments)
    logits = torch.randn(n, 5, dtype=torch.float64, requires_grad=True)
    props = torch.softmax(torch.randn(30, 5, dtype=torch.float64), 1)
    weights = torch.rand(n, dtype=torch.float64) + 0.1 if weighted else None
    w = torch.ones(n, dtype=torch.float64) if weights is None else weights
    probs = torch.softmax(logits, 1)
    expected = (
        index_add_sum(probs * w[:, None], segments, 30)
        / index_add_sum(w, segments, 30)[:, None]
    )
    means = segment_mean(probs, segments, 30, weights)
    torch.testing.assert_close(means, expected)
    loss = proportion_loss(logits, segments, props, weights)
    ref = -(props * torch.log(expected + 1e-8)).sum(1).mean()
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(
        torch.autograd.grad(loss, logits)[0], torch.autograd.grad(ref, logits)[0]
    )


def test_gather_gradient_equals_indexing(device):
    members = torch.tensor([3, 0, 3, 1, 3, 2, 0], device=device)  # 3: three pairs
    source = torch.randn(5, 4, dtype=torch.float64, device=device)  # 4: none
    source.requires_grad_()
    upstream = torch.randn(7, 4, dtype=torch.float64, device=device)
    (grad,) = torch.autograd.grad(
        (gather_rows(source, members) * upstream).sum(), source
    )
    (ref,) = torch.autograd.grad((source[members] * upstream).sum(), source)
    torch.testing.assert_close(grad, ref)
    assert not grad[4].any()


def test_sinkhorn_does_not_depend_on_the_order_of_the_instances():
    rng = np.random.RandomState(2)
    segments = _segments(rng, 12, rng.randint(2, 30, size=12), shuffle=False)
    log_probs = torch.log_softmax(torch.randn(len(segments), 4), 1)
    props = torch.softmax(torch.randn(12, 4), 1)
    plan = sinkhorn_pseudo_labels(log_probs, segments, props)
    order = torch.as_tensor(rng.permutation(len(segments)))
    shuffled = sinkhorn_pseudo_labels(log_probs[order], segments[order], props)
    torch.testing.assert_close(shuffled, plan[order])


# --------------------------------------------------------------------------
# every method's training step
# --------------------------------------------------------------------------
#: Autograd nodes whose backward is an (atomic, on CUDA) scatter-add.
SCATTER_NODES = {
    "IndexBackward0",
    "IndexSelectBackward0",
    "GatherBackward0",
    "IndexAddBackward0",
    "ScatterAddBackward0",
    "IndexPutBackward0",
    "EmbeddingBackward0",
    "TakeBackward0",
}
#: Python-level calls that accumulate with atomic adds on CUDA.
ATOMIC_CALLS = [
    (torch.Tensor, "index_add_"),
    (torch.Tensor, "index_add"),
    (torch, "index_add"),
    (torch.Tensor, "scatter_add_"),
    (torch.Tensor, "scatter_add"),
    (torch, "scatter_add"),
    (torch.Tensor, "index_reduce_"),
    (torch, "bincount"),
]


class GraphNodes(Callback):
    """Collects the autograd node names of every training loss."""

    def __init__(self):
        self.names = set()

    def on_batch_end(self, net, batch=None, training=None, loss=None, **kwargs):
        if not training or loss is None:
            return
        stack, seen = [loss.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            self.names.add(type(node).__name__)
            stack.extend(next_node for next_node, _ in node.next_functions)


def _fit_every_step(method, small_bags, overlapping, device="cpu"):
    X, bags, props, y = small_bags
    if overlapping:
        # 5 blocks of 24 rows, 4 overlapping bags inside each: 5 groups, so
        # validation can hold out whole groups
        rng = np.random.RandomState(3)
        bags = [
            24 * block + rng.choice(24, rng.randint(6, 15), replace=False)
            for block in range(5)
            for _ in range(4)
        ]
        props = np.stack([np.bincount(y[b], minlength=3) / len(b) for b in bags])
    nodes = GraphNodes()
    clf = LLPClassifier(
        method=method,
        module__hidden_sizes=(8,),
        module__dropout=0.2,
        max_epochs=2,
        batch_size=32,
        validation_fraction=0.25,
        random_state=0,
        device=device,
        verbose=0,
        callbacks=[nodes],
    )
    fail = mock.Mock(side_effect=AssertionError("atomic accumulation in a step"))
    patches = [mock.patch.object(owner, name, fail) for owner, name in ATOMIC_CALLS]
    for patch in patches:
        patch.start()
    try:
        with deterministic():  # CPU: raises for ops without a deterministic kernel
            clf.fit(X, bags, props)
    finally:
        for patch in patches:
            patch.stop()
    assert fail.call_count == 0
    return clf, nodes.names


@pytest.mark.parametrize("method", available_methods())
def test_training_step_has_no_atomic_accumulation(method, small_bags, device):
    # llpfc refuses overlapping bags; every other method trains on them, so
    # the gather of pairs and its backward are exercised. On CUDA,
    # deterministic() makes any op without a deterministic kernel raise.
    overlapping = method != "llpfc"
    clf, names = _fit_every_step(method, small_bags, overlapping, device)
    assert names, "no training step was seen"
    assert not names & SCATTER_NODES, names & SCATTER_NODES
    assert np.isfinite(clf.predict_proba(small_bags[0])).all()
    assert not torch.are_deterministic_algorithms_enabled()


# --------------------------------------------------------------------------
# deterministic(): restores the caller's settings
# --------------------------------------------------------------------------
@pytest.fixture
def clean_state(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    mode = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    torch.use_deterministic_algorithms(mode, warn_only=warn_only)


def test_deterministic_sets_and_restores(clean_state):
    with deterministic():
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.is_deterministic_algorithms_warn_only_enabled()
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert not torch.are_deterministic_algorithms_enabled()
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ


def test_deterministic_restores_on_exceptions(clean_state, monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":0:0")  # the user's, kept after
    torch.use_deterministic_algorithms(True, warn_only=True)
    with pytest.raises(KeyError), deterministic():
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
        assert not torch.is_deterministic_algorithms_warn_only_enabled()
        raise KeyError("inside")
    assert torch.are_deterministic_algorithms_enabled()
    assert torch.is_deterministic_algorithms_warn_only_enabled()
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":0:0"


def test_deterministic_keeps_a_deterministic_cublas_setting(clean_state, monkeypatch):
    monkeypatch.setenv("CUBLAS_WORKSPACE_CONFIG", ":16:8")
    with deterministic(), deterministic():  # nests
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":16:8"
        assert torch.are_deterministic_algorithms_enabled()
    assert not torch.are_deterministic_algorithms_enabled()
    with deterministic(enabled=False):
        assert not torch.are_deterministic_algorithms_enabled()
