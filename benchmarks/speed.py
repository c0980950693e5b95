"""Training speed and memory of ``LLPClassifier`` against a bare PyTorch loop
(LLP/bare x DLLP/VAT, interleaved, a subprocess per configuration);
``--overhead``, ``--scale N``, ``--resummarise``: benchmarks/README.md.
"""

import argparse
import ctypes
import gc
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # for _common
from _common import machine_info, write_results  # noqa: E402

from sklearn_llp import LLPClassifier  # noqa: E402
from sklearn_llp.methods import BagBatch  # noqa: E402
from sklearn_llp.modules import MLP  # noqa: E402
from sklearn_llp.neural._data import BagBatchSampler  # noqa: E402
from sklearn_llp.neural._runtime import auto_threads, resolve_device  # noqa: E402

# one-hot blocks of Adult's cardinalities (workclass ... native country)
CARDINALITIES = (9, 16, 7, 15, 6, 5, 2, 40)
N_NUMERIC = 6
N_FEATURES = sum(CARDINALITIES) + N_NUMERIC
AGE_EDGES = (25, 35, 45, 55, 65, 75)  # 7 age bands
ROWS_PER_REGION, BATCH_SIZE, LR = 512, 128, 1e-3
LLP_PARAMS = {"max_epochs": 1, "batch_size": BATCH_SIZE, "lr": LR, "verbose": 0}
VAT_PARAMS = {"alpha": 0.05, "eps": 1.0, "xi": 1e-6, "rampup": 0.4}
ENGINES = ("llp-dllp", "bare-dllp", "llp-vat", "bare-vat")
BLAS_LIBS = ("OMP", "MKL", "OPENBLAS")  # their threads = torch's, in workers
TARGET_LLP_OVER_BARE, TARGET_VAT_OVER_DLLP = 1.15, 3.0
TIMING = (
    "engines interleaved one epoch at a time in one process per configuration; "
    "epoch_s_median: median over measured epochs; ratios: median over rounds of "
    "the per-round ratio (paired)"
)
MEMORY = (
    "peak RSS (VmHWM, reset through /proc/self/clear_refs after gc + malloc_trim) "
    "during each engine's first epoch minus RSS before it; on CUDA "
    "torch.cuda.max_memory_allocated above the allocation before"
)


def codes_of(bags):
    return np.unique(bags, return_inverse=True)[1].ravel()


def make_bags(n_rows, bagging, bag_size, seed=0):
    """Census-like ``X`` (106 columns), bag ids, sample-aligned proportions,
    labels (about 24 % ones); bags are Zipf-sized regions x age bands or
    uniform."""
    rng = np.random.default_rng(seed)
    X = np.zeros((n_rows, N_FEATURES), dtype=np.float32)
    offset = 0
    for card in CARDINALITIES:
        p = 1.0 / np.arange(1, card + 1)
        X[np.arange(n_rows), offset + rng.choice(card, n_rows, p=p / p.sum())] = 1.0
        offset += card
    age = np.clip(17 + rng.gamma(4.0, 5.5, n_rows), 17, 90).astype(np.float32)
    X[:, offset] = (age - 38.6) / 13.6
    X[:, offset + 1 :] = rng.standard_normal((n_rows, N_NUMERIC - 1), np.float32)
    w = rng.normal(0.0, 0.7, N_FEATURES).astype(np.float32)
    score = X @ w + rng.logistic(size=n_rows).astype(np.float32)
    y = (score > np.quantile(score, 0.76)).astype(np.int64)
    weights = 1.0 / (np.arange(max(2, n_rows // ROWS_PER_REGION)) + 10.0)
    region = rng.choice(len(weights), n_rows, p=weights / weights.sum())
    if bagging == "region_x_age":
        bags = region * (len(AGE_EDGES) + 1) + np.searchsorted(AGE_EDGES, age, "right")
    else:  # uniform
        bags = np.empty(n_rows, dtype=np.int64)
        bags[np.random.default_rng(seed + 1).permutation(n_rows)] = (
            np.arange(n_rows) // bag_size
        )
    codes = codes_of(bags)
    positive = np.bincount(codes, weights=y) / np.bincount(codes)
    return X, bags, np.stack([1.0 - positive, positive], axis=1)[codes], y


def _status_kb(field):
    with open("/proc/self/status") as f:
        return next((int(s.split()[1]) for s in f if s.startswith(field + ":")), None)


def peak_memory(device, work):
    """``work()`` and its peak memory in MiB above the memory in use before
    it (None where the peak RSS cannot be reset: Linux >= 4.0 only)."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        result = work()
        torch.cuda.synchronize()
        return result, (torch.cuda.max_memory_allocated() - base) / 2**20
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        Path("/proc/self/clear_refs").write_text("5")
        base = _status_kb("VmRSS")
    except OSError:
        base = None
    result = work()
    peak = None if base is None else _status_kb("VmHWM")
    return result, None if peak is None else (peak - base) / 1024


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def _kl(target_log_probs, logits):
    log_probs = torch.log_softmax(logits, dim=1)
    return (target_log_probs.exp() * (target_log_probs - log_probs)).sum(1).mean()


class BareLoop:
    """What LLPClassifier does, by hand: the same MLP and whole-bag batches
    (``BagBatchSampler``), bag means by ``index_add_``, optional VAT, Adam."""

    def __init__(self, X, bags, props, method, max_bag_size, device, seed, epochs):
        self.method, self.device, self.cap = method, device, max_bag_size or len(X)
        sizes = np.bincount(codes_of(bags))
        self.members = np.argsort(codes_of(bags), kind="stable")
        self.pair_bags = np.repeat(np.arange(len(sizes)), sizes)
        first = self.members[np.concatenate([[0], np.cumsum(sizes)[:-1]])]
        self.bag_props = torch.as_tensor(props[first], dtype=torch.float32)
        self.X = torch.from_numpy(X)
        self.sampler = BagBatchSampler(
            self.pair_bags, BATCH_SIZE, max_bag_size=max_bag_size, random_state=seed
        )
        torch.manual_seed(seed)
        self.model = MLP(X.shape[1], props.shape[1]).to(device)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=LR)
        self.step, self.total_steps = 0, len(self.sampler) * epochs

    def _vat_loss(self, x, logits):
        target = torch.log_softmax(logits.detach(), dim=1)
        d = torch.nn.functional.normalize(torch.randn_like(x), dim=1)
        d.requires_grad_(True)
        (grad,) = torch.autograd.grad(
            _kl(target, self.model(x + VAT_PARAMS["xi"] * d)), d
        )
        r_adv = VAT_PARAMS["eps"] * torch.nn.functional.normalize(grad, dim=1)
        return _kl(target, self.model(x + r_adv))

    def epoch(self):
        """One epoch; its wall time in seconds."""
        _sync(self.device)
        t0 = time.perf_counter()
        self.model.train()
        total = torch.zeros((), device=self.device)
        for pairs in self.sampler:
            # the sampler keeps every bag contiguous: segments are run ids
            pair_bags = self.pair_bags[pairs]
            new_bag = np.empty(len(pairs), dtype=bool)
            new_bag[0] = True
            np.not_equal(pair_bags[1:], pair_bags[:-1], out=new_bag[1:])
            host = (
                self.X[torch.from_numpy(self.members[pairs])],
                torch.from_numpy(np.cumsum(new_bag) - 1),
                self.bag_props[torch.from_numpy(pair_bags[new_bag])],
            )
            x, segments, bag_props = (t.to(self.device) for t in host)
            self.optimizer.zero_grad(set_to_none=True)
            # a bag above max_bag_size: the exact gradient in chunks of it
            cap = self.cap if np.bincount(pair_bags).max() > self.cap else len(x)
            chunks = [slice(i, i + cap) for i in range(0, len(x), cap)]
            with torch.set_grad_enabled(len(chunks) == 1):
                logits = torch.cat([self.model(x[c]) for c in chunks])
            logits = logits if len(chunks) == 1 else logits.requires_grad_()
            probs, n = torch.softmax(logits, dim=1), len(bag_props)
            sums = probs.new_zeros((n, probs.shape[1])).index_add_(0, segments, probs)
            ones = probs.new_ones(len(segments))
            bag_probs = sums / probs.new_zeros(n).index_add_(0, segments, ones)[:, None]
            loss = -(bag_props * bag_probs.clamp_min(1e-8).log()).sum(1).mean()
            if len(chunks) > 1:
                (grad,), loss = torch.autograd.grad(loss, logits), loss.detach()
            ramp = int(round(VAT_PARAMS["rampup"] * self.total_steps))
            phase = 1.0 - self.step / ramp if self.step < ramp else 0.0
            weight = VAT_PARAMS["alpha"] * math.exp(-5.0 * phase * phase)
            for c in chunks:
                part = logits if len(chunks) == 1 else self.model(x[c])
                step = loss if len(chunks) == 1 else (part * grad[c]).sum()
                if self.method == "vat":
                    share = len(part) / len(x) * weight * self._vat_loss(x[c], part)
                    step, loss = step + share, loss + share.detach()
                step.backward()
            self.optimizer.step()
            self.step += 1
            total += loss.detach()
        float(total)  # the epoch's losses, as a training loop would log them
        _sync(self.device)
        return time.perf_counter() - t0


class LLPEngine:
    """``LLPClassifier`` advanced an epoch a call (``fit``, then ``partial_fit``);
    a callback times the epoch apart from the input checks (keeps ``dataset``)."""

    def __init__(self, X, bags, props, method, max_bag_size, device, seed, **params):
        self.data, self.epoch_times, self.setup_times = (X, bags, props), [], []
        times, engine = self.epoch_times, self
        clock = params.pop("clock", time.perf_counter)

        class EpochClock(Callback):
            def on_epoch_begin(self, net, dataset_train=None, **kwargs):
                engine.dataset = dataset_train
                _sync(device)
                self.t0_ = clock()

            def on_epoch_end(self, net, **kwargs):
                _sync(device)
                times.append(clock() - self.t0_)

        self.clf = LLPClassifier(
            method=method,
            max_bag_size=max_bag_size,
            random_state=seed,
            device=str(device),
            callbacks=[("clock", EpochClock())],
            **(LLP_PARAMS | params),
        )

    def epoch(self):
        """One epoch; its time, without the input checks of the call."""
        t0 = time.perf_counter()
        (self.clf.partial_fit if self.setup_times else self.clf.fit)(*self.data)
        self.setup_times.append(time.perf_counter() - t0 - self.epoch_times[-1])
        return self.epoch_times[-1]


def make_engine(name, X, bags, props, cap, device, seed, epochs):
    """Engine ``llp-dllp``, ``bare-vat``, ...; ``epochs``: bare VAT's ramp-up."""
    kind, method = name.split("-")
    if kind == "llp":
        return LLPEngine(X, bags, props, method, cap, device, seed)
    return BareLoop(X, bags, props, method, cap, device, seed, epochs)


def _setup_torch(cfg):
    """The worker's device, after tiny epochs that absorb torch's lazy setup."""
    torch.set_num_threads(cfg["threads"])
    device = torch.device(resolve_device(cfg["device"]))
    X, bags, props, _ = make_bags(2048, "uniform", 16, seed=99)
    for name in ("bare-dllp", "llp-dllp", "bare-vat", "llp-vat"):
        make_engine(name, X, bags, props, 1024, device, 0, 1).epoch()
    return device


def _count_batches(bags, max_bag_size, seed):
    """Batches drawn in an epoch (``len(sampler)`` only bounds them)."""
    codes = codes_of(bags)
    pair_bags = np.repeat(np.arange(codes.max() + 1), np.bincount(codes))
    sampler = BagBatchSampler(pair_bags, BATCH_SIZE, max_bag_size, random_state=seed)
    return len(sampler.batches())


def run_config(cfg):
    """Time (and measure the memory of) the four engines on one config."""
    t_data = time.perf_counter()
    X, bags, props, _ = make_bags(
        cfg["rows"], cfg["bagging"], cfg.get("bag_size"), seed=cfg["seed"]
    )
    data_s = time.perf_counter() - t_data
    device = _setup_torch(cfg)
    sizes, cap, seed = np.bincount(codes_of(bags)), cfg["max_bag_size"], cfg["seed"]
    used = int(sizes.sum())  # bags above max_bag_size train whole, in chunks
    engines, warmup, epochs = {}, {}, cfg["repeats"] + 1
    for name in ENGINES:  # the first epoch warms up; its memory is measured

        def first_epoch(name=name):
            engines[name] = make_engine(name, X, bags, props, cap, device, seed, epochs)
            return engines[name].epoch()

        warmup[name] = peak_memory(device, first_epoch)  # seconds, MiB
    times, r = {name: [] for name in ENGINES}, 0
    # short epochs get more rounds, until every engine ran min_time seconds
    while r < cfg["repeats"] or (
        min(sum(t) for t in times.values()) < cfg["min_time"] and r < cfg["max_rounds"]
    ):
        # each LLPClassifier epoch next to its bare twin; the order alternates
        for name in ENGINES if r % 2 == 0 else ENGINES[::-1]:
            times[name].append(engines[name].epoch())
        r += 1
    medians = {name: float(np.median(t)) for name, t in times.items()}
    cuda = device.type == "cuda"
    out = cfg | {
        "device": str(device),
        "n_bags": int(len(sizes)),
        "bag_size_min": int(sizes.min()),
        "bag_size_median": float(np.median(sizes)),
        "bag_size_max": int(sizes.max()),
        "bags_over_cap": int((sizes > cap).sum()) if cap else 0,
        "instances_per_epoch": used,
        "batches_per_epoch": _count_batches(bags, cap, seed),
        "data_s": data_s,
        "memory_kind": ("rss_peak_delta", "cuda_max_memory_allocated_delta")[cuda],
        "process_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF)[2] / 1024,
        "engines": {},
    }
    for name in ENGINES:
        row = out["engines"][name] = {
            "epoch_s": times[name],
            "epoch_s_median": medians[name],
            "instances_per_s": used / medians[name],
            "warmup_epoch_s": warmup[name][0],
            "peak_mem_mib": warmup[name][1],
        }
        if name.startswith("llp"):
            setup = engines[name].setup_times
            row["fit_setup_s"] = setup[0]
            row["partial_fit_setup_s_median"] = (
                float(np.median(setup[1:])) if len(setup) > 1 else None
            )

    def paired(a, b):
        """Median over rounds of the ratio of two back-to-back epochs: load
        changes between rounds cancel."""
        return float(np.median(np.divide(times[a], times[b])))

    for m in ("dllp", "vat"):
        llp, bare = f"llp-{m}", f"bare-{m}"
        out[f"llp_over_bare_{m}"] = paired(llp, bare)
        out[f"llp_over_bare_{m}_of_medians"] = medians[llp] / medians[bare]
        out[f"llp_over_bare_{m}_of_minima"] = min(times[llp]) / min(times[bare])
    for kind in ("llp", "bare"):
        out[f"vat_over_dllp_{kind}"] = paired(f"{kind}-vat", f"{kind}-dllp")
    return out


def run_overhead(cfg):
    """Host overhead per step, DLLP and VAT (:func:`_overhead`)."""
    data, device = make_bags(cfg["rows"], "uniform", 16)[:3], _setup_torch(cfg)
    return {m: _overhead(m, *data, device, cfg["repeats"]) for m in ("dllp", "vat")}


def _overhead(method, X, bags, props, device, repeats, now=time.process_time):
    """A tiny MLP (8 hidden units: the arithmetic is small), CPU time, us a
    step. Interleaved: an ``LLPClassifier`` epoch, the bare step over the same
    batches made once (the same module class, Adam and the method's own
    loss), and making the batches alone (``get_iterator``)."""
    tiny = {"module__hidden_sizes": (8,), "n_threads": 1, "clock": now}
    llp = LLPEngine(X, bags, props, method, None, device, 0, **tiny)
    llp.epoch()  # warms up
    clf, steps = llp.clf, [0]
    batches = list(clf.get_iterator(llp.dataset, training=True))
    model = MLP(X.shape[1], 2, hidden_sizes=(8,)).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)

    def bare():
        t0, total = now(), 0.0
        for x, t in batches:
            optimizer.zero_grad()
            logits = model(x)
            bag = BagBatch(t["segments"], t["bag_props"], t["bag_index"])
            loss = clf.method_.get_loss(model, x, logits, bag, steps[0], 10**9)
            loss.backward()
            optimizer.step()
            total, steps[0] = total + loss.detach(), steps[0] + 1
        float(total)
        return now() - t0

    def making():
        t0 = now()
        for _ in clf.get_iterator(llp.dataset, training=True):
            pass
        return now() - t0

    runs = {"llp": llp.epoch, "bare": bare, "making": making}
    times = {kind: [] for kind in runs}
    for r in range(repeats):  # the order alternates
        for kind in list(runs)[:: 1 if r % 2 else -1]:
            times[kind].append(runs[kind]() / len(batches) * 1e6)
    us = {kind: float(np.median(t)) for kind, t in times.items()}
    return {f"{kind}_us_per_step": v for kind, v in us.items()} | {
        "llp_over_bare": float(np.median(np.divide(times["llp"], times["bare"]))),
        "engine_us_per_step": us["llp"] - us["bare"] - us["making"],
        "us_per_step": times,
    }


def overhead_markdown(report):
    s, keys = report["settings"], ("bare", "llp", "over", "making", "engine")
    lines = [
        "# Host overhead per step (`speed.py --overhead`)\n",
        f"{s['rows']:,} census-like rows in bags of 16, {s['network']}, "
        f"{BATCH_SIZE} rows a step, 1 thread, {machine_line(report['machine'])}"
        f"; CPU time, medians of {s['repeats']} interleaved epochs, LLP/bare "
        "the median paired ratio. *engine*: LLP - bare - making the batches.\n",
        "| method | bare us/step | LLP us/step | LLP/bare | making the batches "
        "us/step | engine us/step |\n|---|---|---|---|---|---|",
    ]
    for m, r in report["results"].items():
        r = r | {"over_us_per_step": r["llp_over_bare"]}
        cells = [f"{r[k + '_us_per_step']:.{2 if k == 'over' else 0}f}" for k in keys]
        lines.append(f"| {m} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


def _spawn(cfg, timeout):
    """Run a configuration (or a list) in a fresh process; its result."""
    threads = str((cfg[0] if isinstance(cfg, list) else cfg)["threads"])
    env = os.environ | {f"{lib}_NUM_THREADS": threads for lib in BLAS_LIBS}
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
    raise RuntimeError(f"worker failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


def _worker_main(spec):
    cfg = json.loads(spec)
    if isinstance(cfg, list):  # --quick: every configuration in one process
        result = [run_config(c) for c in cfg]
    else:
        result = run_config(cfg) if "experiment" in cfg else run_overhead(cfg)
    print("RESULT " + json.dumps(result), flush=True)


def build_configs(args):
    common = {"threads": args.threads, "device": args.device, "seed": 0}
    common.update(min_time=args.min_time, max_rounds=args.max_rounds)
    large = min(args.repeats, args.repeats_large)  # 10^6 rows or uncapped bags
    configs = [
        {**common, "experiment": "rows", "rows": rows, "bagging": "region_x_age"}
        | {"bag_size": None, "max_bag_size": 1024}
        | {"repeats": args.repeats if rows < 10**6 else large}
        for rows in args.rows
    ]
    for bag_size in args.bag_sizes:
        for cap in [1024] if bag_size <= 1024 else [1024, None]:
            # LLP needs two bags at least: the largest size gets two
            rows = max(args.bag_size_rows, 2 * bag_size)
            configs.append(
                {**common, "experiment": "bag_size", "rows": rows, "bagging": "uniform"}
                | {"bag_size": bag_size, "max_bag_size": cap}
                | {"repeats": args.repeats if cap else large}
            )
    return configs


def summarise(results):
    """Targets: LLP/bare <= 1.15, VAT/DLLP <= 3, memory flat in bag size."""
    keys = ("experiment", "rows", "bag_size", "max_bag_size")
    ratios = [
        (r[f"llp_over_bare_{m}"], m, *(r[k] for k in keys[:3]))
        for r in results
        for m in ("dllp", "vat")
    ]
    worst = max(ratios)
    vat = [r["vat_over_dllp_llp"] for r in results]
    vat_worst = max(results, key=lambda r: r["vat_over_dllp_llp"])
    with_cap = [r["vat_over_dllp_llp"] for r in results if r["max_bag_size"]]
    by_size = [r for r in results if r["experiment"] == "bag_size"]
    flat = {}
    for name in ENGINES:
        mems = [
            r["engines"][name]["peak_mem_mib"] for r in by_size if r["max_bag_size"]
        ]
        if mems := [m for m in mems if m is not None]:
            flat[name] = {"min_mib": min(mems), "max_mib": max(mems)}
    spreads = [f["max_mib"] - f["min_mib"] for n, f in flat.items() if n[:3] == "llp"]
    return {
        "llp_over_bare": {
            "target": TARGET_LLP_OVER_BARE,
            "max": worst[0],
            "worst": dict(zip(("method", *keys[:3]), worst[1:], strict=True)),
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
            "met_with_max_bag_size": max(with_cap, default=0) <= TARGET_VAT_OVER_DLLP,
            "worst": {k: vat_worst[k] for k in keys}
            | {"bare_vat_over_dllp": vat_worst["vat_over_dllp_bare"]},
        },
        "memory_flat_in_bag_size": {
            "with_max_bag_size_1024": flat,
            "without_cap": [
                {"bag_size": r["bag_size"]}
                | {
                    "peak_mem_mib": {
                        n: r["engines"][n]["peak_mem_mib"] for n in ENGINES
                    }
                }
                for r in by_size
                if not r["max_bag_size"]
            ],
            "llp_spread_mib": max(spreads, default=None),
        },
    }


def _mib(value):
    return "n/a" if value is None else f"{value:.0f}"


def machine_line(machine):
    """CPU, cores and torch (keys before ``_common.machine_info`` included)."""
    cpu = machine.get("cpu") or machine.get("cpu_model", "?")
    cores = machine.get("usable_cpus", machine.get("nproc"))
    torch_version = machine.get("versions", {}).get("torch") or machine.get("torch")
    return f"{cpu}, {cores} cores, torch {torch_version}"


def speed_markdown(report):
    res, s = report["results"], report["summary"]
    lines = [
        "# Training speed: LLPClassifier vs a bare PyTorch loop",
        "",
        f"Machine: {machine_line(report['machine'])}, {res[0]['threads']} torch "
        f"thread(s), device {res[0]['device']}. Epoch times are medians over "
        "the measured epochs (first epoch of every engine discarded); the four "
        "engines ran interleaved, one epoch at a time, in one process per row; "
        "LLP/bare is the median over rounds of the ratio of back-to-back epochs. "
        "Memory: peak RSS during the first epoch above the RSS before it "
        "(MiB; includes `fit` setup for LLPClassifier).",
        "",
        "| experiment | rows | bags (min/median/max size) | max_bag_size | inst./epoch "
        "| method | bare s/epoch | LLP s/epoch | LLP/bare | LLP inst./s "
        "| bare MiB | LLP MiB |",
        "|" + "---|" * 12,
    ]
    for r, m in ((r, m) for r in res for m in ("dllp", "vat")):
        b, llp = r["engines"][f"bare-{m}"], r["engines"][f"llp-{m}"]
        cut = " (cut)" * (r["instances_per_epoch"] < r["rows"])  # before 57c80f7
        lines.append(
            f"| {r['experiment']} ({r['bagging']}) | {r['rows']:,} | {r['n_bags']} "
            f"({r['bag_size_min']}/{r['bag_size_median']:g}/{r['bag_size_max']}) "
            f"| {r['max_bag_size']} | {r['instances_per_epoch']:,}{cut} | {m} "
            f"| {b['epoch_s_median']:.3f} | {llp['epoch_s_median']:.3f} "
            f"| {r[f'llp_over_bare_{m}']:.2f} | {llp['instances_per_s']:,.0f} "
            f"| {_mib(b['peak_mem_mib'])} | {_mib(llp['peak_mem_mib'])} |"
        )
    lob, vod = s["llp_over_bare"], s["vat_over_dllp"]
    flat, met = s["memory_flat_in_bag_size"], {True: "met", False: "NOT met"}
    lines += [
        "\n(cut): bags above max_bag_size trained that many rows an epoch, drawn "
        "afresh, here and in the bare loop (runs before 57c80f7, 2026-11-28; later "
        "ones train them whole, in chunks); the targets below count these rows.\n"
        * any("(cut)" in row for row in lines),
        "## Targets",
        "",
        f"* LLPClassifier epoch time <= {lob['target']}x the bare loop: "
        f"{met[lob['met']]} ({lob['n_met']}/{lob['n']} rows; worst "
        f"{lob['max']:.2f}x, {lob['worst']['method']} in "
        f"{lob['worst']['experiment']} with {lob['worst']['rows']:,} rows).",
        f"* LLP-VAT epoch <= {vod['target']}x DLLP (LLPClassifier, paired): "
        f"{met[vod['met']]} (met in {vod['n_met']}/{vod['n']} rows, "
        f"{vod['min']:.2f}x to {vod['max']:.2f}x; "
        f"{met[vod['met_with_max_bag_size']]} in every row with a max_bag_size). "
        f"Worst: {vod['max']:.2f}x with {vod['worst']['rows']:,} rows, bags of "
        f"{vod['worst']['bag_size']}, max_bag_size={vod['worst']['max_bag_size']}, "
        f"where the bare loop takes {vod['worst']['bare_vat_over_dllp']:.2f}x: "
        "the cost of VAT's extra passes, not of LLPClassifier.",
    ]
    if flat["with_max_bag_size_1024"]:
        spread = ", ".join(
            f"{n} {v['min_mib']:.0f}-{v['max_mib']:.0f} MiB"
            for n, v in flat["with_max_bag_size_1024"].items()
        )
        sizes = sorted({r["bag_size"] for r in res if r["experiment"] == "bag_size"})
        lines.append(
            f"* Memory flat in bag size: spread {flat['llp_spread_mib']:.0f} MiB for "
            f"LLPClassifier with max_bag_size=1024 (bag sizes {sizes}): {spread}."
        )
        for u in flat["without_cap"]:
            mems = ", ".join(f"{n} {_mib(v)}" for n, v in u["peak_mem_mib"].items())
            lines.append(f"  Without the cap, bags of {u['bag_size']:,}: {mems} MiB.")
    return "\n".join(lines + ["", f"Total wall time: {report['wall_s']:.0f} s.", ""])


def scale_at_defaults(n_rows, out, epochs=2, seed=0):
    """Rows/s and accuracy of ``LLPClassifier`` at its defaults on ``n_rows``
    x 40 features in random bags of 64, 4 classes, DLLP, against the previous
    defaults (128 rows a step, one thread)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_rows + 100_000, 40), dtype=np.float32)
    logits = X @ rng.normal(0.0, 0.5, (40, 4)).astype(np.float32)
    y = (logits + rng.gumbel(size=logits.shape).astype(np.float32)).argmax(1)
    X, X_test, y, y_test = X[:n_rows], X[n_rows:], y[:n_rows], y[n_rows:]
    bags = rng.permutation(n_rows) // 64
    props = np.zeros((bags.max() + 1, 4))
    np.add.at(props, (bags, y), 1.0)
    props = (props / props.sum(1, keepdims=True))[bags]
    previous = {"batch_size": 128, "n_threads": 1}
    variants = {"defaults": {}, "batch_size='auto', n_threads=1": {"n_threads": 1}}
    variants["previous defaults: batch_size=128, n_threads=1"] = previous
    records, load = [], os.getloadavg()[0]
    for name, params in variants.items():
        clf = LLPClassifier(max_epochs=epochs, verbose=0, random_state=seed, **params)
        tic = time.perf_counter()
        clf.set_params(method="dllp").fit(X, bags, props)
        seconds = time.perf_counter() - tic
        records.append(
            {
                "variant": name,
                "params": params,
                "threads": params.get("n_threads", auto_threads()),
                "batch_size_": clf.batch_size_,
                "fit_s": round(seconds, 2),
                "rows_per_s": round(n_rows * epochs / seconds),
                "accuracy": float(np.mean(clf.predict(X_test) == y_test)),
            }
        )
        print(json.dumps(records[-1]), flush=True)
    report = {"benchmark": "speed at scale, defaults", "machine": machine_info()}
    report |= {"load_average_before": load, "rows": n_rows, "epochs": epochs}
    report["records"] = records
    write_results("speed_scale", report, scale_markdown(report), out, indent=2)
    return report


def scale_markdown(report):
    n, machine = report["rows"], report["machine"]
    lines = [
        f"# `LLPClassifier` at its defaults on {n:,} rows (`speed.py --scale`)",
        "",
        f"{n:,} rows x 40 features in random bags of 64, 4 classes, DLLP, "
        f"{report['epochs']} epochs (fit time includes validation of the inputs); "
        "accuracy on 100,000 further rows. "
        f"{machine.get('cpu') or machine.get('cpu_model')}; load average "
        f"{report['load_average_before']:.2f} before.",
        "",
        "| variant | threads | batch_size_ | fit s | rows/s | accuracy |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['variant']} | {r['threads']} | {r['batch_size_']} | "
        f"{r['fit_s']:.1f} | {r['rows_per_s']:,} | {r['accuracy']:.3f} |"
        for r in report["records"]
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    def sizes(text):
        return [int(float(v)) for v in text.split(",")] if text else []

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="10^4 rows, 2 epochs (<1 min)")
    add("--out", type=Path, default=HERE / "results")
    add("--rows", type=sizes, default=[10**4, 10**5, 10**6], help="e.g. 1e4,1e5")
    add("--bag-sizes", type=sizes, default=[16, 256, 4096, 10**5], help="uniform")
    add("--bag-size-rows", type=int, default=10**5)
    add("--repeats", type=int, default=3, help="measured epochs (after a warm-up)")
    add("--repeats-large", type=int, default=3, help="for 10^6 rows or no cap")
    add("--min-time", type=float, default=4.0, help="more rounds until timed so long")
    add("--max-rounds", type=int, default=25)
    add("--threads", type=int, default=1, help="torch threads")
    add("--device", default="auto", help="auto, cpu or cuda")
    add("--overhead", action="store_true", help="host us per step, tiny MLP")
    add("--resummarise", action="store_true", help="speed.md (and speed_scale.md)")
    add("--scale", type=float, help="only the defaults at scale: this many rows")
    add("--_worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.bag_sizes, args.bag_size_rows = [10**4], [16, 10**4], 10**4
        args.repeats, args.min_time = 1, 0.0
    return args


def write_speed(report, out):
    """speed.json (no final newline, as committed) and speed.md."""
    (out / "speed.json").write_text(json.dumps(report, indent=2))
    (out / "speed.md").write_text(speed_markdown(report))


def main(argv=None):
    args = parse_args(argv)
    if args._worker:
        return _worker_main(args._worker)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.scale:
        return scale_at_defaults(int(args.scale), args.out)
    if args.resummarise:  # the markdown from the JSON (and the summary again)
        report = json.loads((args.out / "speed.json").read_text())
        write_speed(report | {"summary": summarise(report["results"])}, args.out)
        if (args.out / "speed_scale.json").is_file():
            scale = json.loads((args.out / "speed_scale.json").read_text())
            (args.out / "speed_scale.md").write_text(scale_markdown(scale))
        return report
    common = {"threads": args.threads, "device": args.device}
    if args.overhead:  # 20,480 rows, 3 x --repeats epochs
        cfg = common | {"rows": 20480, "repeats": 3 * args.repeats}
        report = {"machine": machine_info(), "results": _spawn(cfg, 600)}
        report["settings"] = cfg | {"network": "MLP(106, 2, hidden_sizes=(8,))"}
        write_results("speed_overhead", report, overhead_markdown(report), args.out)
        return print(overhead_markdown(report))
    t0 = time.perf_counter()
    if args.quick:  # one process for all: saves the imports, within a minute
        results = _spawn(build_configs(args), timeout=600)
    else:
        results = [_spawn(cfg, timeout=3600) for cfg in build_configs(args)]
    for r in results:
        epochs = ", ".join(
            f"{n} {r['engines'][n]['epoch_s_median']:.3f}s" for n in ENGINES
        )
        print(
            f"{r['experiment']:8s} rows={r['rows']:>9,} bag={r['bag_size']} "
            f"cap={r['max_bag_size']}: {epochs} | LLP/bare dllp "
            f"{r['llp_over_bare_dllp']:.2f} vat {r['llp_over_bare_vat']:.2f}",
            flush=True,
        )
    command = argv if argv is not None else sys.argv[1:]
    report = {
        "benchmark": "speed",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": " ".join([Path(sys.argv[0]).name, *command]),
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
            "timing": TIMING,
            "memory": MEMORY,
        },
        "results": results,
        "summary": summarise(results),
    }
    report["wall_s"] = time.perf_counter() - t0
    write_speed(report, args.out)
    print(f"wrote {args.out / 'speed.json'} and speed.md in {report['wall_s']:.0f} s")
    return report


if __name__ == "__main__":
    main()
