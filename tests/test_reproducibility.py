"""Reproducible by construction: one seed, one result; no atomic sums.

``random_state`` seeds the network, dropout, VAT directions, Pi-model noise,
the bag sampler and the hold-out, so two seeded CPU fits are bit-identical;
bag generators draw identical bags under one seed; every method's step runs
under ``torch.use_deterministic_algorithms(True)``. Tests taking ``device``
run on ``SKLEARN_LLP_TEST_DEVICE`` (``benchmarks/gpu_check.py`` sets cuda).
"""

import contextlib
import os
from unittest import mock

import numpy as np
import pytest
import torch
from sklearn.base import clone
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import KMeansBagGenerator, UniformBagGenerator
from sklearn_llp.methods import _segments as _losses
from sklearn_llp.methods import available_methods
from sklearn_llp.methods._segments import gather_rows, segment_sum
from sklearn_llp.neural._runtime import deterministic

METHODS = available_methods()  # every registered method


def _tiny(**params):
    defaults = dict(module__hidden_sizes=(16,), max_epochs=3, batch_size=32, verbose=0)
    return LLPClassifier(**{**defaults, "device": "cpu", **params})


def _overlapping(y):
    """5 blocks of 24 rows, 5 overlapping bags inside each: 5 connected
    groups, so validation can hold out whole groups."""
    rng = np.random.RandomState(3)
    lists = [
        24 * block + rng.choice(24, rng.randint(3, 15), replace=False)
        for block in range(5)
        for _ in range(5)
    ]
    return lists, np.stack([np.bincount(y[r], minlength=3) / len(r) for r in lists])


#: layout -> extra parameters: dropout masks, the validation hold-out and
#: the batches of large bags (in chunks) are all seeded.
LAYOUTS = {
    "bags": {},
    "bags_held_out_dropout": {"validation_fraction": 0.25, "module__dropout": 0.3},
    "overlapping": dict(validation_fraction=0.2, module__dropout=0.3, max_bag_size=8),
}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.slow
def test_same_seed_bit_identical_for_every_method(small_bags, method, layout, device):
    """Seed 0 twice (the global RNGs moved in between) gives the same
    probabilities and history, also after a partial_fit, seed 1 other ones.
    (CPU fits of every estimator repeating: tests/test_conformance.py.)"""
    X, bags, props, y = small_bags
    if layout == "overlapping":
        if method == "llpfc":
            pytest.skip("llpfc refuses overlapping bags")
        bags, props = _overlapping(y)
    params = dict(method=method, device=device, **LAYOUTS[layout])
    first = _tiny(random_state=0, **params).fit(X, bags, props)
    torch.manual_seed(12345)  # the global RNGs play no part
    np.random.seed(12345)  # noqa: NPY002
    again = clone(first).fit(X, bags, props)
    other = clone(first).set_params(random_state=1).fit(X, bags, props)
    proba = [clf.predict_proba(X) for clf in (first, again, other)]
    assert proba[0].dtype == np.float32
    assert np.array_equal(proba[0], proba[1]), "same random_state, different result"
    assert not np.array_equal(proba[0], proba[2]), "random_state had no effect"
    assert first.history[:, "train_loss"] == again.history[:, "train_loss"]
    assert first.n_train_steps_ == again.n_train_steps_
    if "validation_fraction" in params:
        assert first.history[:, "valid_loss"] == again.history[:, "valid_loss"]
    first.partial_fit(X, bags, props)
    again.partial_fit(X, bags, props)
    assert np.array_equal(first.predict_proba(X), again.predict_proba(X))


def test_random_state_instances_follow_scikit_learn(small_bags):
    # As in scikit-learn, a RandomState instance is advanced by every fit:
    # two instances in the same state give the same fit, one shared
    # instance gives a fresh draw each time.
    X, bags, props, _ = small_bags
    first = _tiny(random_state=np.random.RandomState(4)).fit(X, bags, props)
    again = _tiny(random_state=np.random.RandomState(4)).fit(X, bags, props)
    assert np.array_equal(first.predict_proba(X), again.predict_proba(X))
    shared = np.random.RandomState(4)
    one = _tiny(random_state=shared).fit(X, bags, props).predict_proba(X)
    two = _tiny(random_state=shared).fit(X, bags, props).predict_proba(X)
    assert not np.array_equal(one, two)


# --- Bag generators.
@pytest.fixture
def unstructured():
    """Rows without cluster structure, so K-means depends on its seed."""
    rng = np.random.RandomState(0)
    return rng.uniform(size=(300, 3)), rng.randint(0, 3, 300)


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: UniformBagGenerator(7, random_state=seed),
        lambda seed: UniformBagGenerator(7, drop_last=False, random_state=seed),
        lambda seed: KMeansBagGenerator(12, random_state=seed, minibatch=False),
        lambda seed: KMeansBagGenerator(12, random_state=seed, minibatch=True),
        lambda seed: KMeansBagGenerator(12, n_components=2, random_state=seed),
    ],
    ids=["uniform", "uniform-keep-last", "kmeans", "minibatch-kmeans", "pca-kmeans"],
)
def test_random_generators_repeat_under_one_seed_and_differ_across(unstructured, make):
    X, y = unstructured
    bags, props = make(0).make_bags(X, y)
    again_bags, again_props = make(0).make_bags(X, y)
    np.testing.assert_array_equal(bags, again_bags)
    np.testing.assert_array_equal(props, again_props)
    assert np.array_equal(make(0).fit_transform(X), bags)
    other = make(1).fit_transform(X)
    assert not np.array_equal(bags, other)


def index_add_sum(values, segments, n):
    """The former segment sum."""
    return values.new_zeros((n, *values.shape[1:])).index_add_(0, segments, values)


def _segments(rng, n_segments, sizes, shuffle):
    segments = np.repeat(np.arange(n_segments), sizes)
    if shuffle:
        rng.shuffle(segments)
    return torch.as_tensor(segments)


@pytest.mark.parametrize("trail", [(3,), (), (2, 3)], ids=["rows", "vector", "cube"])
@pytest.mark.parametrize("equal", [False, True], ids=["sizes-vary", "sizes-equal"])
@pytest.mark.parametrize("shuffle", [False, True], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_segment_sum_equals_index_add_with_gradients(
    shuffle, dtype, equal, trail, device
):
    rng = np.random.RandomState(0)
    # empty segments included; equal sizes take the reshape-and-sum path
    sizes = 6 if equal else rng.randint(0, 9, size=40)
    segments = _segments(rng, 40, sizes, shuffle).to(device)
    values = torch.randn(len(segments), *trail, dtype=dtype, device=device)
    values.requires_grad_()
    weights = torch.randn(40, *trail, dtype=dtype, device=device, requires_grad=True)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == torch.float32 else {}
    result = segment_sum(values, segments, 40)
    expected = index_add_sum(values, segments, 40)
    torch.testing.assert_close(result, expected, **tol)
    (grad,) = torch.autograd.grad((result * weights).sum(), values, create_graph=True)
    loss = (expected * weights).sum()
    (grad_ref,) = torch.autograd.grad(loss, values, create_graph=True)
    torch.testing.assert_close(grad, grad_ref, **tol)
    # differentiable twice, as index_add_ was
    (second,) = torch.autograd.grad((grad**3).sum(), weights)
    (second_ref,) = torch.autograd.grad((grad_ref**3).sum(), weights)
    torch.testing.assert_close(second, second_ref, **tol)


@pytest.mark.parametrize(  # sorted of equal sizes, with empty segments, unsorted
    "segments, n_segments",
    [([0, 0, 1, 1, 2, 2], 3), ([0, 0, 0, 2, 2, 3], 5), ([2, 0, 2, 1, 0, 1], 3)]
    + [([1], 2), ([], 0), ([], 3)],
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


@pytest.mark.parametrize("segments", [[0, 3, 1], [0, -1, 1], [0, 1, 3]])
def test_out_of_range_segments_raise_and_no_rows_sum_to_zeros(segments):
    with pytest.raises(IndexError, match="out of range"):
        segment_sum(torch.ones(3, 2), torch.tensor(segments), 3)
    none = segment_sum(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long), 3)
    assert torch.equal(none, torch.zeros(3, 2))


def test_gather_gradient_equals_indexing(device):
    members = torch.tensor([3, 0, 3, 1, 3, 2, 0], device=device)  # 3: three pairs
    source = torch.randn(5, 4, dtype=torch.float64, device=device)  # 4: none
    source.requires_grad_()
    upstream = torch.randn(7, 4, dtype=torch.float64, device=device)
    loss = (gather_rows(source, members) * upstream).sum()
    (grad,) = torch.autograd.grad(loss, source)
    (ref,) = torch.autograd.grad((source[members] * upstream).sum(), source)
    torch.testing.assert_close(grad, ref)
    assert not grad[4].any()


# --- every method's training step
#: Autograd nodes whose backward is an (atomic, on CUDA) scatter-add.
SCATTER = "Index IndexSelect Gather IndexAdd ScatterAdd IndexPut Embedding Take"
SCATTER_NODES = {f"{name}Backward0" for name in SCATTER.split()}
#: Python-level calls that accumulate with atomic adds on CUDA.
ATOMIC_CALLS = [(torch, name) for name in ("index_add", "scatter_add", "bincount")]
ATOMIC = ("index_add_", "index_add", "scatter_add_", "scatter_add", "index_reduce_")
ATOMIC_CALLS += [(torch.Tensor, name) for name in ATOMIC]


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
        bags, props = _overlapping(y)
    nodes = GraphNodes()
    params = dict(module__hidden_sizes=(8,), module__dropout=0.2, max_epochs=2)
    params.update(batch_size=32, validation_fraction=0.25, random_state=0, verbose=0)
    clf = LLPClassifier(method=method, device=device, callbacks=[nodes], **params)
    fail = mock.Mock(side_effect=AssertionError("atomic accumulation in a step"))
    with contextlib.ExitStack() as patches:
        for owner, name in ATOMIC_CALLS:
            patches.enter_context(mock.patch.object(owner, name, fail))
        with deterministic():  # CPU: raises for ops without a deterministic kernel
            clf.fit(X, bags, props)
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


# --- deterministic(): restores the caller's settings
@pytest.fixture
def clean_state(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    mode = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    yield
    torch.use_deterministic_algorithms(mode, warn_only=warn_only)


def test_deterministic_sets_and_restores_also_on_exceptions(clean_state, monkeypatch):
    with deterministic():
        assert torch.are_deterministic_algorithms_enabled()
        assert not torch.is_deterministic_algorithms_warn_only_enabled()
        assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert not torch.are_deterministic_algorithms_enabled()
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
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
