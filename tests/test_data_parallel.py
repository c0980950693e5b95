"""Data-parallel training with Accelerate on whole bags (two gloo processes)."""

import functools
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from sklearn_llp.neural._data import BagBatchSampler, ShardedBatchSampler

_NEEDS_ACCELERATE = "needs accelerate (pip install 'sklearn-llp[parallel]')"


# --- the sampler, without processes
def _codes(sizes, seed=0):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    np.random.RandomState(seed).shuffle(codes)
    return codes


@pytest.mark.parametrize("world_size", [2, 3])
@pytest.mark.parametrize("sizes", [[16] * 20, [3, 40, 7, 16, 1, 25, 9, 30, 12, 5, 8]])
def test_shards_are_disjoint_whole_bags_with_equal_steps(world_size, sizes):
    codes = _codes(sizes)
    sampler = lambda: BagBatchSampler(codes, 32, random_state=4)  # noqa: E731
    shards = [ShardedBatchSampler(sampler(), world_size, r) for r in range(world_size)]
    reference = sampler()
    for _ in range(3):  # epochs: reshuffled alike on every process
        epoch = list(reference)
        per_rank = [list(shard) for shard in shards]
        n_steps = -(-len(epoch) // world_size)
        assert [len(batches) for batches in per_rank] == [n_steps] * world_size
        # round robin over the epoch's batches, wrapping around to pad
        for rank, batches in enumerate(per_rank):
            for step, batch in enumerate(batches):
                expected = epoch[(rank + step * world_size) % len(epoch)]
                np.testing.assert_array_equal(batch, expected)
        # without the padding, the shards are disjoint and cover every row
        dealt = [b for step in range(n_steps) for b in (p[step] for p in per_rank)]
        rows = np.concatenate(dealt[: len(epoch)])
        np.testing.assert_array_equal(np.sort(rows), np.arange(len(codes)))
        # every batch holds whole bags
        for batch in dealt:
            for bag in np.unique(codes[batch]):
                assert (codes[batch] == bag).sum() == sizes[bag]
    assert len(shards[0]) == -(-len(reference) // world_size)


def test_shard_rank_is_checked():
    with pytest.raises(ValueError, match="rank=2"):
        ShardedBatchSampler(BagBatchSampler(_codes([4] * 4), 8), 2, 2)


def test_streamed_windows_hold_a_partition_for_every_process():
    from types import SimpleNamespace

    from sklearn_llp.neural._stream import _WINDOW_ROWS, StreamedEpochs

    def epochs(rows):
        source = SimpleNamespace(parts=list(range(len(rows))), part_rows=rows)
        return StreamedEpochs(SimpleNamespace(source=source), None, 10, "cpu", 0)

    rows = np.array([3 * _WINDOW_ROWS, 5, 7, 11, _WINDOW_ROWS, 13, 2 * _WINDOW_ROWS])
    dealt = epochs(rows)
    dealt.deal(1, 3, max, None)
    for _ in range(3):  # every epoch's order
        windows = dealt.windows()
        assert min(map(len, windows)) >= 3
        assert sorted(np.concatenate(windows)) == list(range(len(rows)))
    assert len(dealt) == 4  # the steps of one process: ceil(10 / 3)
    few = epochs(rows[:2])  # fewer partitions than processes: all read all
    few.deal(0, 3, max, None)
    assert few.share is None and len(few) == 4


# --- one process: the accelerated estimator is the estimator
@pytest.mark.filterwarnings("ignore::sklearn_llp.exceptions.IdentifiabilityWarning")
def test_one_process_fits_as_llp_classifier(digits_bags):
    accelerate = pytest.importorskip("accelerate", reason=_NEEDS_ACCELERATE)
    from sklearn_llp import LLPClassifier
    from sklearn_llp.parallel import AcceleratedLLPClassifier

    X, bags, props = (a[:480] for a in digits_bags[:3])
    params = dict(method="vat", max_epochs=3, random_state=0, n_threads=1, verbose=0)
    accelerated = functools.partial(
        AcceleratedLLPClassifier, accelerator=accelerate.Accelerator(cpu=True)
    )
    fitted = accelerated(**params).fit(X, bags, props)
    assert fitted.device is None and fitted.get_params()["device"] is None
    expected = LLPClassifier(**params).fit(X, bags, props)
    np.testing.assert_array_equal(fitted.predict_proba(X), expected.predict_proba(X))
    with pytest.raises(ValueError, match="leave device=None"):
        accelerated(device="cpu").fit(X, bags, props)
    with pytest.raises(ValueError, match="mixed_precision"):
        accelerated(precision="bfloat16").fit(X, bags, props)


# --- 2 processes on the CPU
_WORKER = textwrap.dedent(
    """
    import json
    import sys

    import numpy as np
    import torch
    from accelerate import Accelerator
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler
    from skorch.callbacks import Callback

    from sklearn_llp import LLPClassifier
    from sklearn_llp.methods._vat import vat_loss
    from sklearn_llp.modules import MLP
    from sklearn_llp.parallel import AcceleratedLLPClassifier

    torch.set_num_threads(1)
    out = sys.argv[1]
    accelerator = Accelerator(cpu=True)
    rank, world = accelerator.process_index, accelerator.num_processes


    class SeenBags(Callback):
        '''The bag ids of every training batch, and the wrapped network.'''

        def on_train_begin(self, net, **kwargs):
            self.epochs, self.wrapper = [], type(net.module_).__name__

        def on_epoch_begin(self, net, dataset_train=None, **kwargs):
            self.ids = np.asarray(dataset_train.bags.ids)
            self.epochs.append([])

        def on_batch_end(self, net, batch=None, training=False, **kwargs):
            if training:
                index = batch[1]["bag_index"].numpy()
                self.epochs[-1].append(self.ids[index].tolist())


    X, y = load_digits(return_X_y=True)
    X, X_test, y, y_test = train_test_split(X, y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(X)
    X, X_test = scaler.transform(X), scaler.transform(X_test)
    bags = np.random.RandomState(0).permutation(len(X)) // 16
    props = np.zeros((bags.max() + 1, 10))
    np.add.at(props, bags, np.eye(10)[y])
    props = (props / props.sum(1, keepdims=True))[bags]

    SETTINGS = {
        # validation on every process and early stopping, under DDP
        "dllp": dict(validation_fraction=0.2, early_stopping=True, max_epochs=30),
        # 9 batches an epoch: the second process repeats the first batch
        "vat": dict(max_epochs=30, batch_size=144),
    }
    common = dict(
        module__hidden_sizes=(64,), lr=3e-3, random_state=0, n_threads=1, verbose=0
    )
    result = {}
    for method, settings in SETTINGS.items():
        seen = SeenBags()
        kw = dict(accelerator=accelerator, method=method, callbacks=[("seen", seen)])
        clf = AcceleratedLLPClassifier(**kw, **settings, **common).fit(X, bags, props)
        result[method] = dict(
            wrapper=seen.wrapper, unwrapped=type(clf.module_).__name__,
            epochs=seen.epochs,
            train_bags=sorted(np.asarray(clf.train_bag_ids_).tolist()),
            batch_counts=list(clf.history[:, "train_batch_count"]),
            batch_losses=[[b["train_loss"] for b in row["batches"] if "train_loss" in b]
                          for row in clf.history],
            proba=clf.predict_proba(X_test).tolist(),
            offsets=np.asarray(clf.decision_offsets_).tolist(),
            accuracy=float((clf.predict(X_test) == y_test).mean()),
            best_epoch=getattr(clf, "best_epoch_", None))
        if method == "vat":  # a continued fit trains the wrapped network again
            clf.partial_fit(X, bags, props)
            result[method]["continued"] = dict(
                wrapper=seen.wrapper, proba=clf.predict_proba(X_test).tolist()
            )
        # the same fit in one process (one method per process, in parallel)
        if list(SETTINGS).index(method) % world == rank:
            single = LLPClassifier(method=method, **settings, **common)
            single.fit(X, bags, props)
            accuracy = float((single.predict(X_test) == y_test).mean())
            result[method]["single_accuracy"] = accuracy

    # a Dask fit: each process reads its own partitions of every window
    import dask.array as da

    import sklearn_llp.neural._stream as stream

    order = np.argsort(bags, kind="stable")
    starts = np.flatnonzero(np.diff(bags[order], prepend=-1))
    chunks = tuple(np.diff(np.r_[starts[::8], len(order)]))  # 8 bags a block
    stream._WINDOW_ROWS = 256  # windows of about 2 partitions a process
    read, rows = [], stream.DaskSource.rows

    def reading(source, partitions, read_X):
        read.append([len(seen.epochs), *np.asarray(partitions).tolist()])
        return rows(source, partitions, read_X)

    stream.DaskSource.rows = reading
    seen = SeenBags()
    kw = dict(accelerator=accelerator, method="dllp", callbacks=[("seen", seen)])
    clf = AcceleratedLLPClassifier(max_epochs=3, **kw, **common)
    clf.fit(
        da.from_array(X[order], chunks=(chunks, -1)),
        da.from_array(bags[order], chunks=(chunks,)),
        da.from_array(props[order], chunks=(chunks, -1)),
    )
    result["dask"] = dict(
        read=read, n_partitions=len(chunks), epochs=seen.epochs,
        train_bags=sorted(np.asarray(clf.train_bag_ids_).tolist()),
        batch_counts=list(clf.history[:, "train_batch_count"]),
        proba=clf.predict_proba(X_test).tolist(),
        accuracy=float((clf.predict(X_test) == y_test).mean()))

    # VAT's gradient through DDP: the mean of the processes' own gradients
    def loss_of(module, X, seed):
        torch.manual_seed(seed)
        logits = module(X)
        return logits.logsumexp(1).mean() + vat_loss(module, X, logits.detach(), 1.0)

    torch.manual_seed(0)
    network = MLP(n_features=8, n_classes=3, hidden_sizes=(16,))
    wrapped = accelerator.prepare(MLP(n_features=8, n_classes=3, hidden_sizes=(16,)))
    wrapped.module.load_state_dict(network.state_dict())
    batches = [torch.randn(20, 8, generator=torch.Generator().manual_seed(r))
               for r in range(world)]
    loss_of(wrapped, batches[rank], 100 + rank).backward()
    for r in range(world):
        loss_of(network, batches[r], 100 + r).backward()
    result["vat_grad_error"] = max(
        float((p.grad - q.grad / world).abs().max())
        for p, q in zip(wrapped.module.parameters(), network.parameters())
    )
    # a bag above max_bag_size on one process: its chunks synchronise once
    merged = np.where(bags < 12, 0, bags)
    counts = np.zeros((merged.max() + 1, 10))
    np.add.at(counts, merged, np.eye(10)[y])
    kw = dict(accelerator=accelerator, method="dllp", max_bag_size=64)
    clf = AcceleratedLLPClassifier(max_epochs=2, **kw, **common)
    clf.fit(X, merged, (counts / counts.sum(1, keepdims=True))[merged])
    result["chunked"] = clf.predict_proba(X_test).tolist()
    inner = getattr(clf.module_, "module", clf.module_)  # the MLP's statistics set
    own = clf.module_.__class__(X.shape[1], 10).standardize_from(X.astype("float32"))
    result["standardised"] = torch.equal(inner.input_mean, own.input_mean)
    with open(f"{out}/rank{rank}.json", "w") as f:
        json.dump(result, f)
    """
)


@pytest.mark.slow
def test_two_cpu_processes_train_like_one(tmp_path):
    pytest.importorskip("accelerate", reason=_NEEDS_ACCELERATE)
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    env = dict(os.environ, OMP_NUM_THREADS="1", ACCELERATE_USE_CPU="1")
    env["PYTHONWARNINGS"] = "ignore"
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2"]
    command += ["--standalone", str(script), str(tmp_path)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(2)]

    # VAT's power iteration and perturbed pass through the wrapped network:
    # DDP averages the processes' gradients exactly
    assert ranks[0]["vat_grad_error"] < 1e-6 and ranks[1]["vat_grad_error"] < 1e-6
    np.testing.assert_array_equal(ranks[0]["chunked"], ranks[1]["chunked"])
    assert ranks[0]["standardised"] and ranks[1]["standardised"]

    for method in ("dllp", "vat"):
        fits = [rank[method] for rank in ranks]
        for fit in fits:
            assert fit["wrapper"] == "DistributedDataParallel"
            assert fit["unwrapped"] == "MLP"
        # the same model, threshold and history on both processes
        np.testing.assert_array_equal(fits[0]["proba"], fits[1]["proba"])
        np.testing.assert_array_equal(fits[0]["offsets"], fits[1]["offsets"])
        assert fits[0]["batch_losses"] == fits[1]["batch_losses"]  # all-reduced
        assert fits[0]["best_epoch"] == fits[1]["best_epoch"]
        # the same number of steps; every epoch, disjoint whole bags that
        # cover the training bags, but for the padding: with an odd number
        # of batches, the second process repeats the epoch's first batch
        counts = fits[0]["batch_counts"]
        assert counts == fits[1]["batch_counts"] and len(counts) >= 3
        train_bags = set(fits[0]["train_bags"])
        for epoch0, epoch1 in zip(fits[0]["epochs"], fits[1]["epochs"]):
            assert len(epoch0) == len(epoch1)
            bags0 = [b for batch in epoch0 for b in batch]
            bags1 = [b for batch in epoch1 for b in batch]
            assert len(set(bags0)) == len(bags0) and len(set(bags1)) == len(bags1)
            assert set(bags0) | set(bags1) == train_bags
            padding = len(bags0) + len(bags1) - len(train_bags)
            if method == "vat":
                assert epoch1[-1] == epoch0[0] and padding == len(epoch0[0])
            else:
                assert padding == 0
            assert len(set(bags0) & set(bags1)) == padding
        # the accuracy of one process training on all the bags
        single = next(
            r[method]["single_accuracy"]
            for r in ranks
            if r[method].get("single_accuracy") is not None
        )
        assert fits[0]["accuracy"] > 0.8, fits[0]["accuracy"]
        assert abs(fits[0]["accuracy"] - single) < 0.05, (fits[0]["accuracy"], single)
    # a Dask fit: every epoch, the processes read disjoint partitions that
    # cover them all, train whole bags in equal steps, end with one model
    dask_fits = [rank["dask"] for rank in ranks]
    np.testing.assert_array_equal(dask_fits[0]["proba"], dask_fits[1]["proba"])
    assert dask_fits[0]["batch_counts"] == dask_fits[1]["batch_counts"]
    assert dask_fits[0]["accuracy"] > 0.5, dask_fits[0]["accuracy"]
    for epoch in range(len(dask_fits[0]["epochs"])):
        parts0, parts1 = (
            [p for e, *window in fit["read"] if e == epoch + 1 for p in window]
            for fit in dask_fits
        )
        assert len(parts0) >= 2 and not set(parts0) & set(parts1)
        assert set(parts0 + parts1) == set(range(dask_fits[0]["n_partitions"]))
        batches = [batch for fit in dask_fits for batch in fit["epochs"][epoch]]
        trained = [bag for batch in batches for bag in batch]
        assert set(trained) == set(dask_fits[0]["train_bags"])
    continued = [rank["vat"]["continued"] for rank in ranks]
    assert continued[0]["wrapper"] == "DistributedDataParallel"
    np.testing.assert_array_equal(continued[0]["proba"], continued[1]["proba"])
    assert not np.array_equal(continued[0]["proba"], ranks[0]["vat"]["proba"])
    # early stopping ran under DDP (it restored an epoch)
    assert ranks[0]["dllp"]["best_epoch"] is not None
