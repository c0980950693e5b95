"""Training from Dask collections, streamed one window of partitions at a time.

``X`` is never gathered: a first pass reads the bag ids, a sample of
partitions gives the held-out bags, and every epoch visits the partitions in
a seeded order. Bags must lie whole within a partition.
"""

import ctypes
import functools
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import pandas as pd

from ..core import bags_form, check_bags, row_partitions, values_argument
from ..core._partitions import (
    compute_here,
    is_per_row,
    read_partition,
    reads_here,
    reduce_partitions,
    stand_in,
)
from ._data import BagDataset, EpochBatches, as_tensor

#: Rows of the sample of partitions held in memory (held-out bags, decision
#: rule), and of a window of partitions trained on together.
_SAMPLE_ROWS = 2**18
_WINDOW_ROWS = 2**18


def _index(ids):
    return pd.Index(list(ids) if ids.dtype == object else ids, tupleize_cols=False)


@functools.cache
def _malloc_trim():
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return lambda pad: 0


def _return_freed_memory():
    """Hand the memory freed by reading partitions back to the system."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    _malloc_trim()(0)


@contextmanager
def system_allocation():
    """Arrow allocates through malloc while a Dask fit streams, so what a
    window's read frees goes back to the system at the next trim; Arrow's
    own pool kept about 100 MB more (:ref:`dask`). Restored after."""
    arrow = sys.modules.get("pyarrow")
    previous = None if arrow is None else arrow.default_memory_pool()
    if previous is not None:
        arrow.set_memory_pool(arrow.system_memory_pool())
    try:
        yield
    finally:
        if previous is not None:
            arrow.set_memory_pool(previous)


class DaskSource:
    """The partitions of a Dask fit, the stand-in of all its bags, and the
    sample of whole partitions kept in memory."""

    def __init__(self, X, y, values, *, task, classes, sample_weight, seed):
        if sample_weight is not None:
            raise TypeError(
                "sample_weight is not supported with Dask X; give rows of "
                "weight 0 no bag, or fit on NumPy arrays."
            )
        if values is None:
            raise ValueError(
                "A fit on Dask X needs bags and their values (props or targets); "
                "instance labels or targets alone are not streamed."
            )
        per_row, key = is_per_row(values), values_argument(task)
        columns = (y, values) if per_row else (y,)
        parts, columns = row_partitions(X, *columns, names=("bags", key))
        self.task = task
        self.here = reads_here(parts[:1])
        import dask

        read = dask.delayed(read_partition, pure=True)
        summaries = compute_here(
            *[read(c, task, classes, per_row) for c in columns], here=self.here
        )
        table = None if per_row else values
        single, sizes, _ = reduce_partitions(
            summaries, task, table, classes, whole=True, min_bags=2
        )
        # empty partitions (after a filter) hold no bag: never read again
        self.parts = [part for part, s in zip(parts, summaries) if s is not None]
        self.part_rows = np.array([s[1].sum() for s in summaries if s is not None])
        self.id_index = _index(single.ids)
        self.bags = stand_in(single, sizes)
        self.seed = seed
        _return_freed_memory()

    def load(self, partitions):
        """Rows and bag ids of ``partitions``, concatenated in that order."""
        loaded = compute_here(*[self.parts[k] for k in partitions], here=self.here)
        X = [part[0] for part in loaded]
        X = pd.concat(X) if hasattr(X[0], "columns") else np.concatenate(X)
        ids = np.concatenate([bags_form(part[1])[1] for part in loaded])  # by position
        return X, ids

    def rows(self, partitions, read_X):
        """Rows of ``partitions`` as one array (one partition's frame in memory at
        a time) and their bag ids."""
        X, ids, start = None, [], 0
        for k in partitions:
            rows, part_ids = compute_here(self.parts[k], here=self.here)[0][:2]
            rows = read_X(rows)
            if X is None:
                shape = (int(np.sum(self.part_rows[partitions])), *rows.shape[1:])
                X = np.empty(shape, rows.dtype)
            X[start : start + len(rows)] = rows
            start += len(rows)
            ids.append(bags_form(part_ids)[1])  # composite keys: tuples
        return X, np.concatenate(ids)

    def sample(self):
        """Whole partitions in their own order, at least ``_SAMPLE_ROWS`` rows."""
        order = np.random.RandomState(self.seed).permutation(len(self.parts))
        cut = np.searchsorted(np.cumsum(self.part_rows[order]), _SAMPLE_ROWS)
        return np.sort(order[: cut + 1])

    def bags_of(self, ids):
        """The bags of rows with bag ``ids``, carrying their values."""
        bags = check_bags(ids)
        position = self.id_index.get_indexer(_index(bags.ids))
        return bags.with_values(
            self.bags.values[position],
            self.task,
            self.bags.classes,
            positional=self.bags.positional_classes,
        ), position


class StreamedBags:
    """The training side of a Dask fit: every bag but the held-out ones."""

    def __init__(self, source, held_out_ids, read_X, values_of):
        keep = ~source.id_index.isin(_index(np.asarray(held_out_ids)))
        self.source, self.read_X, self.values_of = source, read_X, values_of
        self.bags = stand_in(source.bags, source.bags.sizes, keep)
        self.train_number = np.where(keep, np.cumsum(keep) - 1, -1)

    def window(self, partitions):
        """A :class:`BagDataset` of the training bags of ``partitions``."""
        X, ids = self.source.rows(partitions, self.read_X)
        bags, position = self.source.bags_of(ids)
        number = self.train_number[position]
        bags = bags.select(number >= 0)
        dataset = BagDataset(as_tensor(X), bags, self.values_of(bags))
        dataset.bag_numbers = number[number >= 0]
        _return_freed_memory()
        return dataset


class StreamedEpochs:
    """Every epoch: the partitions in a seeded order, in windows."""

    def __init__(self, dataset, sampler_of, n_batches, device, seed):
        self.dataset, self.sampler_of, self.device = dataset, sampler_of, device
        self.n_batches = n_batches
        self.order_rng = np.random.RandomState(seed)
        self.rng = np.random.RandomState(seed)

    def __len__(self):
        # as a sampler counts; windows add up to one batch each
        return self.n_batches

    def windows(self):
        source = self.dataset.source
        order = self.order_rng.permutation(len(source.parts))
        ends = np.cumsum(source.part_rows[order]) // _WINDOW_ROWS
        return np.split(order, np.flatnonzero(np.diff(ends)) + 1)

    def __iter__(self):
        windows = self.windows()
        # a cluster's reads are prefetched a window ahead; local reads are
        # not: a second window and the read's buffers beside training raised
        # the peak at 4M rows by 80 MiB (971 against 891), at the same s/epoch
        ahead = None
        with ThreadPoolExecutor(1) as loader:
            for k in range(len(windows)):
                dataset = sampler = None  # this window goes before the next comes
                dataset = ahead.result() if ahead else self.dataset.window(windows[k])
                if not self.dataset.source.here and k + 1 < len(windows):
                    ahead = loader.submit(self.dataset.window, windows[k + 1])
                sampler = self.sampler_of(dataset, self.rng)
                yield from EpochBatches(dataset, sampler, self.device)
