"""Dask collections: lazy predictions and the row partitions a fit streams."""

import functools
import threading

import numpy as np
import pandas as pd

from ._bags import CLASSIFICATION
from ._errors import bag_errors_of, check_predictions, check_proba
from ._read import attach_table, check_bags, values_argument

_PREDICTING = threading.RLock()


def _one_at_a_time(method, *args, **kwargs):
    """One block at a time per process (Dask runs blocks in threads)."""
    with _PREDICTING:
        return method(*args, **kwargs)


def is_dask(obj):
    """Whether ``obj`` is a Dask collection (array, DataFrame, Series)."""
    return type(obj).__module__.startswith("dask") and hasattr(obj, "dask")


def row_partitions(X, *columns, names=()):
    """The blocks of rows of ``X`` and ``columns``, as delayed tuples.

    ``columns`` are split like ``X`` (columns of the same Dask DataFrame, read in
    one task, or arrays rechunked to its row chunks). Returns one
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

    blocks = [_blocks(X.rechunk({axis: -1 for axis in range(1, X.ndim)}))]
    for column, name in zip(columns, names):
        if hasattr(column, "to_dask_array"):
            column = column.to_dask_array(lengths=True)
        column = da.asarray(column)
        if column.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name} has {column.shape[0]} rows but X has {X.shape[0]}."
            )
        chunks = {a: -1 for a in range(1, column.ndim)}
        blocks.append(_blocks(column.rechunk({0: X.chunks[0], **chunks})))
    join = dask.delayed(tuple, pure=True)
    return [join(b) for b in zip(*blocks)], [join(b[1:]) for b in zip(*blocks)]


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

        def block(rows):
            return _one_at_a_time(method, self, rows, *args, **kwargs)

        if hasattr(X, "map_partitions"):  # a DataFrame: its partitions of rows
            head = block(X.head(1, npartitions=-1))
            return X.map_partitions(
                block, meta=np.empty((0, *head.shape[1:]), head.dtype)
            )
        X = X.rechunk({axis: -1 for axis in range(1, X.ndim)})  # rows only
        head = block(np.asarray(X[:1].compute()))
        return X.map_blocks(
            block,
            dtype=head.dtype,
            chunks=(X.chunks[0], *head.shape[1:]),
            drop_axis=list(range(head.ndim, X.ndim)),
            meta=np.empty((0, *head.shape[1:]), head.dtype),
        )

    return predict


def dask_bag_errors(task, bags, values, output, metrics, *, classes=None, pred=None):
    """``{metric: error}`` of Dask ``output`` (and ``bags``, per-row
    ``values``, class index ``pred``), reduced partition by partition.

    Per-bag sums of every partition are added, so a bag may span partitions.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from sklearn_llp.core import dask_bag_errors
    >>> proba = da.from_array(np.array([[0.9, 0.1], [0.2, 0.8]] * 2), chunks=2)
    >>> dask_bag_errors("classification", da.from_array([0, 0, 1, 1], chunks=2),
    ...                 {0: [0.5, 0.5], 1: [0.5, 0.5]}, proba, ["hard_l1"])
    {'hard_l1': 0.0}
    """
    import dask

    per_row = is_dask(values)
    extra = {"values": values if per_row else None, "pred": pred}
    names = ["bags", *(k for k, v in extra.items() if v is not None)]
    columns = [bags, *(v for v in extra.values() if v is not None)]
    if hasattr(output, "divisions"):
        output = output.to_dask_array(lengths=True)
    parts, _ = row_partitions(output, *columns, names=names)
    sums = dask.delayed(_bag_sums)
    reduced = dask.compute(*[sums(p, task, per_row, pred is not None) for p in parts])
    totals = pd.concat([r[0] for r in reduced]).groupby(level=0, sort=False).sum()
    if per_row:
        values = pd.concat([r[1] for r in reduced]).groupby(level=0, sort=False).first()
        values = values.iloc[:, 0] if values.shape[1] == 1 else values
    key = values_argument(task)
    single = check_bags(totals.index.to_numpy())
    single = attach_table(single, values, task, classes, key)
    means = totals.filter(like="out").to_numpy() / totals["n"].to_numpy()[:, None]
    if task != CLASSIFICATION:
        sizes = totals["n"].to_numpy()[single.members]  # bag order of single
        return bag_errors_of(single, means, metrics, sizes=sizes)
    hard = totals.filter(like="hard").to_numpy() / totals["n"].to_numpy()[:, None]
    errors = {}
    for metric in metrics:
        kind, distance = metric.split("_")
        estimate = hard if kind == "hard" else means
        soft = f"soft_{distance}"
        errors[metric] = bag_errors_of(single, estimate, [soft])[soft]
    return errors


def _bag_sums(part, task, per_row, has_pred):
    """Per-bag row count and output sums of one partition, by bag id."""
    output, ids, *rest = part
    output = np.asarray(output, dtype=np.float64)
    n = len(output)
    if task == CLASSIFICATION:
        output = check_proba(output, n, output.shape[1] if output.ndim == 2 else 2)
        pred = np.asarray(rest[-1]) if has_pred else np.argmax(output, axis=1)
        hard = np.eye(output.shape[1])[pred]
    else:
        output, hard = check_predictions(output, n)[:, None], np.zeros((n, 0))
    frame = pd.DataFrame(
        np.column_stack([np.ones(n), output, hard]),
        columns=["n"]
        + [f"out{j}" for j in range(output.shape[1])]
        + [f"hard{j}" for j in range(hard.shape[1])],
    )
    frame.index = pd.Index(np.asarray(ids), tupleize_cols=False)
    sums = frame.groupby(level=0, sort=False).sum()
    if not per_row:
        return sums, None
    values = rest[0]
    if not hasattr(values, "columns"):
        values = pd.DataFrame(np.asarray(values).reshape(n, -1))
    return sums, values.set_axis(frame.index).groupby(level=0, sort=False).first()
