"""``n_threads="auto"``: the free cores of an idle machine, 1 where more would
oversubscribe (a busy machine, one core, a parallel worker, a thread limit)."""

import math
import os
import sys
import time
import types

import pytest
import torch
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits

from sklearn_llp import LLPClassifier
from sklearn_llp.neural import _runtime
from sklearn_llp.neural._runtime import (
    auto_threads,
    available_cores,
    in_worker,
    own_load,
)


@pytest.mark.parametrize(
    "inputs, expected",
    [
        (dict(cores=2, load=0.0, own=0.0), 2),  # idle 2 cores
        (dict(cores=2, load=0.1, own=0.0, running=1), 1),  # a busy one just began
        (dict(cores=2, load=0.3, own=0.0), 2),  # background noise
        (dict(cores=2, load=1.0, own=0.0), 1),  # one busy process beside us
        (dict(cores=2, load=1.4, own=0.0), 1),
        (dict(cores=2, load=2.0, own=1.0), 1),  # our own thread + one busy
        (dict(cores=2, load=1.1, own=1.0), 2),  # the load is our own work
        (dict(cores=2, load=9.0, own=0.0), 1),  # overloaded: at least 1
        (dict(cores=1, load=0.0, own=0.0), 1),  # affinity: 1 core
        (dict(cores=8, load=3.2, own=0.2), 5),
        (dict(cores=8, load=0.0, own=0.0, limit=4), 4),  # torch.set_num_threads(4)
        (dict(cores=2, load=0.0, own=0.0, limit=1), 1),  # threadpoolctl limit 1
        (dict(cores=2, load=0.0, own=0.0, worker=True), 1),  # in a worker
        # the average lags: a process that has just ended still counts in it
        (dict(cores=2, load=1.0, own=0.0, now=0.0), 2),
        (dict(cores=2, load=1.0, own=0.0, now=0.9), 1),  # ... one still busy
        (dict(cores=8, load=3.2, own=0.2, now=1.0), 7),
        # a runnable thread that used no CPU over the window: a snapshot
        # artefact (this process's own spinning OpenMP thread), not a process
        (dict(cores=2, load=0.1, own=0.0, running=1, now=0.0), 2),
        (dict(cores=2, load=1.5, own=0.1, running=1, now=0.1), 2),
        (dict(cores=2, load=0.1, own=0.0, running=1, now=0.3), 1),
        (dict(cores=2, load=0.1, own=0.0, running=1, now=1.0), 1),
    ],
)
def test_decision_table(inputs, expected):
    # now=inf: the counters agree with the load average unless a row says
    inputs = {"worker": False, "limit": 64, "running": 0, "now": math.inf, **inputs}
    assert auto_threads(**inputs) == expected


def test_inside_a_joblib_worker_is_one_thread():
    def threads():
        return in_worker(), auto_threads(cores=2, load=0.0, own=0.0, limit=2, running=0)

    assert not in_worker()
    results = Parallel(n_jobs=2, backend="threading")(delayed(threads)() for _ in "ab")
    assert results == [(True, 1), (True, 1)]
    # n_jobs=1 runs in this process, with no sibling: not a worker
    assert Parallel(n_jobs=1)(delayed(threads)() for _ in "a") == [(False, 2)]


def test_inside_a_dask_or_loky_worker_is_one_thread(monkeypatch):
    fake = types.ModuleType("distributed")
    fake.get_worker = lambda: object()
    monkeypatch.setitem(sys.modules, "distributed", fake)
    assert in_worker()
    assert auto_threads(cores=2, load=0.0, own=0.0, limit=2, running=0) == 1

    def outside():
        raise ValueError("No worker found")

    fake.get_worker = outside
    assert not in_worker()
    monkeypatch.setattr(
        _runtime.multiprocessing,
        "current_process",
        lambda: types.SimpleNamespace(name="LokyProcess-3"),
    )
    assert in_worker()


def test_threadpoolctl_limit_is_respected():
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        idle = dict(cores=2, load=0.0, own=0.0, worker=False, running=0)
        assert auto_threads(**idle) == 2
        with threadpool_limits(limits=1):
            assert auto_threads(**idle) == 1
    finally:
        torch.set_num_threads(previous)


def test_detected_inputs_are_sane():
    assert 1 <= available_cores() <= os.cpu_count()
    before = own_load()
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:  # 0.2 s of work raises our share
        pass
    after = own_load()
    assert math.isfinite(after) and 0 <= before and 0 < after
    assert 1 <= auto_threads() <= max(available_cores(), 1)


def test_a_busy_process_is_seen_at_once():
    import subprocess

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        others = [_runtime.running_others() for _ in range(5)]
        if others[0] is None:
            pytest.skip("no /proc/loadavg")
        assert max(others) >= 1  # the busy loop, whatever else runs
        # the load average has not seen it yet; the CPU counters confirm it
        _runtime._busy_state.clear()
        threads = auto_threads(
            cores=2, load=0.0, own=0.0, worker=False, limit=2, running=max(others)
        )
    finally:
        busy.kill()
        busy.wait()
        _runtime._busy_state.clear()
    assert threads == 1


def test_estimator_uses_auto_threads_and_restores(monkeypatch):
    monkeypatch.setattr(_runtime, "auto_threads", lambda: 3)
    clf = LLPClassifier(device="cpu")
    previous = torch.get_num_threads()
    with clf._threads():
        assert torch.get_num_threads() == 3
    assert torch.get_num_threads() == previous
    with clf.set_params(n_threads=2)._threads():
        assert torch.get_num_threads() == 2
    with clf.set_params(n_threads=None)._threads():
        assert torch.get_num_threads() == previous


def test_busy_now_sees_a_busy_process_and_its_end(monkeypatch):
    """The CPU counters see a busy process while it runs and nothing once it
    has ended, while the 1-minute load average still counts it."""
    import subprocess

    monkeypatch.setattr(_runtime, "_busy_state", {})
    before = _runtime.busy_now()  # whatever else this machine runs
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        _runtime._busy_state.clear()
        assert _runtime.busy_now() > before + 0.6
    finally:
        busy.kill()
        busy.wait()
    _runtime._busy_state.clear()
    assert _runtime.busy_now() < before + 0.5  # ended: not busy any more
