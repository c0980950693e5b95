"""Predictions over Dask collections, lazily, one block at a time."""

import functools

import numpy as np


def over_dask_partitions(method):
    """Make a prediction method lazy on a Dask array or DataFrame.

    Given Dask input, ``method`` returns a Dask array that applies the fitted
    model to each block of rows (as dask-ml's ``ParallelPostFit`` does), so
    the rows are never gathered in one process; any other input goes
    straight to ``method``.

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
        if not (type(X).__module__.startswith("dask") and hasattr(X, "dask")):
            return method(self, X, *args, **kwargs)

        def block(rows):
            return method(self, rows, *args, **kwargs)

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
