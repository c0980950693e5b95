"""Training-setting pilots: train on 90 % of the training bags, score the rest.

    python benchmarks/studies/tune.py --dataset fashion --bag 256 --method dllp \
        --batch-size 2048 --epochs 40 --tag b256bs2048  # appends to tuning.jsonl
    python benchmarks/studies/tune.py --markdown        # redo tuning.md
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback

from sklearn_llp import LLPClassifier
from sklearn_llp.metrics import hard_l1_error

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common import FASHION_DIR, RESULTS_DIR, load_dataset  # noqa: E402
from accuracy import lr_schedule_callback, make_bags  # noqa: E402

VALIDATION_FRACTION = 0.1
BAG_ORDER = {"16": 0, "64": 1, "256": 2, "kmeans": 3, "sup": 4}  # of the table


class HeldOutScores(Callback):
    """Hard L1 of the held-out bags and accuracy of their rows, per epoch."""

    def __init__(self, X, y, bags, props, every, last):
        self.X, self.y, self.bags, self.props = X, y, bags, props
        self.every, self.last, self.curve = every, last, []

    def on_epoch_end(self, net, **kwargs):
        epoch = len(net.history)
        if epoch % self.every and epoch != self.last:
            return
        proba = net.predict_proba(self.X)
        point = {"epoch": epoch, "accuracy": float((proba.argmax(1) == self.y).mean())}
        if self.props is not None:
            point["hard_l1"] = float(hard_l1_error(self.bags, self.props, proba))
        self.curve.append(point)


def run(args):
    torch.set_num_threads(args.threads)
    fashion_dir = str(args.fashion_dir)
    X, _, y, _ = load_dataset(args.dataset, None, fashion_dir)
    supervised = args.bag == "sup"  # every row its own bag: no bag errors
    if supervised:
        bags, props = np.arange(len(X)), None
    else:
        bagging = "kmeans" if args.bag == "kmeans" else f"uniform-{args.bag}"
        bags, props, _ = make_bags(args.dataset, None, fashion_dir, bagging, args.seed)
    rng = np.random.default_rng(1000 + args.seed)
    ids = np.unique(bags[bags >= 0])
    n_held = max(1, int(len(ids) * VALIDATION_FRACTION))
    held = np.isin(bags, rng.choice(ids, size=n_held, replace=False))
    train = (bags >= 0) & ~held
    held_props = None if supervised else props[held]
    scores = HeldOutScores(
        X[held], y[held], bags[held], held_props, args.every, args.epochs
    )
    callbacks = [("held_out", scores)]
    schedule = "cosine" if args.schedule == "cos" else args.schedule
    if (lr_callback := lr_schedule_callback(schedule, args.epochs)) is not None:
        callbacks.append(("lr_schedule", lr_callback))
    method = "dllp" if args.method == "sup" else args.method
    params = {
        "method": method,
        "max_epochs": args.epochs,
        "lr": args.lr,
        "batch_size": args.batch_size,
        "module__hidden_sizes": tuple(int(h) for h in args.hidden.split(",")),
        "module__dropout": args.dropout,
        "max_bag_size": 1024,
        "optimizer__weight_decay": args.weight_decay,
    }
    if method == "vat":
        params.update(method__alpha=args.alpha, method__eps=args.eps)
    clf = LLPClassifier(
        random_state=args.seed, verbose=0, callbacks=callbacks, **params
    )
    start = time.perf_counter()
    on_labels = supervised or args.method == "sup"  # the supervised bound
    clf.fit(X[train], *((y[train],) if on_labels else (bags[train], props[train])))
    hidden = "module__hidden_sizes"  # recorded as given, in "hidden"
    return {
        "tag": args.tag,
        "dataset": args.dataset,
        "bag": args.bag,
        "seed": args.seed,
        "schedule": args.schedule,
        # VAT's method__alpha / method__eps as "alpha" / "eps", as in the results
        **{k.removeprefix("method__"): v for k, v in params.items() if k != hidden},
        "method": args.method,  # "sup" for the supervised bound
        "hidden": args.hidden,
        "fit_seconds": round(time.perf_counter() - start, 1),
        "n_train": int(train.sum()),
        "n_held_out": int(held.sum()),
        "final": scores.curve[-1],
        "curve": scores.curve,
    }


HEADER = """# Training-setting pilots (`benchmarks/studies/tune.py`)

Training bags split 90 / 10 by bag (the test split is never used); hard L1 of \
the held-out bags (the selection criterion, lower is better) and accuracy of their \
rows (%, for information) after the last epoch. The seed draws the bags, the split \
and the initial weights. Rows sorted by setting, then seed, then hard L1.

| data set | bags | method | seed | batch | epochs | lr | schedule | other \
| held-out hard L1 | held-out accuracy | fit s | tag |
|---|---|---|---|---|---|---|---|---|---|---|---|---|"""


def row_order(r):
    bag = BAG_ORDER.get(r["bag"], 9)
    return r["dataset"], bag, r["seed"], r["final"].get("hard_l1", 0)


def markdown(records):
    lines = [HEADER]
    for r in sorted(records, key=row_order):
        other = [  # settings away from the defaults
            r["method"] == "vat" and f"α {r['alpha']}, ε {r['eps']}",
            r.get("optimizer__weight_decay") and f"wd {r['optimizer__weight_decay']}",
            r.get("module__dropout") and f"dropout {r['module__dropout']}",
            r.get("hidden", "256,256") != "256,256" and f"hidden {r['hidden']}",
        ]
        l1 = r["final"].get("hard_l1")
        lines.append(
            f"| {r['dataset']} | {r['bag']} | {r['method']} | {r['seed']} "
            f"| {r['batch_size']} | {r['max_epochs']} | {r['lr']:g} | {r['schedule']} "
            f"| {'; '.join(o for o in other if o) or '–'} "
            f"| {'–' if l1 is None else f'{l1:.3f}'} "
            f"| {100 * r['final']['accuracy']:.1f} | {r['fit_seconds']:.0f} "
            f"| {r['tag']} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add = parser.add_argument
    add("--dataset", default="fashion")
    add("--bag", default="256", help="16, 64, 256, kmeans or sup")
    add("--method", default="dllp", help="dllp, vat, pi, rot, or sup (supervised)")
    add("--batch-size", type=int, default=128)
    add("--epochs", type=int, default=40)
    add("--lr", type=float, default=0.001)
    add("--schedule", choices=["none", "step", "cos"], default="none")
    add("--seed", type=int, default=0)
    add("--weight-decay", type=float, default=0.0)
    add("--alpha", type=float, default=0.05, help="VAT weight")
    add("--eps", type=float, default=1.0, help="VAT radius")
    add("--hidden", default="256,256")
    add("--dropout", type=float, default=0.0, help="MLP dropout")
    add("--every", type=int, default=5, help="score every N epochs")
    add("--threads", type=int, default=1)
    add("--tag", default="")
    add("--fashion-dir", type=Path, default=FASHION_DIR)
    add("--out", type=Path, default=RESULTS_DIR)
    add("--markdown", action="store_true", help="only rewrite tuning.md")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    jsonl = args.out / "tuning.jsonl"
    if not args.markdown:
        record = run(args)
        print(json.dumps(record), flush=True)
        with jsonl.open("a") as handle:
            handle.write(json.dumps(record) + "\n")
    records = [json.loads(line) for line in jsonl.read_text().splitlines() if line]
    (args.out / "tuning.md").write_text(markdown(records))
    return records


if __name__ == "__main__":
    main()
