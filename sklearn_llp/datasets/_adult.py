"""The UCI Adult (Census Income) data set, bundled with the package
(``data/adult.csv.gz``, rebuilt byte for byte by ``benchmarks/make_adult.py``)."""

from importlib import resources

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

#: Number of rows of the original training file (the first rows).
ADULT_N_TRAIN = 32_561
#: Column names of the bundled file, in order; the last one is the target.
ADULT_COLUMNS = tuple(
    "age workclass fnlwgt education education_num marital_status occupation "
    "relationship race sex capital_gain capital_loss hours_per_week "
    "native_country income".split()
)

_NUMERIC = "age fnlwgt education_num capital_gain capital_loss hours_per_week".split()
_FEATURES, _TARGET = ADULT_COLUMNS[:-1], ADULT_COLUMNS[-1]
_CATEGORICAL = [name for name in _FEATURES if name not in _NUMERIC]
_TARGET_NAMES = ("<=50K", ">50K")


def _data_file(name):
    return resources.files(__package__).joinpath("data", name)


def load_adult(*, as_frame=True, return_X_y=False):
    """Load the UCI Adult (Census Income) data set (classification).

    All 48,842 rows (``adult.data``, then ``adult.test``), bundled so that it
    loads offline; licensed CC BY 4.0 (``DESCR`` describes it).

    Parameters
    ----------
    as_frame : bool, default=True
        DataFrame (categorical columns as ``category``) and Series, or object
        arrays (``frame`` None); missing values NaN.
    return_X_y : bool, default=False

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or tuple
        ``data``, ``target``, ``frame``, ``feature_names``, ``target_names``
        and ``DESCR``; or ``(data, target)``.

    Examples
    --------
    >>> from sklearn_llp.datasets import load_adult
    >>> adult = load_adult()
    >>> adult.target.value_counts().to_dict()
    {'<=50K': 37155, '>50K': 11687}
    """
    dtypes = {name: "int64" for name in _NUMERIC}
    dtypes.update({name: "category" for name in _CATEGORICAL})
    dtypes[_TARGET] = pd.CategoricalDtype(list(_TARGET_NAMES))
    with _data_file("adult.csv.gz").open("rb") as handle:
        options = dict(keep_default_na=False, na_values={n: [""] for n in _CATEGORICAL})
        frame = pd.read_csv(handle, compression="gzip", dtype=dtypes, **options)
    feature_names = list(_FEATURES)
    frame = frame[feature_names + [_TARGET]]
    if as_frame:
        data, target = frame[feature_names], frame[_TARGET]
    else:
        data = frame[feature_names].astype(object).to_numpy()  # missing: NaN
        target = frame[_TARGET].astype(object).to_numpy()
        frame = None
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=feature_names,
        target_names=np.array(_TARGET_NAMES, dtype=object),
        DESCR=_data_file("adult.rst").read_text(encoding="utf-8"),
    )
