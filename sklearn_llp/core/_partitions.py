"""Dask collections: lazy predictions and the row partitions a fit streams."""

import functools
import math
import threading
from dataclasses import replace

import numpy as np
import pandas as pd

from ._bags import CLASSIFICATION, Bags
from ._errors import bag_errors_of, check_predictions, check_proba
from ._read import (
    _weighted_enough,
    attach_table,
    bags_form,
    check_bags,
    is_table,
    values_argument,
)

_PREDICTING = threading.RLock()


def _one_at_a_time(method, *args, **kwargs):
    """One block at a time per process (Dask runs blocks in threads)."""
    with _PREDICTING:
        return method(*args, **kwargs)


def is_dask(obj):
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series)."""
    return type(obj).__module__.startswith("dask") and hasattr(obj, "dask")


def reads_here(collections):
    """Whether Dask's scheduler for ``collections`` runs in this process."""
    import dask.local
    import dask.threaded
    from dask.base import get_scheduler

    local = (None, dask.threaded.get, dask.local.get_sync)
    return get_scheduler(collections=collections) in local


def compute_here(*collections, here):
    """``dask.compute``, in this thread when the reads are ``here``: the first
    error is the first partition's, and no worker arena keeps freed buffers
    (250 MiB at 4M rows, :ref:`dask`)."""
    import dask

    return dask.compute(*collections, scheduler="sync" if here else None)


def row_partitions(X, *columns, names=(), first="X", paired=False):
    """The blocks of rows of ``X`` and ``columns``, as delayed tuples.

    ``columns`` are split like ``X`` (columns of the same Dask DataFrame, read in
    one task, or arrays rechunked to its row chunks; ``paired``: block ``k`` of
    a prediction of unknown chunks with partition ``k``). Returns one
    ``(X_block, *column_blocks)`` and one ``column_blocks`` per block."""
    import dask

    if hasattr(X, "divisions"):  # a DataFrame: one frame holds every column
        layout, new = [], {}
        for column, name in zip(columns, names):
            if not hasattr(column, "divisions"):
                raise TypeError(
                    f"{name}: with a Dask DataFrame X, pass {name} as a Dask "
                    "Series or DataFrame split like X (columns of the same "
                    "DataFrame)."
                )
            frame = column.to_frame() if column.ndim == 1 else column
            keys = {f"__llp_{name}_{j}": c for j, c in enumerate(frame.columns)}
            new.update({k: frame[c] for k, c in keys.items()})
            layout.append((keys, column.ndim))
        try:
            frame = X.assign(**new)
        except ValueError as exc:
            raise ValueError(
                f"{', '.join(names)} must be split like X (columns of the same "
                f"DataFrame): {exc}"
            ) from None
        # the same tasks for both: projecting the columns alone would let
        # Dask fuse partitions (read_parquet does), numbering them otherwise
        split = dask.delayed(_split_frame, pure=True)
        features, parts = list(X.columns), frame.to_delayed()
        return (
            [split(part, features, layout) for part in parts],
            [split(part, None, layout) for part in parts],
        )
    import dask.array as da

    by_partition = (
        paired
        and _unknown_rows(X)
        and all(is_dask(c) and c.npartitions == X.numblocks[0] for c in columns)
    )
    if not by_partition:
        known_rows(X, first)
    blocks = [_blocks(X.rechunk({a: -1 for a in range(1, X.ndim)}))]
    for column, name in zip(columns, names):
        if by_partition:
            frame = hasattr(column, "divisions")
            blocks.append(column.to_delayed() if frame else _blocks(column))
            continue
        if name == "bags" and not is_dask(column):
            form = bags_form(column, name=name)[0]
            if form != "ids":  # overlapping bags, a Bags object
                raise TypeError(
                    f"bags: with Dask X, pass one bag id per row; {form} are read "
                    "in memory only."
                )
        if hasattr(column, "to_dask_array"):
            column = column.to_dask_array(lengths=True)
        column = known_rows(da.asarray(column), name)
        if column.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name} has {column.shape[0]} rows but {first} has {X.shape[0]}."
            )
        chunks = {a: -1 for a in range(1, column.ndim)}
        blocks.append(_blocks(column.rechunk({0: X.chunks[0], **chunks})))
    join = dask.delayed(tuple, pure=True)
    return [join(b) for b in zip(*blocks)], [join(b[1:]) for b in zip(*blocks)]


def known_rows(array, name):
    """``array``, refused when its row chunks are unknown (NaN)."""
    if _unknown_rows(array):
        raise ValueError(
            f"{name} has unknown chunk sizes (as after a boolean mask), so its rows "
            f"cannot be matched: {name} = {name}.compute_chunk_sizes() first."
        )
    return array


def _unknown_rows(array):
    """Whether a Dask array's row chunks are unknown (NaN, as after a mask)."""
    return any(math.isnan(rows) for rows in array.chunks[0])


def _split_frame(frame, features, layout):
    """``(X, *columns)`` of a partition (``features`` None: columns only)."""
    columns = []
    for keys, ndim in layout:
        column = frame[list(keys)].rename(columns=keys)
        columns.append(column.iloc[:, 0] if ndim == 1 else column)
    return tuple(columns) if features is None else (frame[features], *columns)


def _blocks(array):
    return array.to_delayed().ravel().tolist()


def over_dask_partitions(method):
    """Make a prediction method lazy on a Dask array or DataFrame.

    On Dask input ``method`` returns a Dask array, applied block by block (as
    dask-ml's ``ParallelPostFit``); other input goes straight to ``method``.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from sklearn_llp.linear import MeanMapClassifier
    >>> X = np.random.RandomState(0).normal(size=(40, 2))
    >>> clf = MeanMapClassifier().fit(X, (X[:, 0] > 0).astype(int))
    >>> lazy = clf.predict(da.from_array(X, chunks=10))
    >>> (lazy.compute() == clf.predict(X)).all()
    np.True_
    """

    @functools.wraps(method)
    def predict(self, X, *args, **kwargs):
        if not is_dask(X):
            return method(self, X, *args, **kwargs)
        frame = hasattr(X, "map_partitions")  # a DataFrame: partitions of rows
        if not frame:
            X = X.rechunk({axis: -1 for axis in range(1, X.ndim)})  # rows only
        first = X.head(1, npartitions=-1) if frame else np.asarray(X[:1].compute())
        head = _one_at_a_time(method, self, first, *args, **kwargs)
        empty = np.empty((0, *head.shape[1:]), head.dtype)

        def block(rows):  # an empty partition (after a filter) predicts nothing
            if not rows.shape[0]:
                return empty
            return _one_at_a_time(method, self, rows, *args, **kwargs)

        if frame:
            return X.map_partitions(block, meta=empty)
        return X.map_blocks(
            block,
            dtype=head.dtype,
            chunks=(X.chunks[0], *head.shape[1:]),
            drop_axis=list(range(head.ndim, X.ndim)),
            meta=empty,
        )

    return predict


def read_partition(part, task, classes, per_row, scored=False, has_pred=False):
    """The summary of a partition ``([output,] ids[, values][, pred])`` for
    :func:`reduce_partitions`; None if empty, its error if refused."""
    try:
        output, ids, *rest = part if scored else (None, *part)
        if not len(ids):  # an empty partition (normal after a filter)
            return None
        values = rest[0] if per_row else None
        if hasattr(values, "reset_index"):  # aligned by position, not by index
            values = values.reset_index(drop=True)
        bags = check_bags(ids, **{values_argument(task): values}, classes=classes)
        columns = None if bags.positional_classes else bags.classes
        if scored:
            output, n = np.asarray(output, dtype=np.float64), len(ids)
            if task == CLASSIFICATION:
                width = output.shape[1] if output.ndim == 2 else 2
                output = check_proba(output, n, width)
                pred = np.asarray(rest[-1]) if has_pred else np.argmax(output, axis=1)
                output = np.column_stack([output, np.eye(width)[pred]])
            else:
                output = check_predictions(output, n)[:, None]
            output = np.add.reduceat(output[bags.members], bags.indptr[:-1], axis=0)
        return bags.ids, bags.sizes, bags.values, columns, output
    except (ValueError, TypeError) as exc:  # raised in partition order
        return exc


def is_per_row(values):
    """Whether ``values`` beside Dask X are per row, not a per-bag table."""
    return is_dask(values) or not is_table(values, None, None, None, "values")


def reduce_partitions(summaries, task, table, classes, *, whole=False, min_bags=1):
    """``(bags, sizes, sums)``, one row per bag, of every partition's summary
    (:func:`read_partition`): one :func:`check_bags` of a row per bag and
    partition checks ids, classes and per-row values agreeing within a bag
    across partitions (``whole``: every bag in one partition)."""
    error = next((s for s in summaries if isinstance(s, Exception)), None)
    if error is not None:  # the first partition's, as the rows' first in memory
        raise error
    found = [(k, s) for k, s in enumerate(summaries) if s is not None]
    parts = [s for _, s in found]
    ids = np.concatenate([s[0] for s in parts]) if parts else np.zeros(0, int)
    bags = check_bags(ids, min_bags=0)
    split = np.flatnonzero(bags.sizes > 1)
    if whole and len(split):
        owner = np.repeat([k for k, _ in found], [len(s[0]) for s in parts])
        start, stop = bags.indptr[split[0] : split[0] + 2]
        bag = bags.ids[split[0]]
        raise ValueError(
            f"bags: bag {bag.item() if hasattr(bag, 'item') else bag!r} has rows "
            f"in partitions {owner[bags.members[start:stop]][:5].tolist()}; a "
            "Dask fit needs every bag whole in one partition. Put each bag's "
            "rows together first, e.g. ddf = ddf.shuffle('bag') or "
            "ddf.set_index('bag') (DataFrames), or sort the rows by bag "
            "before making the arrays."
        )
    key = values_argument(task)
    if parts and parts[0][2] is not None:  # per-row values, one row per bag
        values = np.concatenate([s[2] for s in parts])
        if parts[0][3] is not None:
            values = pd.DataFrame(values, columns=parts[0][3])
        bags = check_bags(ids, **{key: values}, classes=classes, task=task, min_bags=0)
    elif table is not None:
        bags = attach_table(bags, table, task, classes, key)
    bags = _weighted_enough(bags, None, min_bags, "bags")

    def per_bag(column):
        return np.add.reduceat(np.concatenate(column)[bags.members], bags.indptr[:-1])

    sizes = per_bag([s[1] for s in parts])
    sums = None if parts[0][4] is None else per_bag([s[4] for s in parts])
    n = bags.n_bags
    bags = replace(bags, indptr=np.arange(n + 1), members=np.arange(n), n_samples=n)
    return bags, sizes, sums


def stand_in(bags, sizes, keep=slice(None)):
    """Bags ``keep`` of ``bags`` with their true ``sizes``; ``members`` is a
    zero-stride placeholder, never an index."""
    sizes = sizes[keep]
    out = Bags(
        np.r_[0, np.cumsum(sizes)],
        np.broadcast_to(np.int64(0), (int(np.sum(sizes)),)),
        bags.ids[keep],
        int(np.sum(sizes)),
        None if bags.values is None else bags.values[keep],
        bags.task,
        bags.classes,
        positional_classes=bags.positional_classes,
        release=bags.release,
    )
    vars(out).update(overlapping=False)  # the cached property, known
    return out


def dask_bag_errors(task, bags, values, output, metrics, *, classes=None, pred=None):
    """``({metric: error}, bags)`` of Dask ``output`` (and ``bags``, per-row
    ``values``, class index ``pred``), reduced partition by partition.

    Per-bag sums of every partition are added, so a bag may span partitions.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from sklearn_llp.core import dask_bag_errors
    >>> proba = da.from_array(np.array([[0.9, 0.1], [0.2, 0.8]] * 2), chunks=2)
    >>> dask_bag_errors("classification", da.from_array([0, 0, 1, 1], chunks=2),
    ...                 {0: [0.5, 0.5], 1: [0.5, 0.5]}, proba, ["hard_l1"])[0]
    {'hard_l1': 0.0}
    """
    import dask
    import dask.array as da

    per_row = is_per_row(values)
    extra = {values_argument(task): values if per_row else None, "pred": pred}
    names = ["bags", *(k for k, v in extra.items() if v is not None)]
    columns = [bags, *(v for v in extra.values() if v is not None)]
    if hasattr(output, "divisions"):
        output = output.to_dask_array(lengths=True)
    elif not is_dask(output):  # in memory, beside Dask bags: one block
        output = da.asarray(output)
    first = "y_proba" if task == CLASSIFICATION else "y_pred"
    parts, _ = row_partitions(output, *columns, names=names, first=first, paired=True)
    read = dask.delayed(read_partition)
    summaries = compute_here(
        *[read(p, task, classes, per_row, True, pred is not None) for p in parts],
        here=reads_here(parts[:1]),
    )
    bags, sizes, sums = reduce_partitions(
        summaries, task, None if per_row else values, classes
    )
    means = sums / sizes[:, None]
    if task != CLASSIFICATION:
        errors = bag_errors_of(bags, means[:, 0], metrics, sizes=sizes)
        return errors, stand_in(bags, sizes)
    errors, width = {}, bags.n_classes
    for metric in metrics:
        kind, distance = metric.split("_")
        estimate = means[:, width:] if kind == "hard" else means[:, :width]
        soft = f"soft_{distance}"
        errors[metric] = bag_errors_of(bags, estimate, [soft])[soft]
    return errors, stand_in(bags, sizes)
