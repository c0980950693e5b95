"""Cost of the deterministic segment sums against the ``index_add_`` they replace
(what is timed: ``benchmarks/README.md``, section ``studies/segment_sum.py``).

python benchmarks/studies/segment_sum.py  # -> results/segment_sum.json
python benchmarks/studies/segment_sum.py --quick --out /tmp
"""

import argparse
import os
import statistics
import sys
import time
from functools import partial
from pathlib import Path

import torch

from sklearn_llp.methods._rot import sinkhorn_pseudo_labels
from sklearn_llp.methods._segments import LOG_EPS, gather_rows, proportion_loss

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for _common
from _common import RESULTS_DIR, write_results  # noqa: E402


def old_sum(values, segments, n):  # the former code, from here to old_sinkhorn
    return values.new_zeros((n, *values.shape[1:])).index_add_(0, segments, values)


def old_proportion_loss(logits, segments, bag_props):
    probs, n = torch.softmax(logits.float(), dim=1), len(bag_props)
    sums = old_sum(probs, segments, n)
    bag_probs = sums / old_sum(probs.new_ones(len(probs)), segments, n)[:, None]
    return -(bag_props.float() * torch.log(bag_probs + LOG_EPS)).sum(1).mean()


@torch.no_grad()
def old_sinkhorn(log_probs, segments, bag_props, n_iter=50):
    n, mass = len(bag_props), torch.ones_like(log_probs[:, :1])
    props = bag_props / bag_props.sum(1, keepdim=True)
    log_counts = (props * old_sum(mass, segments, n)).log()
    tiny = torch.finfo(log_probs.dtype).tiny
    log_plan = log_probs - torch.logsumexp(log_probs, dim=1, keepdim=True)
    for _ in range(n_iter):
        columns = old_sum(mass * log_plan.exp(), segments, n)
        log_plan = log_plan + (log_counts - columns.clamp_min(tiny).log())[segments]
        log_plan = log_plan - torch.logsumexp(log_plan, dim=1, keepdim=True)
    return log_plan.exp()


def paired_us(new, old, repeats, min_time=0.05):
    """Median times (us) of loops of calls, new and old in turns (the order
    swapped every round) so that both see the same load."""
    new(), old()  # warm up, then size the loops to ``min_time``
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < min_time:
        new()
        calls += 1
    times = {new: [], old: []}
    for round_ in range(repeats):
        for fn in (new, old) if round_ % 2 else (old, new):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[fn].append((time.perf_counter() - start) / calls * 1e6)
    ratios = [a / b for a, b in zip(times[new], times[old])]
    return {
        "deterministic_us": round(statistics.median(times[new]), 1),
        "index_add_us": round(statistics.median(times[old]), 1),
        "ratio": round(statistics.median(ratios), 3),
    }


def case(rows, bag, mixed, repeats, k=10):
    gen = torch.Generator().manual_seed(rows + bag)
    bag = min(bag, rows)
    sizes = torch.full((rows // bag,), bag)
    if mixed:  # sizes from bag/2 to 3 bag/2, the last one fills the batch
        low, high = bag // 2, bag + bag // 2 + 1
        sizes = torch.randint(low, high, (rows // bag,), generator=gen)
        sizes = sizes[: int((sizes.cumsum(0) < rows).sum()) + 1]
        sizes[-1] = rows - sizes[:-1].sum()
    segments = torch.arange(len(sizes)).repeat_interleave(sizes)
    logits = torch.randn(rows, k, generator=gen, requires_grad=True)
    props = torch.softmax(torch.randn(len(sizes), k, generator=gen), 1)
    log_probs = torch.log_softmax(logits.detach(), 1)
    # overlapping bags for the gather: every row in two bags
    members = torch.cat([torch.randperm(rows, generator=gen) for _ in range(2)])
    upstream = torch.randn(2 * rows, k, generator=gen)

    def loss_step(loss_fn):  # forward and backward: the loss and the gradient
        logits.grad = None
        loss = loss_fn(logits, segments, props)
        loss.backward()
        return torch.cat([loss.detach().view(1), logits.grad.ravel()])

    def take_step(gather):
        logits.grad = None
        (gather(logits, members) * upstream).sum().backward()
        return logits.grad.clone()

    def sinkhorn_step(sinkhorn):
        return sinkhorn(log_probs, segments, props)

    pairs = {  # name: (how it is run, the deterministic code, the former code)
        "proportion_loss": (loss_step, proportion_loss, old_proportion_loss),
        "take": (take_step, gather_rows, torch.Tensor.__getitem__),
        "sinkhorn_50": (sinkhorn_step, sinkhorn_pseudo_labels, old_sinkhorn),
    }
    out = {"rows": rows, "bag": bag, "bags": "mixed" if mixed else "uniform"}
    for name, (step, new, old) in pairs.items():
        new, old = partial(step, new), partial(step, old)
        out[name] = paired_us(new, old, repeats)
        out[name]["max_abs_diff"] = float((new() - old()).abs().max())
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=RESULTS_DIR, type=Path)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="one size, 3 repeats")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    grid = [(r, b, m) for r in (128, 2048, 8192) for b in (16, 64, 256) for m in (0, 1)]
    grid, repeats = (grid[:1], 3) if args.quick else (grid, args.repeats)
    report = dict(torch=torch.__version__, threads=1, repeats=repeats)
    report["loadavg_at_start"] = os.getloadavg()  # a shared machine is noisy
    report["results"] = [case(*config, repeats) for config in grid]
    print(write_results("segment_sum", report, out_dir=args.out).read_text())


if __name__ == "__main__":
    main()
