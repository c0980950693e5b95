"""``n_threads="auto"`` against a bare PyTorch loop at the same threads, idle
and beside one busy process, and whether a seeded fit repeats bit for bit.

The epochs are timed by ``benchmarks/speed.py``'s engines (``run_config``);
the machine's load is measured, never given to the library.

python benchmarks/studies/threads.py  # -> benchmarks/results/threads.json
python benchmarks/studies/threads.py --quick --out /tmp
"""

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # speed, _common
import speed  # noqa: E402
from _common import RESULTS_DIR, machine_info, write_results  # noqa: E402

from sklearn_llp import LLPClassifier  # noqa: E402
from sklearn_llp.neural._runtime import auto_threads  # noqa: E402

DEFAULT_THREADS = torch.get_num_threads()  # before anything sets it
GOALS = {"llp_over_bare at equal threads": 1.15, "llp_over_bare at defaults": 1.25}


def _busy_ticks():
    """Busy clock ticks of all CPUs since boot (all but idle and iowait)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4]


def with_load(work):
    """``work()``, and the cores other processes kept busy meanwhile: the
    machine's busy CPU time (``/proc/stat``) less this process's, per second."""
    wall, ticks, own = time.perf_counter(), _busy_ticks(), time.process_time()
    result = work()
    wall = time.perf_counter() - wall
    busy = (_busy_ticks() - ticks) / os.sysconf("SC_CLK_TCK")
    return result, round(max(busy - (time.process_time() - own), 0.0) / wall, 2)


def quiet(wait):
    """Wait at most ``wait`` s for 5 s in which other processes keep less than
    a fifth of a core busy; whether they came."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if with_load(lambda: time.sleep(5))[1] < 0.2:
            return True
    return False


def timed(threads, rows, repeats, min_time):
    """The four engines of speed.py, torch at ``threads`` (LLPClassifier at
    ``n_threads="auto"``), interleaved epoch by epoch."""
    cfg = dict(experiment="threads", threads=threads, device="cpu", seed=0)
    cfg.update(rows=rows, bagging="uniform", bag_size=16, max_bag_size=1024)
    cfg.update(repeats=repeats, min_time=min_time, max_rounds=25)
    result, others = with_load(lambda: speed.run_config(cfg))
    torch.set_num_threads(threads)
    out = {"torch_threads": threads, "auto_threads": auto_threads()}
    out["epoch_s"] = {
        name: round(row["epoch_s_median"], 4) for name, row in result["engines"].items()
    }
    for m in ("dllp", "vat"):
        out[f"llp_over_bare_{m}"] = round(result[f"llp_over_bare_{m}"], 3)
    return out | {"others_busy_cores": others, "loadavg_after": os.getloadavg()}


def seeded_weights(X, bags, props, **params):
    """Batches of 1024 rows: large enough that 1 and 2 threads round apart."""
    clf = LLPClassifier(max_epochs=2, batch_size=1024, random_state=0, verbose=0)
    clf.set_params(device="cpu", **params).fit(X, bags, props)
    return [p.detach().clone() for p in clf.module_.parameters()]


def markdown(report):
    m = report["machine"]
    lines = [
        f'# n_threads="auto" against a bare loop at the same threads\n\n'
        f"{m['cpu']}, {m['usable_cpus']} usable CPUs, torch "
        f"{m['versions']['torch']}; idle: {report['rows']} rows, busy (beside "
        f"one busy process, 1 measured epoch): {report['busy_rows']} rows. "
        "Epoch medians of benchmarks/speed.py's engines, interleaved; LLP/bare: "
        "median over rounds of back-to-back epochs.\n",
        "| scenario | torch threads | auto | method | bare s/epoch | LLP s/epoch "
        "| LLP/bare (paired) | other processes' busy cores |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for scenario in ("idle", "busy"):
        for row in report[scenario].values():
            for m in ("dllp", "vat"):
                lines.append(
                    f"| {scenario} | {row['torch_threads']} | {row['auto_threads']} "
                    f"| {m} | {row['epoch_s'][f'bare-{m}']:.3f} "
                    f"| {row['epoch_s'][f'llp-{m}']:.3f} "
                    f"| {row[f'llp_over_bare_{m}']:.2f} | {row['others_busy_cores']} |"
                )
    seeded = ", ".join(f"{k}: {v}" for k, v in report["seeded_fit"].items())
    return (
        "\n".join(lines) + f"\n\nSeeded fits ({report['busy_rows']} rows): {seeded}.\n"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--rows", type=int, default=100_000)
    add("--repeats", type=int, default=3, help="measured epochs per engine")
    add("--min-time", type=float, default=4.0, help="more rounds until so long")
    add("--busy-rows", type=int, default=10_000, help="beside a busy process")
    add("--wait-idle", type=float, default=0, help="s to wait for a quiet machine")
    add("--quick", action="store_true", help="10^4 rows (busy: 2,000), 1 epoch")
    add("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    if args.quick:
        args.rows, args.busy_rows, args.repeats, args.min_time = 10**4, 2000, 1, 0
    report = {"machine": machine_info("cpu"), "auto_threads": auto_threads()}
    report |= {"default_threads": DEFAULT_THREADS, "goals": GOALS}
    report |= {"rows": args.rows, "busy_rows": args.busy_rows}
    X, bags, props, _ = speed.make_bags(args.busy_rows, "uniform", 16)
    idle_weights = seeded_weights(X, bags, props)
    one_thread = seeded_weights(X, bags, props, n_threads=1)
    threads = sorted({1, DEFAULT_THREADS})
    report["idle"] = {}
    for t in threads:
        came = quiet(args.wait_idle)
        report["idle"][t] = timed(t, args.rows, args.repeats, args.min_time)
        report["idle"][t]["quiet_before"] = came
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)
        # 1 measured epoch: at 2 threads beside it an epoch takes 2-45x longer
        report["busy"] = {t: timed(t, args.busy_rows, 1, 0.0) for t in threads}
        torch.set_num_threads(DEFAULT_THREADS)
        busy_weights = seeded_weights(X, bags, props)
    finally:
        busy.kill()
        busy.wait()
    report["seeded_fit"] = {
        "auto, idle and busy: same weights": all(
            map(torch.equal, idle_weights, busy_weights)
        ),
        "n_threads=1: other weights": not all(
            map(torch.equal, idle_weights, one_thread)
        ),
    }
    report["loadavg_at_end"] = os.getloadavg()
    print(markdown(report))
    write_results("threads", report, markdown(report), out_dir=args.out)
    return report


if __name__ == "__main__":
    main()
