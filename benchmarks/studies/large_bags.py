"""Large bags (issue 33): which ingredients lift an MLP learned from bags of 256?

A plain-PyTorch prototype, so that recipes are ranked before any becomes a
library method: Fashion-MNIST (60,000 rows) and Adult (32,561 rows) in random
bags of 256, the library's default MLP (784/108-256-256-C, Adam), 100 epochs.
Recipes (each one switch on top of the one before where named so):

- ``dllp``: proportion loss, ``bags`` bags a step, Adam ``lr``;
- ``cosine``: the learning rate decays to 0 on a cosine;
- ``pl``: after ``warmup`` epochs an instance loss on exact-count pseudo-labels
  (Sinkhorn with each bag's class counts as column sums, then argmax), each
  row weighted by its assignment's confidence, weight ramped to ``pl_weight``;
- ``cons``: consistency under feature corruption, KL(f(x) || f(x~)), where
  x~ takes ``corrupt`` of its features from other rows of the batch;
- ``scarf``: contrastive pretraining of the hidden layers first (SCARF:
  InfoNCE between a row and its corrupted copy, ``pretrain`` epochs).

Accuracy on the test rows: argmax, and (two classes) the prior-matched
threshold that the library uses. Writes ``large_bags.{json,md}``. It
imports only numpy and torch (the lent GPU image had no skorch, which
importing ``sklearn_llp`` needs), so ``mlp`` and ``sinkhorn_labels`` stand in
for ``sklearn_llp.modules.MLP`` and ``methods.functional.sinkhorn_pseudo_labels``
(30 iterations, then argmax); a method built from these recipes uses those.

    python benchmarks/studies/large_bags.py --data DIR --out DIR [--quick]

``--data`` holds ``fashion.npz`` and ``adult.npz`` (``--prepare`` writes them
from the Debian Fashion-MNIST files and the bundled Adult).
"""

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

BAG = 256


def prepare(out):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _common import (
        FASHION_DIR,
        FASHION_FILES,
        ensure_fashion,
        load_adult_split,
        read_idx,
    )

    out.mkdir(parents=True, exist_ok=True)
    X, X_test, y, y_test = load_adult_split()
    arrays = dict(X=X, X_test=X_test, y=y, y_test=y_test)
    np.savez_compressed(
        out / "adult.npz",
        **{
            k: v.astype(np.float16 if k[0] == "X" else np.int8)
            for k, v in arrays.items()
        },
    )
    directory = ensure_fashion(FASHION_DIR)  # pixels as bytes: standardised on load
    arrays = {
        k.replace("_train", ""): read_idx(directory / name)
        for k, name in FASHION_FILES.items()
    }
    arrays = {k: v.reshape(len(v), -1) if k[0] == "X" else v for k, v in arrays.items()}
    np.savez_compressed(out / "fashion.npz", **arrays)


def load(path):
    data = dict(np.load(path))
    if data["X"].dtype == np.uint8:  # StandardScaler on the training rows
        mean, std = data["X"].mean(0), data["X"].std(0)
        std[std == 0] = 1
        for key in ("X", "X_test"):
            data[key] = ((data[key] - mean) / std).astype(np.float32)
    return data


def mlp(n_in, n_out, hidden=(256, 256)):
    layers, width = [], n_in
    for h in hidden:
        layers += [nn.Linear(width, h), nn.ReLU()]
        width = h
    trunk = nn.Sequential(*layers)
    return trunk, nn.Linear(width, n_out)


def corrupt(x, rate, gen):
    """Each feature, with probability ``rate``, from another row of the batch."""
    mask = torch.rand(x.shape, device=x.device, generator=gen) < rate
    donor = torch.randint(len(x), x.shape, device=x.device, generator=gen)
    return torch.where(mask, x.gather(0, donor), x)


def pretrain(trunk, X, epochs, rate, gen, batch=512, lr=1e-3, temperature=0.5):
    head = nn.Sequential(nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 128))
    head = head.to(X.device)
    params = list(trunk.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=lr)
    for _ in range(epochs):
        for idx in torch.randperm(len(X), device=X.device, generator=gen).split(batch):
            x = X[idx]
            z1 = F.normalize(head(trunk(x)), dim=1)
            z2 = F.normalize(head(trunk(corrupt(x, rate, gen))), dim=1)
            logits = z1 @ z2.T / temperature
            target = torch.arange(len(x), device=x.device)
            loss = (
                F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)
            ) / 2
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()


def sinkhorn_labels(log_p, counts, iters=30):
    """Exact-count pseudo-labels of equal-size bags: ``log_p`` (bags, k, C),
    ``counts`` (bags, C) summing to k. Returns labels and confidences."""
    log_q = log_p.clone()
    log_counts = torch.log(counts.clamp_min(1e-6))
    for _ in range(iters):
        log_q = log_q - torch.logsumexp(log_q, dim=2, keepdim=True)  # rows sum to 1
        log_q = log_q + log_counts[:, None, :] - torch.logsumexp(log_q, 1, True)
    q = torch.softmax(log_q, dim=2)
    conf, labels = q.max(dim=2)
    return labels, conf


def run(cfg, data, device, seed):
    gen = torch.Generator(device=device).manual_seed(seed)
    torch.manual_seed(seed)
    X = torch.as_tensor(data["X"], dtype=torch.float32, device=device)
    y = torch.as_tensor(data["y"], dtype=torch.long, device=device)
    n_classes = int(y.max()) + 1
    n_bags = len(X) // BAG
    perm = torch.randperm(len(X), device=device, generator=gen)[: n_bags * BAG]
    bag_rows = perm.view(n_bags, BAG)  # random bags of 256, equal size
    counts = F.one_hot(y[bag_rows], n_classes).sum(1).float()  # (bags, C)
    props = counts / BAG
    trunk, head = mlp(X.shape[1], n_classes)
    trunk, head = trunk.to(device), head.to(device)
    if cfg.get("scarf"):
        pretrain(trunk, X, cfg["pretrain"], cfg["corrupt"], gen)
    model = nn.Sequential(trunk, head)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    epochs, per_step = cfg["epochs"], cfg["bags"]
    steps = epochs * math.ceil(n_bags / per_step)
    sched = (
        torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        if cfg.get("cosine")
        else None
    )
    labels = conf = None
    for epoch in range(epochs):
        model.train()
        if cfg.get("pl") and epoch >= cfg["warmup"]:
            with torch.no_grad():
                log_p = torch.log_softmax(model(X[bag_rows.ravel()]), 1)
                labels, conf = sinkhorn_labels(log_p.view(n_bags, BAG, -1), counts)
            ramp = min(1.0, (epoch - cfg["warmup"] + 1) / max(1, cfg["ramp"]))
            w_pl = cfg["pl_weight"] * ramp
        for chosen in torch.randperm(n_bags, device=device, generator=gen).split(
            per_step
        ):
            rows = bag_rows[chosen].ravel()
            x = X[rows]
            logits = model(x)
            p = torch.softmax(logits, 1).view(len(chosen), BAG, -1).mean(1)
            loss = -(props[chosen] * torch.log(p + 1e-8)).sum(1).mean()
            if cfg.get("cons"):
                target = torch.log_softmax(logits.detach(), 1)
                out = torch.log_softmax(model(corrupt(x, cfg["corrupt"], gen)), 1)
                kl = (target.exp() * (target - out)).sum(1).mean()
                loss = loss + cfg["cons_weight"] * kl
            if labels is not None:
                ce = F.cross_entropy(logits, labels[chosen].ravel(), reduction="none")
                loss = loss + w_pl * (conf[chosen].ravel() * ce).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
    model.eval()
    with torch.no_grad():
        X_test = torch.as_tensor(data["X_test"], dtype=torch.float32, device=device)
        proba = torch.softmax(model(X_test), 1).cpu().numpy()
        train_p = torch.softmax(model(X[perm]), 1).cpu().numpy()
    y_test = data["y_test"].astype(int)
    out = {"acc_argmax": float((proba.argmax(1) == y_test).mean())}
    if n_classes == 2:  # prior-matched: as many positives as the bags say
        prior = float(props[:, 1].mean())
        threshold = np.quantile(train_p[:, 1], 1 - prior)
        out["acc_prior"] = float(((proba[:, 1] > threshold) == y_test).mean())
    return out


BASE = dict(epochs=100, bags=8, lr=1e-3, corrupt=0.3, pretrain=50)
RECIPES = {
    "dllp, 8 bags a step, lr 1e-3": {},
    "dllp 16 bags, lr 3e-3": dict(bags=16, lr=3e-3),
    "dllp 16 bags, lr 3e-3, cosine": dict(bags=16, lr=3e-3, cosine=True),
    "dllp 32 bags, lr 3e-3, cosine": dict(bags=32, lr=3e-3, cosine=True),
    "+ corruption consistency": dict(
        bags=16, lr=3e-3, cosine=True, cons=True, cons_weight=1.0
    ),
    "+ pseudo-labels": dict(
        bags=16, lr=3e-3, cosine=True, pl=True, warmup=30, ramp=20, pl_weight=0.5
    ),
    "scarf + dllp": dict(bags=16, lr=3e-3, cosine=True, scarf=True),
    "scarf + consistency": dict(
        bags=16, lr=3e-3, cosine=True, scarf=True, cons=True, cons_weight=1.0
    ),
    "scarf + consistency + pseudo-labels": dict(
        bags=16,
        lr=3e-3,
        cosine=True,
        scarf=True,
        cons=True,
        cons_weight=1.0,
        pl=True,
        warmup=30,
        ramp=20,
        pl_weight=0.5,
    ),
}


def markdown(payload):
    lines = [
        "# Large bags: recipes for an MLP from bags of 256 (prototype)\n",
        f"Device: {payload['device']}; seeds {payload['seeds']}; "
        f"{payload['epochs']} epochs; mean test accuracy (argmax; Adult also "
        "prior-matched). Plain PyTorch, `benchmarks/studies/large_bags.py`.\n",
        "| recipe | Fashion-MNIST | Adult (argmax) | Adult (prior-matched) | s |",
        "|---|---|---|---|---|",
    ]
    for name, row in payload["results"].items():
        f = row.get("fashion", {})
        a = row.get("adult", {})
        lines.append(
            f"| {name} | {f.get('acc_argmax', float('nan')):.4f} | "
            f"{a.get('acc_argmax', float('nan')):.4f} | "
            f"{a.get('acc_prior', float('nan')):.4f} | {row['seconds']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prepare", action="store_true")
    parser.add_argument("--quick", action="store_true", help="2 epochs, 1 seed")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--only", nargs="*", help="recipe names to run")
    args = parser.parse_args(argv)
    if args.prepare:
        return prepare(args.data)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    data = {k: load(args.data / f"{k}.npz") for k in ("fashion", "adult")}
    quick = dict(epochs=2, pretrain=1, warmup=1, ramp=1) if args.quick else {}
    seeds = args.seeds[:1] if args.quick else args.seeds
    payload = {
        "device": torch.cuda.get_device_name() if device == "cuda" else "cpu",
        "seeds": seeds,
        "epochs": quick.get("epochs", BASE["epochs"]),
        "results": {},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    for name, recipe in RECIPES.items():
        if args.only and name not in args.only:
            continue
        start, row = time.perf_counter(), {}
        for key, d in data.items():
            runs = [run({**BASE, **recipe, **quick}, d, device, s) for s in seeds]
            row[key] = {m: float(np.mean([r[m] for r in runs])) for m in runs[0]}
            row[key]["runs"] = runs
        row["seconds"] = time.perf_counter() - start
        payload["results"][name] = row
        print(name, json.dumps({k: v for k, v in row.items()}), flush=True)
        (args.out / "large_bags.json").write_text(json.dumps(payload, indent=1))
        (args.out / "large_bags.md").write_text(markdown(payload))


if __name__ == "__main__":
    main()
