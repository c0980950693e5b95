"""The UCI Adult (Census Income) data set, bundled with the package.

Source: Becker, B. & Kohavi, R. (1996). *Adult* [Dataset]. UCI Machine
Learning Repository. https://doi.org/10.24432/C5XW20. Licensed under
Creative Commons Attribution 4.0 International (CC BY 4.0).

The bundled ``data/adult.csv.gz`` holds all 48,842 rows: the 32,561 rows of
``adult.data`` followed by the 16,281 rows of ``adult.test``, cleaned as
described in (and rebuilt byte for byte by)
:func:`sklearn_llp.datasets._make_adult.build_adult_csv`.
"""

from importlib import resources

import numpy as np
import pandas as pd
from sklearn.utils import Bunch

from ._make_adult import ADULT_COLUMNS

#: Name of the bundled file inside ``sklearn_llp/datasets/data``.
ADULT_FILENAME = "adult.csv.gz"

#: Number of rows of the original training file (the first rows).
ADULT_N_TRAIN = 32_561

_NUMERIC = (
    "age",
    "fnlwgt",
    "education_num",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
)
_CATEGORICAL = (
    "workclass",
    "education",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "native_country",
)
_FEATURES = ADULT_COLUMNS[:-1]
_TARGET = ADULT_COLUMNS[-1]
_TARGET_NAMES = ("<=50K", ">50K")

DESCR = """\
.. _adult_dataset:

Adult (Census Income) dataset
-----------------------------

Extraction of the 1994 US Census database by Barry Becker; the task is to
predict whether a person earns more than 50,000 USD a year.

**Data Set Characteristics:**

:Number of Instances: 48,842 (32,561 of the original ``adult.data`` first,
    then 16,281 of ``adult.test``)
:Number of Attributes: 14 (6 integer, 8 categorical)
:Attribute Information:
    - age (int)
    - workclass (category, missing for 2,799 rows)
    - fnlwgt (int): census sampling weight
    - education (category)
    - education_num (int)
    - marital_status (category)
    - occupation (category, missing for 2,809 rows)
    - relationship (category)
    - race (category)
    - sex (category)
    - capital_gain (int)
    - capital_loss (int)
    - hours_per_week (int)
    - native_country (category, missing for 857 rows)
:Target: income, ``<=50K`` (about 76 %) or ``>50K`` (about 24 %)
:Missing Attribute Values: ``?`` in the raw files, missing here
:Creator: Ronny Kohavi and Barry Becker
:Source: UCI Machine Learning Repository, https://doi.org/10.24432/C5XW20
:License: Creative Commons Attribution 4.0 International (CC BY 4.0)

Cleaning: the test file's comment line and the trailing ``.`` of its labels
(``>50K.``) were removed, whitespace was stripped and ``?`` became missing.
Column names use underscores instead of hyphens.

.. rubric:: References

- Becker, B. & Kohavi, R. (1996). Adult [Dataset]. UCI Machine Learning
  Repository. https://doi.org/10.24432/C5XW20
- Kohavi, R. (1996). Scaling up the accuracy of naive-Bayes classifiers: a
  decision-tree hybrid. Proceedings of KDD-96.
"""


def _read_adult_frame():
    """Read the bundled CSV into a typed DataFrame (features + target)."""
    dtypes = {name: "int64" for name in _NUMERIC}
    dtypes.update({name: "category" for name in _CATEGORICAL})
    dtypes[_TARGET] = pd.CategoricalDtype(list(_TARGET_NAMES))
    source = resources.files(__package__).joinpath("data", ADULT_FILENAME)
    with source.open("rb") as handle:
        frame = pd.read_csv(
            handle,
            compression="gzip",
            dtype=dtypes,
            keep_default_na=False,
            na_values={name: [""] for name in _CATEGORICAL},
        )
    return frame[list(_FEATURES) + [_TARGET]]


def load_adult(*, as_frame=True, return_X_y=False):
    """Load the UCI Adult (Census Income) data set (classification).

    All 48,842 rows of the original training and test files, bundled with
    the package so that it loads offline. The first 32,561 rows are the
    original ``adult.data``, the remaining 16,281 rows ``adult.test``.

    =================   ==========================
    Classes                                      2
    Samples total                            48842
    Samples per class    37155 <=50K, 11687 >50K
    Features                  14 (6 int, 8 categ.)
    =================   ==========================

    Source: Becker & Kohavi (1996), UCI Machine Learning Repository,
    https://doi.org/10.24432/C5XW20, licensed CC BY 4.0 (see the ``NOTICE``
    file).

    Parameters
    ----------
    as_frame : bool, default=True
        If True, ``data`` is a pandas DataFrame with the 8 categorical
        columns as ``category`` dtype (missing values, ``?`` in the raw
        files, are NaN) and the 6 numeric columns as ``int64``; ``target`` is
        a categorical Series named ``income`` with categories ``<=50K`` and
        ``>50K``; ``frame`` is the DataFrame of both. If False, ``data`` is a
        numpy object array of shape (48842, 14) (ints and strings, missing
        values as ``np.nan``), ``target`` a numpy object array of strings
        and ``frame`` is None.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes:

        data : DataFrame or ndarray of shape (48842, 14)
            The features.
        target : Series or ndarray of shape (48842,)
            The income class, ``<=50K`` or ``>50K``.
        frame : DataFrame of shape (48842, 15) or None
            ``data`` with the ``income`` column; None unless ``as_frame``.
        feature_names : list of str
            The 14 column names of ``data``.
        target_names : ndarray of shape (2,)
            ``['<=50K', '>50K']``.
        DESCR : str
            Description of the data set, its source and licence.

    (data, target) : tuple if ``return_X_y`` is True
        The ``data`` and ``target`` described above.

    See Also
    --------
    sklearn_llp.bags.FeatureBagGenerator : Bags from column values, e.g.
        census-style groups of Adult.

    Examples
    --------
    >>> from sklearn_llp.datasets import load_adult
    >>> adult = load_adult()
    >>> adult.data.shape
    (48842, 14)
    >>> adult.target.value_counts().to_dict()
    {'<=50K': 37155, '>50K': 11687}
    >>> X, y = load_adult(as_frame=False, return_X_y=True)
    >>> X.dtype, y[:2].tolist()
    (dtype('O'), ['<=50K', '<=50K'])
    """
    frame = _read_adult_frame()
    feature_names = list(_FEATURES)
    if as_frame:
        data = frame[feature_names]
        target = frame[_TARGET]
    else:
        data = np.empty((len(frame), len(feature_names)), dtype=object)
        for j, name in enumerate(feature_names):
            column = frame[name]
            values = np.array(column.astype(object), dtype=object)
            values[column.isna().to_numpy()] = np.nan
            data[:, j] = values
        target = np.array(frame[_TARGET].astype(object), dtype=object)
        frame = None
    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=feature_names,
        target_names=np.array(_TARGET_NAMES, dtype=object),
        DESCR=DESCR,
    )
