"""``n_threads="auto"``: the cores this process may use, at most torch's own
threads, 1 in a parallel worker -- and never the machine's load."""

import os
import sys
import time
import types

import numpy as np
import pytest
import torch
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from sklearn_llp import LLPClassifier
from sklearn_llp.neural import _runtime
from sklearn_llp.neural._runtime import auto_threads, in_worker


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """``machine(affinity, cgroup files, threads)``; torch's threads restored."""

    def pretend(affinity=2, cgroup=(), threads=2):
        cpus = set(range(affinity))
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cpus, raising=False)
        monkeypatch.setattr(_runtime, "_CGROUP", tmp_path)
        for name, text in dict(cgroup).items():
            (tmp_path / name).parent.mkdir(exist_ok=True)
            (tmp_path / name).write_text(text)
        torch.set_num_threads(threads)

    previous = torch.get_num_threads()
    yield pretend
    torch.set_num_threads(previous)


def v1(quota, period="100000"):
    return {"cpu/cpu.cfs_quota_us": quota, "cpu/cpu.cfs_period_us": period}


@pytest.mark.parametrize(
    "affinity, cgroup, threads, expected",
    [
        (2, {}, 2, 2),  # an idle or a busy 2-core machine alike
        (1, {}, 2, 1),  # taskset -c 0
        (8, {}, 4, 4),  # torch.set_num_threads(4), OMP_NUM_THREADS=4
        (8, {"cpu.max": "250000 100000\n"}, 8, 2),  # --cpus=2.5: rounded down
        (8, {"cpu.max": "max 100000\n"}, 8, 8),  # no quota
        (8, {"cpu.max": "50000 100000\n"}, 8, 1),  # less than a core: 1
        (2, {"cpu.max": "1600000 100000\n"}, 2, 2),  # more than the affinity
        (8, v1("300000"), 8, 3),  # cgroup v1
        (8, v1("-1"), 8, 8),
    ],
)
def test_the_rule(machine, affinity, cgroup, threads, expected):
    machine(affinity, cgroup, threads)
    assert auto_threads() == expected


def test_one_thread_in_a_worker_or_under_a_limit(machine, monkeypatch):
    machine(affinity=2, threads=2)
    probe = lambda: (in_worker(), auto_threads())  # noqa: E731
    assert probe() == (False, 2)
    threads = Parallel(n_jobs=2, backend="threading")(delayed(probe)() for _ in "ab")
    assert threads == [(True, 1), (True, 1)]
    assert Parallel(n_jobs=1)(delayed(probe)() for _ in "a") == [(False, 2)]
    with threadpool_limits(limits=1):
        assert probe() == (False, 1)
    dask = types.ModuleType("distributed")
    dask.get_worker = object  # inside a Dask worker: returns the worker
    monkeypatch.setitem(sys.modules, "distributed", dask)
    assert probe() == (True, 1)
    dask.get_worker = lambda: {}[0]  # outside one: raises
    assert probe() == (False, 2)
    loky = types.SimpleNamespace(name="LokyProcess-3")
    monkeypatch.setattr(_runtime.multiprocessing, "current_process", lambda: loky)
    assert probe() == (True, 1)


@pytest.mark.slow
def test_a_seeded_fit_is_the_same_whatever_the_load(machine, monkeypatch):
    # the old rule chose 1 thread under load, 2 idle: these weights then differ
    machine(affinity=2, threads=2)
    rng = np.random.RandomState(0)
    X, props = rng.normal(size=(1024, 8)), rng.dirichlet([1, 1, 1], 64).repeat(16, 0)
    clf = LLPClassifier(
        module__hidden_sizes=(128,), batch_size=1024, max_epochs=2, random_state=0
    )

    def weights():
        clf.set_params(device="cpu", verbose=0).fit(X, np.arange(1024) // 16, props)
        return [p.detach().clone() for p in clf.module_.parameters()]

    idle = weights()
    monkeypatch.setattr(os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    monkeypatch.setattr(time, "sleep", lambda s: pytest.fail("slept to measure"))
    assert all(map(torch.equal, idle, weights()))


def test_the_estimator_sets_its_threads_and_restores_them(monkeypatch):
    monkeypatch.setattr(_runtime, "auto_threads", lambda: 3)
    clf = LLPClassifier(device="cpu")
    previous = torch.get_num_threads()
    for n_threads, inside in (("auto", 3), (2, 2), (None, previous)):
        with clf.set_params(n_threads=n_threads)._threads():
            assert torch.get_num_threads() == inside
        assert torch.get_num_threads() == previous
