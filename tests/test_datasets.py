"""Tests of the bundled data sets."""

import gzip
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.utils import Bunch

from sklearn_llp.datasets import load_adult
from sklearn_llp.datasets._adult import ADULT_COLUMNS, ADULT_N_TRAIN

# the tool that rebuilt the bundled file (benchmarks/make_adult.py)
_SPEC = importlib.util.spec_from_file_location(
    "make_adult", Path(__file__).resolve().parents[1] / "benchmarks" / "make_adult.py"
)
make_adult = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(make_adult)
build_adult_csv = make_adult.build_adult_csv

CATEGORICAL = (
    "workclass education marital_status occupation relationship race sex native_country"
).split()
NUMERIC = "age fnlwgt education_num capital_gain capital_loss hours_per_week".split()


@pytest.fixture(scope="module")
def adult():
    return load_adult()


def test_frame_names_dtypes_and_first_rows(adult):
    assert isinstance(adult, Bunch)
    assert adult.data.shape == (48842, 14) and adult.target.shape == (48842,)
    assert adult.frame.shape == (48842, 15)
    assert adult.feature_names == list(adult.data.columns)
    assert sorted(adult.feature_names) == sorted(CATEGORICAL + NUMERIC)
    assert adult.target.name == "income"
    assert adult.target_names.tolist() == ["<=50K", ">50K"]
    assert "10.24432/C5XW20" in adult.DESCR and "CC BY 4.0" in adult.DESCR
    for name in CATEGORICAL:
        assert isinstance(adult.data[name].dtype, pd.CategoricalDtype), name
    for name in NUMERIC:
        assert adult.data[name].dtype == np.int64, name
    assert adult.target.cat.categories.tolist() == ["<=50K", ">50K"]
    assert set(adult.data["sex"].cat.categories) == {"Female", "Male"}
    first, first_test = adult.frame.iloc[0], adult.frame.iloc[ADULT_N_TRAIN]
    assert first["age"] == 39 and first["workclass"] == "State-gov"
    assert first["income"] == "<=50K"
    assert first_test["age"] == 25 and first_test["education"] == "11th"


def test_clean_labels_and_missing_values(adult):
    assert not adult.target.isna().any()
    assert set(adult.target.astype(str)) == {"<=50K", ">50K"}
    assert 0.23 < (adult.target == ">50K").mean() < 0.25
    # the test file's labels (">50K.") were cleaned too
    test_part = adult.target.iloc[ADULT_N_TRAIN:]
    assert len(test_part) == 16281
    assert 0.22 < (test_part == ">50K").mean() < 0.25
    for name in CATEGORICAL:
        categories = adult.data[name].cat.categories
        assert "?" not in categories, name
        assert all(c == c.strip() and not c.endswith(".") for c in categories)
    missing = adult.data.isna().sum()
    assert missing["workclass"] == 2799 and missing["occupation"] == 2809
    assert missing["native_country"] == 857 and missing[NUMERIC].sum() == 0


@pytest.mark.slow
def test_return_X_y(adult):
    X, y = load_adult(return_X_y=True)
    pd.testing.assert_frame_equal(X, adult.data)
    pd.testing.assert_series_equal(y, adult.target)


def test_as_numpy(adult):
    bunch = load_adult(as_frame=False)
    assert bunch.frame is None
    assert isinstance(bunch.data, np.ndarray) and bunch.data.dtype == object
    assert bunch.data.shape == (48842, 14)
    assert isinstance(bunch.target, np.ndarray) and bunch.target.dtype == object
    assert set(bunch.target) == {"<=50K", ">50K"}
    column = bunch.feature_names.index("workclass")
    values = bunch.data[:, column]
    assert pd.isna(values).sum() == 2799
    assert "?" not in set(values[~pd.isna(values)])
    assert bunch.data[0, bunch.feature_names.index("age")] == 39
    X, y = load_adult(as_frame=False, return_X_y=True)
    assert X.shape == (48842, 14) and y.shape == (48842,)


def test_build_cleans_raw_files(tmp_path):
    train = (
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, "
        "Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n"
        "54, ?, 180211, Some-college, 10, Married-civ-spouse, ?, Husband, "
        "Asian-Pac-Islander, Male, 0, 0, 60, South, >50K\n\n"
    )
    test = (
        "|1x3 Cross validator\n"
        "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, "
        "Own-child, Black, Male, 0, 0, 40, ?, >50K.\n"
    )
    (tmp_path / "adult.data").write_text(train)
    (tmp_path / "adult.test").write_text(test)
    destination = tmp_path / "adult.csv.gz"
    assert build_adult_csv(tmp_path, destination) == (2, 1)
    text = gzip.decompress(destination.read_bytes()).decode()
    lines = text.splitlines()
    assert lines[0].split(",") == list(ADULT_COLUMNS)
    assert lines[2].startswith("54,,180211,Some-college") and ",," in lines[2]
    assert lines[3].endswith(",Black,Male,0,0,40,,>50K")
    assert "?" not in text and " " not in text and "|" not in text
    # reproducible bytes
    first = destination.read_bytes()
    build_adult_csv(tmp_path, destination)
    assert destination.read_bytes() == first
    (tmp_path / "adult.test").write_text("1, 2, 3\n")
    with pytest.raises(ValueError, match="expected 15 fields"):
        build_adult_csv(tmp_path, destination)
