"""Census quickstart: an income classifier learned from group-level rates.

The UCI Adult census extract (bundled) is split into train and test. The
training people are grouped the way census tables are published -- here by
age band x sex x education -- and only each group's share of incomes above
$50K is kept. A Pipeline (one-hot categoricals, scaled numerics,
LLPClassifier) is fitted on those groups and their proportions alone, and
compared on the test people with the same pipeline trained on individual
labels and with the majority-class baseline.

Runs offline in about 25 seconds on 2 idle CPU cores.
"""

import time

import numpy as np
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.dummy import DummyClassifier
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import FeatureBagGenerator
from sklearn_llp.datasets import load_adult


def preprocessor():
    return make_column_transformer(
        (
            OneHotEncoder(handle_unknown="ignore", min_frequency=20),
            make_column_selector(dtype_include="category"),
        ),
        (StandardScaler(), make_column_selector(dtype_include="number")),
    )


def report(name, model, X_test, y_test, seconds):
    proba = model.predict_proba(X_test)[:, list(model.classes_).index(">50K")]
    pred = model.predict(X_test)
    print(
        f"{name:<34} accuracy {accuracy_score(y_test, pred):.3f}   "
        f"F1(>50K) {f1_score(y_test, pred, pos_label='>50K'):.3f}   "
        f"ROC AUC {roc_auc_score(y_test == '>50K', proba):.3f}   "
        f"({seconds:.0f} s)"
    )


def main():
    X, y = load_adult(return_X_y=True)
    y = y.astype(str)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, stratify=y, random_state=0
    )

    # Census-style groups: age band x sex x education.
    groups = FeatureBagGenerator(["age", "sex", "education"], n_bins={"age": 6})
    bags, props = groups.make_bags(X_train, y_train)
    print(
        f"{len(X_train)} training people in {groups.n_bags_} groups "
        f"(median size {int(np.median(groups.bag_sizes_))}); only each group's "
        "income shares are used.\n"
    )

    start = time.perf_counter()
    llp = make_pipeline(
        preprocessor(),
        LLPClassifier(
            classes=groups.classes_, max_epochs=30, random_state=0, verbose=0
        ),
    )
    llp.fit(X_train, bags, llpclassifier__props=props)
    report(
        "LLP-VAT from group proportions",
        llp,
        X_test,
        y_test,
        time.perf_counter() - start,
    )

    # The same pipeline given every person's label (props=None): the limit.
    start = time.perf_counter()
    supervised = make_pipeline(
        preprocessor(), LLPClassifier(max_epochs=10, random_state=0, verbose=0)
    )
    supervised.fit(X_train, y_train)
    report(
        "same pipeline, individual labels",
        supervised,
        X_test,
        y_test,
        time.perf_counter() - start,
    )

    majority = DummyClassifier().fit(X_train, y_train)
    report("majority class", majority, X_test, y_test, 0)


if __name__ == "__main__":
    main()
