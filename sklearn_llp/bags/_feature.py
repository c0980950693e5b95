"""Bags of rows sharing the values of some columns (census-style groups)."""

from numbers import Integral

import numpy as np
import pandas as pd
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from ..core import UNBAGGED
from ._base import _BaseBagGenerator
from ._identifiability import _is_number

#: Code of a value of ``transform``'s input that was not seen in fit.
_UNSEEN = -2


def _as_frame(X):
    """``X`` as a DataFrame (a list of rows read by column), and whether it was one."""
    if isinstance(X, pd.DataFrame):
        return X, True
    rows = isinstance(X, (list, tuple))
    array = np.asarray(X, dtype=object if rows else None)
    if array.ndim != 2:
        raise ValueError(
            f"X must be 2-D (n_samples, n_features); got shape {array.shape}."
        )
    return pd.DataFrame(list(X) if rows else array), False


def _booleans(values):
    """Which values of a Series are booleans (missing values: False)."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        categories = _booleans(pd.Series(dtype.categories, dtype=object))
        codes = values.cat.codes.to_numpy()
        return np.where(codes >= 0, categories[np.maximum(codes, 0)], False)
    if pd.api.types.is_bool_dtype(dtype):
        return ~pd.isna(values).to_numpy()
    if dtype.kind != "O":
        return np.zeros(len(values), dtype=bool)
    objects = values.to_numpy(dtype=object)
    kinds = (isinstance(value, (bool, np.bool_)) for value in objects)
    return np.fromiter(kinds, dtype=bool, count=len(objects))


def _uniques(values):
    """Distinct non-missing values, sorted where they can be ordered."""
    try:
        uniques = pd.factorize(values, sort=True)[1]
    except TypeError:  # values of types that cannot be ordered
        uniques = pd.factorize(values, sort=False)[1]
    return list(np.asarray(uniques, dtype=object))


class _ColumnEncoder:
    """Codes of one grouping column; booleans apart, as ``True == 1`` in pandas."""

    def __init__(self, values, n_bins):
        self.edges = None
        if n_bins is not None:
            numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
            finite = numbers[~np.isnan(numbers)]
            edges = np.empty(0)
            if len(finite):
                edges = np.unique(np.quantile(finite, np.linspace(0, 1, n_bins + 1)))
                edges = np.repeat(edges, 2 if len(edges) == 1 else 1)
            self.edges = edges
            self.levels = [
                pd.Interval(lo, hi, closed="both" if i == 0 else "right")
                for i, (lo, hi) in enumerate(zip(edges[:-1], edges[1:]))
            ]
        else:
            booleans = _booleans(values)
            present = ~pd.isna(values).to_numpy()
            if booleans.any() and not booleans[present].all():
                # booleans and other values: each kind on its own (they would
                # merge), then sorted together, False before 0
                objects = values.to_numpy(dtype=object)
                parts = [_uniques(objects[present & (booleans == k)]) for k in (0, 1)]
                levels = parts[0] + parts[1]
                kinds = [False] * len(parts[0]) + [True] * len(parts[1])
                try:
                    order = sorted(
                        range(len(levels)), key=lambda i: (levels[i], not kinds[i])
                    )
                except TypeError:  # values of types that cannot be ordered
                    order = range(len(levels))
                levels = [levels[i] for i in order]
                kinds = np.array([kinds[i] for i in order], dtype=bool)
            else:
                levels = _uniques(values)
                kinds = np.full(len(levels), booleans.any())
            self.levels, self._indexes = levels, {}
            # one index per kind: where a boolean, or another value, is in levels
            for kind in (False, True):
                at = np.flatnonzero(kinds == kind)
                index = pd.Index([levels[i] for i in at], dtype=object)
                self._indexes[kind] = index, at
        self.n_levels = len(self.levels)

    def encode(self, values):
        missing = pd.isna(values).to_numpy()
        if self.edges is not None:
            numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
            if self.n_levels == 0:
                codes = np.full(len(values), _UNSEEN, dtype=np.int64)
            else:
                codes = np.searchsorted(self.edges[1:-1], numbers, side="left")
        else:
            objects = values.to_numpy(dtype=object)
            booleans = _booleans(values)
            codes = np.full(len(objects), _UNSEEN, dtype=np.int64)
            for kind, mask in ((False, ~booleans), (True, booleans)):
                index, positions = self._indexes[kind]
                if mask.any() and len(index):
                    found = index.get_indexer(objects[mask])
                    codes[mask] = np.where(
                        found >= 0, positions[np.maximum(found, 0)], _UNSEEN
                    )
        codes = np.asarray(codes, dtype=np.int64)
        codes[missing] = self.n_levels
        return codes

    def labels(self, codes):
        levels = np.empty(self.n_levels + 1, dtype=object)
        levels[:] = [*self.levels, np.nan]  # code n_levels: missing
        return levels[codes]


class FeatureBagGenerator(_BaseBagGenerator):
    """Bags of rows sharing the values of some columns (census-style groups).

    Rows grouped like ``X.groupby(columns, dropna=False)``, numeric columns
    optionally in quantile bins (:ref:`data_model`).

    Parameters
    ----------
    columns : str, int or list of str and int
        Grouping columns, by name (DataFrame) or position.
    n_bins : int, dict or None, default=None
        Quantile bins of every numeric grouping column (an int), of the columns
        a dict ``{column: n_bins}`` names, or of none.

    Attributes
    ----------
    labels_, sample_mask_, n_bags_, bag_ids_, bag_sizes_, classes_
        As in :class:`UniformBagGenerator`.
    bag_labels_ : DataFrame of shape (n_bags_, n_columns)
        Every bag's values (or :class:`pandas.Interval` bins), NaN for missing.
    bin_edges_ : dict
        ``{column: edges}`` of every binned column.
    n_features_in_, feature_names_in_

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_llp.bags import FeatureBagGenerator
    >>> X = pd.DataFrame({"region": ["N", "S", "N", "S", None, "N"],
    ...                   "age": [23, 35, 47, 59, 61, 30]})
    >>> gen = FeatureBagGenerator(["region", "age"], n_bins=2)
    >>> gen.fit_transform(X)
    array([0, 2, 1, 3, 4, 0])
    >>> gen.bag_labels_.loc[1].tolist()
    ['N', Interval(41.0, 61.0, closed='right')]
    >>> gen.transform(pd.DataFrame({"region": ["S", "W"], "age": [99, 30]}))
    array([ 3, -1])
    """

    _parameter_constraints = {
        "columns": [str, Integral, list, tuple],
        "n_bins": [None, Interval(Integral, 1, None, closed="left"), dict],
    }

    def __init__(self, columns, *, n_bins=None):
        self.columns = columns
        self.n_bins = n_bins

    def _select(self, frame, is_frame, column):
        """The values of one grouping column as a Series."""
        if isinstance(column, str):
            if not is_frame:
                raise ValueError(
                    f"Column {column!r} is selected by name, which needs X as a "
                    "pandas DataFrame; pass a DataFrame or use integer positions."
                )
            if column not in frame.columns:
                raise ValueError(
                    f"Unknown column {column!r}: X has columns "
                    f"{list(frame.columns)[:20]}."
                )
            values = frame[column]
            if isinstance(values, pd.DataFrame):
                raise ValueError(f"X has several columns named {column!r}.")
            return values
        if not -frame.shape[1] <= column < frame.shape[1]:
            raise ValueError(
                f"Unknown column {column}: X has {frame.shape[1]} columns "
                f"(positions 0 .. {frame.shape[1] - 1})."
            )
        values = frame.iloc[:, column]
        return values if is_frame else values.infer_objects()

    def _fit_labels(self, X):
        """Find the groups of ``X`` (any hashable values, missing included)."""
        frame, is_frame = _as_frame(X)
        self.n_features_in_ = frame.shape[1]
        if is_frame and all(isinstance(c, str) for c in frame.columns):
            self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        columns = self.columns
        columns = [columns] if isinstance(columns, (str, Integral)) else list(columns)
        if not columns:
            raise ValueError("columns is empty: name at least one grouping column.")
        for column in columns:
            if not isinstance(column, (str, Integral)) or isinstance(column, bool):
                raise TypeError(
                    "columns must hold column names (str) or positions (int); "
                    f"got {column!r}."
                )
        if len(set(columns)) != len(columns):
            raise ValueError(f"columns repeats a column: {columns}.")
        per_column = isinstance(self.n_bins, dict)
        if per_column:
            unknown = [key for key in self.n_bins if key not in columns]
            if unknown:
                raise ValueError(
                    f"n_bins names columns that are not grouping columns: {unknown}; "
                    f"columns is {columns}."
                )
            for key, value in self.n_bins.items():
                bad = not isinstance(value, Integral) or isinstance(value, bool)
                if value is not None and (bad or value < 1):
                    raise ValueError(
                        f"n_bins[{key!r}] must be a positive int or None; "
                        f"got {value!r}."
                    )
        self._encoders, self.bin_edges_, codes = [], {}, []
        for column in columns:
            values = self._select(frame, is_frame, column)
            n_bins = self.n_bins.get(column) if per_column else self.n_bins
            if n_bins is not None and not _is_number(values):
                if per_column:
                    raise ValueError(
                        f"n_bins asks to bin column {column!r}, which is not "
                        f"numeric (dtype {values.dtype})."
                    )
                n_bins = None
            encoder = _ColumnEncoder(values, n_bins)
            if encoder.edges is not None:
                self.bin_edges_[column] = encoder.edges
            self._encoders.append(encoder)
            codes.append(encoder.encode(values))
        groups, labels = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
        self._columns = columns
        self._group_index = pd.MultiIndex.from_arrays(list(groups.T))
        names = zip(columns, self._encoders)
        values = {col: enc.labels(groups[:, j]) for j, (col, enc) in enumerate(names)}
        index = pd.RangeIndex(len(groups), name="bag")
        self.bag_labels_ = pd.DataFrame(values, index=index).infer_objects()
        return labels.ravel()

    def transform(self, X):
        """The fitted bag of every row of ``X``, by its grouping columns.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)

        Returns
        -------
        bags : ndarray of shape (n_samples,), dtype int64
            ``-1`` for values unseen in fit; binned values clip to the end bins.
        """
        check_is_fitted(self)
        frame, is_frame = _as_frame(X)
        columns = zip(self._columns, self._encoders)
        codes = [enc.encode(self._select(frame, is_frame, col)) for col, enc in columns]
        keys = pd.MultiIndex.from_arrays(codes)
        bags = self._group_index.get_indexer(keys)
        bags[np.any(np.column_stack(codes) == _UNSEEN, axis=1)] = UNBAGGED
        return bags.astype(np.int64)
