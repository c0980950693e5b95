"""Training speed and memory of ``LLPClassifier`` against a bare PyTorch loop.

Four engines (LLP-DLLP, bare-DLLP, LLP-VAT, bare-VAT) run interleaved one
epoch at a time in a fresh subprocess per configuration; epoch times are
medians, LLP/bare and VAT/DLLP ratios paired per round. How it measures and
what it found: ``benchmarks/README.md``, section ``speed.py``.

    python benchmarks/speed.py                  # full run (about 9 min, 2 cores)
    python benchmarks/speed.py --quick --out /tmp/speed
    python benchmarks/speed.py --profile        # where LLPClassifier's time goes
    python benchmarks/speed.py --resummarise    # speed.md from speed.json
"""

import argparse
import cProfile
import ctypes
import gc
import io
import json
import math
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results"
sys.path.insert(0, str(HERE))  # for _common
from _common import machine_info  # noqa: E402

from sklearn_llp._runtime import resolve_device  # noqa: E402

#: Cardinalities of the one-hot blocks, after Adult's workclass, education,
#: marital status, occupation, relationship, race, sex and native country.
CARDINALITIES = (9, 16, 7, 15, 6, 5, 2, 40)
N_NUMERIC = 6
N_FEATURES = sum(CARDINALITIES) + N_NUMERIC
AGE_EDGES = (25, 35, 45, 55, 65, 75)  # 7 age bands
ROWS_PER_REGION = 512
BATCH_SIZE = 128
LR = 1e-3
VAT_PARAMS = {"alpha": 0.05, "eps": 1.0, "xi": 1e-6, "rampup": 0.4}
ENGINES = ("llp-dllp", "bare-dllp", "llp-vat", "bare-vat")
TARGET_LLP_OVER_BARE = 1.15
TARGET_VAT_OVER_DLLP = 3.0


# ----------------------------------------------------------------------
# synthetic census-like data
# ----------------------------------------------------------------------
def make_census_like(n_rows, seed=0):
    """Features, labels, region and age band of ``n_rows`` synthetic people.

    Returns ``X`` (float32, ``(n_rows, 106)``: 100 one-hot columns and 6
    numeric ones), ``y`` (0/1, about 24 % ones, a noisy logistic function of
    ``X``), ``region`` (Zipf-sized, about 512 rows each) and ``age_band``
    (0-6).
    """
    rng = np.random.default_rng(seed)
    X = np.zeros((n_rows, N_FEATURES), dtype=np.float32)
    rows = np.arange(n_rows)
    offset = 0
    for card in CARDINALITIES:
        p = 1.0 / np.arange(1, card + 1)
        X[rows, offset + rng.choice(card, n_rows, p=p / p.sum())] = 1.0
        offset += card
    age = np.clip(17 + rng.gamma(4.0, 5.5, n_rows), 17, 90).astype(np.float32)
    X[:, offset] = (age - 38.6) / 13.6
    X[:, offset + 1 :] = rng.standard_normal((n_rows, N_NUMERIC - 1), np.float32)
    w = rng.normal(0.0, 0.7, N_FEATURES).astype(np.float32)
    score = X @ w + rng.logistic(size=n_rows).astype(np.float32)
    y = (score > np.quantile(score, 0.76)).astype(np.int64)
    n_regions = max(2, n_rows // ROWS_PER_REGION)
    weights = 1.0 / (np.arange(n_regions) + 10.0)
    region = rng.choice(n_regions, n_rows, p=weights / weights.sum())
    age_band = np.searchsorted(AGE_EDGES, age, side="right")
    return X, y, region, age_band


def make_bags(n_rows, bagging, bag_size, seed=0):
    """``X``, bag ids, sample-aligned proportions ``(n, 2)`` and labels."""
    X, y, region, age_band = make_census_like(n_rows, seed)
    if bagging == "region_x_age":
        bags = region * (len(AGE_EDGES) + 1) + age_band
    elif bagging == "uniform":
        perm = np.random.default_rng(seed + 1).permutation(n_rows)
        bags = np.empty(n_rows, dtype=np.int64)
        bags[perm] = np.arange(n_rows) // bag_size
    else:
        raise ValueError(f"unknown bagging {bagging!r}")
    codes = np.unique(bags, return_inverse=True)[1].ravel()
    positive = np.bincount(codes, weights=y) / np.bincount(codes)
    props = np.stack([1.0 - positive, positive], axis=1)[codes]
    return X, bags, props, y


# ----------------------------------------------------------------------
# memory probes
# ----------------------------------------------------------------------
def _proc_status_kb(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


class MemoryProbe:
    """Peak memory of a block of work above the memory in use before it."""

    def __init__(self, device):
        self.device = device
        try:
            self._libc = ctypes.CDLL("libc.so.6")
        except OSError:
            self._libc = None

    @property
    def kind(self):
        if self.device.type == "cuda":
            return "cuda_max_memory_allocated_delta"
        return "rss_peak_delta"

    def start(self):
        import torch

        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            self._base = torch.cuda.memory_allocated()
            return
        if self._libc is not None:
            self._libc.malloc_trim(0)
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset the peak RSS (Linux >= 4.0)
            self._reset = True
        except OSError:
            self._reset = False
        self._base = _proc_status_kb("VmRSS")

    def stop(self):
        """Peak in MiB above the start, or None where it cannot be read."""
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize()
            return (torch.cuda.max_memory_allocated() - self._base) / 2**20
        peak = _proc_status_kb("VmHWM")
        if not self._reset or peak is None or self._base is None:
            return None
        return (peak - self._base) / 1024


def peak_rss_mib():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ----------------------------------------------------------------------
# the bare PyTorch loop
# ----------------------------------------------------------------------
class BareLoop:
    """A hand-written training loop doing what LLPClassifier does.

    Same MLP, same whole-bag batches (``BagBatchSampler``), bag means by
    ``index_add_``, proportion loss, optional VAT term, Adam.
    """

    def __init__(self, X, bags, props, method, max_bag_size, device, seed, epochs):
        import torch

        from sklearn_llp._data import BagBatchSampler
        from sklearn_llp.modules import MLP

        self.torch = torch
        self.method = method
        self.device = device
        codes = np.unique(bags, return_inverse=True)[1].ravel()
        sizes = np.bincount(codes)
        self.members = np.argsort(codes, kind="stable")
        self.pair_bags = np.repeat(np.arange(len(sizes)), sizes)
        first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        self.bag_props = torch.as_tensor(
            props[self.members[first]], dtype=torch.float32
        )
        self.X = torch.from_numpy(X)
        self.sampler = BagBatchSampler(
            self.pair_bags, BATCH_SIZE, max_bag_size=max_bag_size, random_state=seed
        )
        torch.manual_seed(seed)
        self.model = MLP(X.shape[1], props.shape[1]).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LR)
        self.step = 0
        self.total_steps = len(self.sampler) * epochs

    def _proportion_loss(self, logits, segments, bag_props):
        torch = self.torch
        probs = torch.softmax(logits, dim=1)
        n_bags = bag_props.shape[0]
        sums = probs.new_zeros((n_bags, probs.shape[1])).index_add_(0, segments, probs)
        counts = probs.new_zeros(n_bags).index_add_(
            0, segments, probs.new_ones(len(segments))
        )
        bag_probs = sums / counts.unsqueeze(1)
        return -(bag_props * bag_probs.clamp_min(1e-8).log()).sum(1).mean()

    def _kl(self, target_log_probs, logits):
        torch = self.torch
        log_probs = torch.log_softmax(logits, dim=1)
        return (target_log_probs.exp() * (target_log_probs - log_probs)).sum(1).mean()

    def _vat_loss(self, x, logits):
        torch = self.torch
        target = torch.log_softmax(logits.detach(), dim=1)
        d = torch.nn.functional.normalize(torch.randn_like(x), dim=1)
        d.requires_grad_(True)
        distance = self._kl(target, self.model(x + VAT_PARAMS["xi"] * d))
        (grad,) = torch.autograd.grad(distance, d)
        r_adv = VAT_PARAMS["eps"] * torch.nn.functional.normalize(grad, dim=1)
        return self._kl(target, self.model(x + r_adv))

    def batch(self, pairs):
        """Host tensors ``x, segments, bag_props`` of a sampler batch."""
        torch = self.torch
        # the sampler keeps every bag contiguous: segments are run ids
        pair_bags = self.pair_bags[pairs]
        new_bag = np.empty(len(pairs), dtype=bool)
        new_bag[0] = True
        np.not_equal(pair_bags[1:], pair_bags[:-1], out=new_bag[1:])
        segments = torch.from_numpy(np.cumsum(new_bag) - 1)
        x = self.X[torch.from_numpy(self.members[pairs])]
        bag_props = self.bag_props[torch.from_numpy(pair_bags[new_bag])]
        return x, segments, bag_props

    def epoch(self):
        torch = self.torch
        self.model.train()
        total = torch.zeros((), device=self.device)
        for pairs in self.sampler:
            x, segments, bag_props = (t.to(self.device) for t in self.batch(pairs))

            self.optimizer.zero_grad(set_to_none=True)
            logits = self.model(x)
            loss = self._proportion_loss(logits, segments, bag_props)
            if self.method == "vat":
                ramp = int(round(VAT_PARAMS["rampup"] * self.total_steps))
                phase = 1.0 - self.step / ramp if self.step < ramp else 0.0
                weight = VAT_PARAMS["alpha"] * math.exp(-5.0 * phase * phase)
                loss = loss + weight * self._vat_loss(x, logits)
            loss.backward()
            self.optimizer.step()
            self.step += 1
            total += loss.detach()
        return float(total)


# ----------------------------------------------------------------------
# LLPClassifier, one epoch per call
# ----------------------------------------------------------------------
def _sync(device):
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def _epoch_clock(store, device):
    """A skorch callback timing every epoch into ``store``."""
    from skorch.callbacks import Callback

    class EpochClock(Callback):
        def on_epoch_begin(self, net, **kwargs):
            _sync(device)
            self.t0_ = time.perf_counter()

        def on_epoch_end(self, net, **kwargs):
            _sync(device)
            store.append(time.perf_counter() - self.t0_)

    return EpochClock()


class LLPEngine:
    """``LLPClassifier`` advanced one epoch per call."""

    def __init__(self, X, bags, props, method, max_bag_size, device, seed):
        from sklearn_llp import LLPClassifier

        self.X, self.bags, self.props = X, bags, props
        self.epoch_times, self.setup_times = [], []
        self.clock = _epoch_clock(self.epoch_times, device)
        self.clf = LLPClassifier(
            method=method,
            max_bag_size=max_bag_size,
            max_epochs=1,
            batch_size=BATCH_SIZE,
            lr=LR,
            random_state=seed,
            verbose=0,
            device=str(device),
            callbacks=[("clock", self.clock)],
        )
        self.started = False

    def epoch(self):
        n_before = len(self.epoch_times)
        t0 = time.perf_counter()
        if self.started:
            self.clf.partial_fit(self.X, self.bags, self.props)
        else:
            self.clf.fit(self.X, self.bags, self.props)
            self.started = True
        wall = time.perf_counter() - t0
        assert len(self.epoch_times) == n_before + 1
        self.setup_times.append(wall - self.epoch_times[-1])
        return self.epoch_times[-1]


# ----------------------------------------------------------------------
# worker: one configuration in a fresh process
# ----------------------------------------------------------------------
def _setup_torch(threads, device_name):
    import torch

    torch.set_num_threads(threads)
    if device_name == "auto":
        device_name = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device_name)


def _warm_torch(device):
    """Run a few tiny steps first, so one-off lazy initialisation of torch
    (thread pools, kernels, allocator) is not charged to the first engine."""
    X, bags, props, _ = make_bags(2048, "uniform", 16, seed=99)
    for method in ("dllp", "vat"):
        BareLoop(X, bags, props, method, 1024, device, 0, 1).epoch()
        LLPEngine(X, bags, props, method, 1024, device, 0).epoch()


def run_config(cfg):
    """Time (and measure the memory of) the four engines on one config."""
    import torch

    cfg = {k: v for k, v in cfg.items() if k != "mode"}
    device = _setup_torch(cfg["threads"], cfg["device"])
    t_data = time.perf_counter()
    X, bags, props, _ = make_bags(
        cfg["rows"], cfg["bagging"], cfg.get("bag_size"), seed=cfg["seed"]
    )
    data_s = time.perf_counter() - t_data
    _warm_torch(device)
    sizes = np.bincount(np.unique(bags, return_inverse=True)[1].ravel())
    cap = cfg["max_bag_size"]
    used = int(np.minimum(sizes, cap).sum()) if cap else int(sizes.sum())
    epochs = cfg["repeats"] + 1
    probe = MemoryProbe(device)

    engines, memory = {}, {}
    for name in ENGINES:
        kind, method = name.split("-")
        probe.start()
        if kind == "llp":
            engine = LLPEngine(X, bags, props, method, cap, device, cfg["seed"])
        else:
            engine = BareLoop(X, bags, props, method, cap, device, cfg["seed"], epochs)
        memory[name] = {"warmup_epoch_s": _run_epoch(engine, device)}
        memory[name]["peak_mib"] = probe.stop()
        engines[name] = engine
    times = {name: [] for name in ENGINES}
    r = 0
    while r < cfg["repeats"] or (
        # short epochs: more rounds, until every engine has been timed for
        # min_time seconds (medians of many short epochs resist the load)
        min(sum(t) for t in times.values()) < cfg.get("min_time", 0.0)
        and r < cfg.get("max_rounds", cfg["repeats"])
    ):
        # each LLPClassifier epoch next to its bare twin; who goes first
        # alternates from round to round
        order = ENGINES if r % 2 == 0 else ENGINES[::-1]
        for name in order:
            times[name].append(_run_epoch(engines[name], device))
        r += 1

    out = {
        **cfg,
        "device": str(device),
        "n_bags": int(len(sizes)),
        "bag_size_min": int(sizes.min()),
        "bag_size_median": float(np.median(sizes)),
        "bag_size_max": int(sizes.max()),
        "bags_over_cap": int((sizes > cap).sum()) if cap else 0,
        "instances_per_epoch": used,
        "batches_per_epoch": _count_batches(bags, cap, cfg["seed"]),
        "data_s": data_s,
        "memory_kind": probe.kind,
        "process_peak_rss_mib": peak_rss_mib(),
        "engines": {},
    }
    for name in ENGINES:
        median = float(np.median(times[name]))
        row = {
            "epoch_s": times[name],
            "epoch_s_median": median,
            "instances_per_s": used / median,
            "warmup_epoch_s": memory[name]["warmup_epoch_s"],
            "peak_mem_mib": memory[name]["peak_mib"],
        }
        if name.startswith("llp"):
            setup = engines[name].setup_times
            row["fit_setup_s"] = setup[0]
            row["partial_fit_setup_s_median"] = (
                float(np.median(setup[1:])) if len(setup) > 1 else None
            )
        out["engines"][name] = row

    def paired(a, b):
        """Median over rounds of the ratio of two engines' epochs of a round:
        they ran back to back, so load changes between rounds cancel."""
        return float(np.median(np.divide(times[a], times[b])))

    for method in ("dllp", "vat"):
        llp, bare = f"llp-{method}", f"bare-{method}"
        out[f"llp_over_bare_{method}"] = paired(llp, bare)
        out[f"llp_over_bare_{method}_of_medians"] = (
            out["engines"][llp]["epoch_s_median"]
            / out["engines"][bare]["epoch_s_median"]
        )
        out[f"llp_over_bare_{method}_of_minima"] = min(times[llp]) / min(times[bare])
    for kind in ("llp", "bare"):
        out[f"vat_over_dllp_{kind}"] = paired(f"{kind}-vat", f"{kind}-dllp")
    del torch
    return out


def _count_batches(bags, max_bag_size, seed):
    """Batches actually drawn in an epoch (``len(sampler)`` is an upper
    bound: bags larger than ``batch_size`` make fewer, larger batches)."""
    from sklearn_llp._data import BagBatchSampler

    codes = np.unique(bags, return_inverse=True)[1].ravel()
    pair_bags = np.repeat(np.arange(codes.max() + 1), np.bincount(codes))
    sampler = BagBatchSampler(pair_bags, BATCH_SIZE, max_bag_size, random_state=seed)
    return len(sampler.batches())


def _run_epoch(engine, device):
    if isinstance(engine, LLPEngine):
        return engine.epoch()
    _sync(device)
    t0 = time.perf_counter()
    engine.epoch()
    _sync(device)
    return time.perf_counter() - t0


# ----------------------------------------------------------------------
# profile: how much of LLPClassifier's epoch is host work?
# ----------------------------------------------------------------------
class _TimedBatches:
    """An iterable of batches that adds up the time spent making them."""

    def __init__(self, batches):
        self.batches, self.seconds = batches, 0.0

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        batches = iter(self.batches)
        while True:
            t0 = time.perf_counter()
            try:
                batch = next(batches)
            except StopIteration:
                return
            finally:
                self.seconds += time.perf_counter() - t0
            yield batch


def run_profile(cfg, out_dir):
    """The host share of an epoch: the time spent making the batches (rows,
    bag structure; the sampler's shuffle included) over the epoch's time,
    for DLLP and VAT, next to the bare loop, and cProfile's top functions."""
    device = _setup_torch(cfg["threads"], cfg["device"])
    X, bags, props, _ = make_bags(cfg["rows"], cfg["bagging"], cfg.get("bag_size"))
    _warm_torch(device)
    summary, lines = (
        {},
        [
            f"# speed.py --profile: {cfg['rows']} rows, {cfg['bagging']} bags, "
            f"{cfg['threads']} thread(s), device {device}",
            "",
        ],
    )
    for method in ("dllp", "vat"):
        bare = BareLoop(X, bags, props, method, cfg["max_bag_size"], device, 0, 3)
        llp = LLPEngine(X, bags, props, method, cfg["max_bag_size"], device, 0)
        timers, make = [], llp.clf.get_iterator

        def timed(dataset, training=False, make=make, timers=timers):
            batches = _TimedBatches(make(dataset, training=training))
            timers.append(batches)
            return batches

        llp.clf.get_iterator = timed
        times = {"llp": [], "bare": []}
        for r in range(4):  # interleaved; round 0 warms up
            for kind in ("llp", "bare") if r % 2 == 0 else ("bare", "llp"):
                timers.clear()
                engine = llp if kind == "llp" else bare
                times[kind].append(
                    (_run_epoch(engine, device), sum(t.seconds for t in timers))
                )
        llp_s = float(np.median([t for t, _ in times["llp"][1:]]))
        batches_s = float(np.median([b for _, b in times["llp"][1:]]))
        bare_s = float(np.median([t for t, _ in times["bare"][1:]]))
        n_batches = _count_batches(bags, cfg["max_bag_size"], 0)
        profiler = cProfile.Profile()
        profiler.enable()
        llp.epoch()
        profiler.disable()
        summary[method] = {
            "batches_per_epoch": n_batches,
            "llp_epoch_s": llp_s,
            "bare_epoch_s": bare_s,
            "making_batches_s": batches_s,
            "host_share": batches_s / llp_s,
            "making_a_batch_us": batches_s / n_batches * 1e6,
        }
        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).sort_stats("tottime").print_stats(25)
        lines += [
            f"## {method}: {n_batches} batches an epoch",
            "",
            f"epoch {llp_s:.3f} s (bare loop {bare_s:.3f} s); making the "
            f"batches {batches_s:.3f} s ({batches_s / llp_s:.1%} of the epoch, "
            f"{batches_s / n_batches * 1e6:.0f} us a batch)",
            "",
            "cProfile of one epoch, top 25 by own time:",
            "",
            buf.getvalue().strip(),
            "",
        ]
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "speed_profile.txt").write_text("\n".join(lines) + "\n")
    (Path(out_dir) / "speed_profile.json").write_text(json.dumps(summary, indent=2))
    return summary


# ----------------------------------------------------------------------
# driver
# ----------------------------------------------------------------------
def _worker_main(spec):
    cfg = json.loads(spec)
    if isinstance(cfg, list):  # --quick: every configuration in one process
        result = [run_config(c) for c in cfg]
    elif cfg.pop("mode") == "profile":
        result = run_profile(cfg, cfg.pop("out"))
    else:
        result = run_config(cfg)
    print("RESULT " + json.dumps(result), flush=True)


def _spawn(cfg, timeout):
    env = dict(os.environ)
    threads = (cfg[0] if isinstance(cfg, list) else cfg)["threads"]
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--_worker", json.dumps(cfg)],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT ") :])
    raise RuntimeError(
        f"worker failed (rc {proc.returncode}) for {cfg}:\n{proc.stderr[-4000:]}"
    )


def machine_line(machine):
    """CPU, cores and torch of a report (also of reports written before
    ``_common.machine_info``, whose keys were ``cpu_model`` and ``nproc``)."""
    cpu = machine.get("cpu") or machine.get("cpu_model", "?")
    cores = machine.get("usable_cpus", machine.get("nproc"))
    torch_version = machine.get("versions", {}).get("torch") or machine.get("torch")
    return f"{cpu}, {cores} cores, torch {torch_version}"


def build_configs(args):
    common = {
        "threads": args.threads,
        "device": args.device,
        "seed": 0,
        "min_time": args.min_time,
        "max_rounds": args.max_rounds,
    }
    configs = []
    for rows in args.rows:
        repeats = (
            args.repeats if rows < 10**6 else min(args.repeats, args.repeats_large)
        )
        configs.append(
            {
                **common,
                "experiment": "rows",
                "rows": rows,
                "bagging": "region_x_age",
                "bag_size": None,
                "max_bag_size": 1024,
                "repeats": repeats,
            }
        )
    for bag_size in args.bag_sizes:
        caps = [1024] if bag_size <= 1024 else [1024, None]
        for cap in caps:
            repeats = args.repeats if cap else min(args.repeats, args.repeats_large)
            configs.append(
                {
                    **common,
                    "experiment": "bag_size",
                    # LLP needs two bags at least: the largest size gets two
                    "rows": max(args.bag_size_rows, 2 * bag_size),
                    "bagging": "uniform",
                    "bag_size": bag_size,
                    "max_bag_size": cap,
                    "repeats": repeats,
                }
            )
    return configs


def _fmt_mib(value):
    return "n/a" if value is None else f"{value:.0f}"


def summarise(results):
    """Targets: LLP/bare <= 1.15, VAT/DLLP <= 3, memory flat in bag size."""
    ratios = [
        (r[f"llp_over_bare_{m}"], m, r["experiment"], r["rows"], r["bag_size"])
        for r in results
        for m in ("dllp", "vat")
    ]
    worst = max(ratios)
    vat = [r["vat_over_dllp_llp"] for r in results]
    vat_worst = max(results, key=lambda r: r["vat_over_dllp_llp"])
    default_cap = [r["vat_over_dllp_llp"] for r in results if r["max_bag_size"]]
    capped = [r for r in results if r["experiment"] == "bag_size" and r["max_bag_size"]]
    flat = {}
    for name in ENGINES:
        mems = [r["engines"][name]["peak_mem_mib"] for r in capped]
        mems = [m for m in mems if m is not None]
        if mems:
            flat[name] = {"min_mib": min(mems), "max_mib": max(mems)}
    uncapped = [
        {
            "bag_size": r["bag_size"],
            "peak_mem_mib": {n: r["engines"][n]["peak_mem_mib"] for n in ENGINES},
        }
        for r in results
        if r["experiment"] == "bag_size" and not r["max_bag_size"]
    ]
    llp_flat = [
        flat[n]["max_mib"] - flat[n]["min_mib"]
        for n in ("llp-dllp", "llp-vat")
        if n in flat
    ]
    return {
        "llp_over_bare": {
            "target": TARGET_LLP_OVER_BARE,
            "max": worst[0],
            "worst": {
                "method": worst[1],
                "experiment": worst[2],
                "rows": worst[3],
                "bag_size": worst[4],
            },
            "met": bool(worst[0] <= TARGET_LLP_OVER_BARE),
            "n_met": int(sum(r[0] <= TARGET_LLP_OVER_BARE for r in ratios)),
            "n": len(ratios),
        },
        "vat_over_dllp": {
            "target": TARGET_VAT_OVER_DLLP,
            "max": max(vat),
            "min": min(vat),
            "met": bool(max(vat) <= TARGET_VAT_OVER_DLLP),
            "n_met": int(sum(v <= TARGET_VAT_OVER_DLLP for v in vat)),
            "n": len(vat),
            "met_with_max_bag_size": bool(
                max(default_cap, default=0.0) <= TARGET_VAT_OVER_DLLP
            ),
            "worst": {
                "experiment": vat_worst["experiment"],
                "rows": vat_worst["rows"],
                "bag_size": vat_worst["bag_size"],
                "max_bag_size": vat_worst["max_bag_size"],
                "bare_vat_over_dllp": vat_worst["vat_over_dllp_bare"],
            },
        },
        "memory_flat_in_bag_size": {
            "with_max_bag_size_1024": flat,
            "without_cap": uncapped,
            "llp_spread_mib": max(llp_flat) if llp_flat else None,
        },
    }


def write_markdown(report, path):
    res = report["results"]
    lines = [
        "# Training speed: LLPClassifier vs a bare PyTorch loop",
        "",
        f"Machine: {machine_line(report['machine'])}, "
        f"{res[0]['threads'] if res else '?'} torch thread(s), device "
        f"{res[0]['device'] if res else '?'}. Epoch times are medians over "
        "the measured epochs (first epoch of every engine discarded); the four "
        "engines ran interleaved, one epoch at a time, in one process per row; "
        "LLP/bare is the median over rounds of the ratio of back-to-back epochs. "
        "Memory: peak RSS during the first epoch above the RSS before it "
        "(MiB; includes `fit` setup for LLPClassifier).",
        "",
        "| experiment | rows | bags (min/median/max size) | max_bag_size | inst./epoch "
        "| method | bare s/epoch | LLP s/epoch | LLP/bare | LLP inst./s "
        "| bare MiB | LLP MiB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res:
        bags = (
            f"{r['n_bags']} ({r['bag_size_min']}/{r['bag_size_median']:g}/"
            f"{r['bag_size_max']})"
        )
        for m in ("dllp", "vat"):
            b, llp = r["engines"][f"bare-{m}"], r["engines"][f"llp-{m}"]
            lines.append(
                f"| {r['experiment']} ({r['bagging']}) | {r['rows']:,} | {bags} "
                f"| {r['max_bag_size']} | {r['instances_per_epoch']:,} | {m} "
                f"| {b['epoch_s_median']:.3f} | {llp['epoch_s_median']:.3f} "
                f"| {r[f'llp_over_bare_{m}']:.2f} | {llp['instances_per_s']:,.0f} "
                f"| {_fmt_mib(b['peak_mem_mib'])} | {_fmt_mib(llp['peak_mem_mib'])} |"
            )
    s = report["summary"]
    lob, vod = s["llp_over_bare"], s["vat_over_dllp"]
    lines += [
        "",
        "## Targets",
        "",
        f"* LLPClassifier epoch time <= {lob['target']}x the bare loop: "
        f"{'met' if lob['met'] else 'NOT met'} ({lob['n_met']}/{lob['n']} rows; "
        f"worst {lob['max']:.2f}x, {lob['worst']['method']} in "
        f"{lob['worst']['experiment']} with {lob['worst']['rows']:,} rows).",
        f"* LLP-VAT epoch <= {vod['target']}x DLLP (LLPClassifier, paired): "
        f"{'met' if vod['met'] else 'NOT met'} (met in {vod['n_met']}/{vod['n']} "
        f"rows, {vod['min']:.2f}x to {vod['max']:.2f}x; "
        f"{'met' if vod['met_with_max_bag_size'] else 'NOT met'} in every row "
        f"with a max_bag_size). Worst: {vod['max']:.2f}x with "
        f"{vod['worst']['rows']:,} rows, bags of {vod['worst']['bag_size']}, "
        f"max_bag_size={vod['worst']['max_bag_size']}, where the bare loop takes "
        f"{vod['worst']['bare_vat_over_dllp']:.2f}x: the cost of VAT's extra "
        "passes, not of LLPClassifier.",
    ]
    flat = s["memory_flat_in_bag_size"]
    if flat["with_max_bag_size_1024"]:
        spread = ", ".join(
            f"{n} {v['min_mib']:.0f}-{v['max_mib']:.0f} MiB"
            for n, v in flat["with_max_bag_size_1024"].items()
        )
        lines.append(
            f"* Memory flat in bag size: spread {flat['llp_spread_mib']:.0f} MiB "
            "for LLPClassifier with max_bag_size=1024 (bag sizes "
            f"{sorted({r['bag_size'] for r in res if r['experiment'] == 'bag_size'})}"
            "): "
            f"{spread}."
        )
        for u in flat["without_cap"]:
            mems = ", ".join(f"{n} {_fmt_mib(v)}" for n, v in u["peak_mem_mib"].items())
            lines.append(f"  Without the cap, bags of {u['bag_size']:,}: {mems} MiB.")
    lines += ["", f"Total wall time: {report['wall_s']:.0f} s.", ""]
    Path(path).write_text("\n".join(lines))


def _sizes(text):
    return [int(float(v)) for v in text.split(",")] if text else []


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="10^4 rows, 2 epochs (<1 min)")
    add("--out", type=Path, default=DEFAULT_OUT)
    add("--rows", type=_sizes, default=[10**4, 10**5, 10**6], help="e.g. 1e4,1e5")
    add("--bag-sizes", type=_sizes, default=[16, 256, 4096, 10**5], help="uniform")
    add("--bag-size-rows", type=int, default=10**5)
    add("--repeats", type=int, default=3, help="measured epochs (after a warm-up)")
    add("--repeats-large", type=int, default=3, help="for 10^6 rows or no cap")
    add("--min-time", type=float, default=4.0, help="more rounds until timed so long")
    add("--max-rounds", type=int, default=25)
    add("--threads", type=int, default=1, help="torch threads")
    add("--device", default="auto", help="auto, cpu or cuda")
    add("--profile", action="store_true", help="the host share of an epoch")
    add("--resummarise", action="store_true", help="speed.md from OUT/speed.json")
    add("--scale", type=float, help="only the defaults at scale: this many rows")
    add("--_worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows = [10**4]
        args.bag_sizes = [16, 10**4]
        args.bag_size_rows = 10**4
        args.repeats = 1
        args.min_time = 0.0
    return args


def _print_result(r, wall):
    print(
        f"{r['experiment']:8s} rows={r['rows']:>9,} bag={r['bag_size']} "
        f"cap={r['max_bag_size']}: "
        + ", ".join(f"{n} {r['engines'][n]['epoch_s_median']:.3f}s" for n in ENGINES)
        + f" | LLP/bare dllp {r['llp_over_bare_dllp']:.2f} vat "
        f"{r['llp_over_bare_vat']:.2f}" + ("" if wall is None else f" ({wall:.0f} s)"),
        flush=True,
    )


def scale_at_defaults(n_rows, out, epochs=2, seed=0):
    """Issue 22's large case: rows/s and accuracy of ``LLPClassifier`` at its
    defaults on ``n_rows`` x 40 features in random bags of 64, 4 classes,
    DLLP, against the previous defaults (128 rows a step, one thread)."""
    from sklearn_llp import LLPClassifier
    from sklearn_llp._runtime import auto_threads

    rng = np.random.default_rng(seed)
    n_test = 100_000
    X = rng.standard_normal((n_rows + n_test, 40), dtype=np.float32)
    logits = X @ rng.normal(0.0, 0.5, (40, 4)).astype(np.float32)
    y = (logits + rng.gumbel(size=logits.shape).astype(np.float32)).argmax(1)
    X, X_test, y, y_test = X[:n_rows], X[n_rows:], y[:n_rows], y[n_rows:]
    bags = rng.permutation(n_rows) // 64
    props = np.zeros((bags.max() + 1, 4))
    np.add.at(props, (bags, y), 1.0)
    props = (props / props.sum(1, keepdims=True))[bags]
    variants = {
        "defaults": {},
        "batch_size='auto', n_threads=1": {"n_threads": 1},
        "previous defaults: batch_size=128, n_threads=1": {
            "batch_size": 128,
            "n_threads": 1,
        },
    }
    records, load = [], os.getloadavg()[0]
    for name, params in variants.items():
        clf = LLPClassifier(
            method="dllp", max_epochs=epochs, verbose=0, random_state=seed, **params
        )
        threads = params.get("n_threads", auto_threads())
        tic = time.perf_counter()
        clf.fit(X, bags, props)
        seconds = time.perf_counter() - tic
        records.append(
            {
                "variant": name,
                "params": params,
                "threads": threads,
                "batch_size_": clf.batch_size_,
                "fit_s": round(seconds, 2),
                "rows_per_s": round(n_rows * epochs / seconds),
                "accuracy": float(np.mean(clf.predict(X_test) == y_test)),
            }
        )
        print(json.dumps(records[-1]), flush=True)
    report = {
        "benchmark": "speed at scale, defaults",
        "machine": machine_info(),
        "load_average_before": load,
        "rows": n_rows,
        "epochs": epochs,
        "records": records,
    }
    (out / "speed_scale.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        f"# `LLPClassifier` at its defaults on {n_rows:,} rows (`speed.py --scale`)",
        "",
        f"{n_rows:,} rows x 40 features in random bags of 64, 4 classes, DLLP, "
        f"{epochs} epochs (fit time includes validation of the inputs); accuracy "
        f"on 100,000 further rows. {machine_line(report['machine'])}; load "
        f"average {report['load_average_before']:.2f} before.",
        "",
        "| variant | threads | batch_size_ | fit s | rows/s | accuracy |",
        "|---|---|---|---|---|---|",
    ]
    for r in records:
        lines.append(
            f"| {r['variant']} | {r['threads']} | {r['batch_size_']} | "
            f"{r['fit_s']:.1f} | {r['rows_per_s']:,} | {r['accuracy']:.3f} |"
        )
    (out / "speed_scale.md").write_text("\n".join(lines) + "\n")
    return report


def main(argv=None):
    args = parse_args(argv)
    if args.scale:
        args.out.mkdir(parents=True, exist_ok=True)
        return scale_at_defaults(int(args.scale), args.out)
    if args._worker:
        _worker_main(args._worker)
        return None
    args.out.mkdir(parents=True, exist_ok=True)
    if args.resummarise:
        report = json.loads((args.out / "speed.json").read_text())
        report["summary"] = summarise(report["results"])
        (args.out / "speed.json").write_text(json.dumps(report, indent=2))
        write_markdown(report, args.out / "speed.md")
        return report
    t0 = time.perf_counter()
    if args.profile:
        cfg = {
            "mode": "profile",
            "out": str(args.out),
            "rows": args.rows[0] if args.rows != [10**4, 10**5, 10**6] else 10**5,
            "bagging": "region_x_age",
            "bag_size": None,
            "max_bag_size": 1024,
            "threads": args.threads,
            "device": args.device,
        }
        summary = _spawn(cfg, timeout=3600)
        print(json.dumps(summary, indent=2))
        print(f"wrote {args.out / 'speed_profile.txt'}")
        return summary
    results = []
    configs = build_configs(args)
    if args.quick:  # one process for all: saves the imports, within a minute
        results = _spawn([{**c, "mode": "time"} for c in configs], timeout=600)
        configs = []
    for r in results:
        _print_result(r, None)
    for cfg in configs:
        t = time.perf_counter()
        r = _spawn({**cfg, "mode": "time"}, timeout=3600)
        results.append(r)
        _print_result(r, time.perf_counter() - t)
    report = {
        "benchmark": "speed",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join(
            [Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]
        ),
        "quick": args.quick,
        "machine": machine_info(resolve_device(args.device)),
        "settings": {
            "network": "sklearn_llp.modules.MLP(n_features, 2): hidden (256, 256)",
            "n_features": N_FEATURES,
            "batch_size": BATCH_SIZE,
            "optimizer": "Adam",
            "lr": LR,
            "vat": VAT_PARAMS,
            "threads": args.threads,
            "warmup_epochs": 1,
            "repeats": args.repeats,
            "repeats_large": args.repeats_large,
            "min_time_s": args.min_time,
            "max_rounds": args.max_rounds,
            "timing": "engines interleaved one epoch at a time in one process per "
            "configuration; epoch_s_median: median over measured epochs; ratios: "
            "median over rounds of the per-round ratio (paired)",
            "memory": "peak RSS (VmHWM, reset through /proc/self/clear_refs after "
            "gc + malloc_trim) during each engine's first epoch minus RSS before it; "
            "on CUDA torch.cuda.max_memory_allocated above the allocation before",
        },
        "results": results,
    }
    report["summary"] = summarise(results)
    report["wall_s"] = time.perf_counter() - t0
    (args.out / "speed.json").write_text(json.dumps(report, indent=2))
    write_markdown(report, args.out / "speed.md")
    print(f"wrote {args.out / 'speed.json'} and speed.md in {report['wall_s']:.0f} s")
    return report


if __name__ == "__main__":
    main()
