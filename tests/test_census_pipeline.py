"""Census-style data: DataFrames, categorical columns, Pipelines, group bags."""

import numpy as np
import pytest
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.metrics import f1_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import FeatureBagGenerator
from sklearn_llp.datasets import load_adult


@pytest.fixture(scope="module")
def adult_split():
    X, y = load_adult(return_X_y=True)
    y = y.astype(str)
    return train_test_split(X, y, train_size=6000, test_size=3000, random_state=0)


def _pipeline(dense=False, **params):
    kw = dict(handle_unknown="ignore", min_frequency=20, sparse_output=not dense)
    return make_pipeline(
        make_column_transformer(
            (OneHotEncoder(**kw), make_column_selector(dtype_include="category")),
            (StandardScaler(), make_column_selector(dtype_include="number")),
        ),
        LLPClassifier(verbose=0, random_state=0, **params),
    )


def test_pipeline_fits_from_a_dataframe_and_keeps_feature_names(adult_split):
    X_train, X_test, y_train, _ = adult_split
    bags, props = FeatureBagGenerator(["sex", "race"]).make_bags(X_train, y_train)
    pipe = _pipeline(dense=True, max_epochs=2).set_output(transform="pandas")
    pipe.fit(X_train, bags, llpclassifier__props=props)
    clf = pipe[-1]
    assert pipe.feature_names_in_.tolist() == X_train.columns.tolist()
    assert clf.feature_names_in_.tolist() == pipe[0].get_feature_names_out().tolist()
    assert clf.classes_.tolist() == [0, 1]  # props columns, not bag ids
    assert pipe.predict_proba(X_test).shape == (len(X_test), 2)


def test_sparse_one_hot_output_is_accepted(adult_split):
    X_train, X_test, y_train, _ = adult_split
    generator = FeatureBagGenerator(["education"])
    bags, props = generator.make_bags(X_train, y_train)
    pipe = _pipeline(max_epochs=1, classes=generator.classes_)
    pipe.fit(X_train, bags, llpclassifier__props=props)
    assert set(pipe.predict(X_test)) <= {"<=50K", ">50K"}


@pytest.mark.slow
def test_llp_on_census_groups_clearly_beats_the_majority_class(adult_split):
    X_train, X_test, y_train, y_test = adult_split
    generator = FeatureBagGenerator(["age", "sex", "education"], n_bins={"age": 6})
    bags, props = generator.make_bags(X_train, y_train)
    pipe = _pipeline(max_epochs=30, classes=generator.classes_)
    pipe.fit(X_train, bags, llpclassifier__props=props)
    proba = pipe.predict_proba(X_test)[:, 1]
    f1 = f1_score(y_test, pipe.predict(X_test), pos_label=">50K")
    auc = roc_auc_score(y_test == ">50K", proba)
    # the majority class has F1 = 0 and AUC = 0.5
    assert f1 > 0.45, f1
    assert auc > 0.80, auc
    assert np.mean(pipe.predict(X_test) == y_test) > 0.78
