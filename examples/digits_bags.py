"""Digits from bags of 16: LLP-VAT and DLLP against the supervised limit.

scikit-learn's digits are split 70/30 and standardised; the training images
are cut into random bags of 16 and only each bag's digit proportions are
kept. Default LLPClassifier settings learn an instance classifier from them
in a few seconds on a CPU.
"""

import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from sklearn_llp import LLPClassifier
from sklearn_llp.bags import UniformBagGenerator


def main():
    X, y = load_digits(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.3, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

    bags, props = UniformBagGenerator(16, drop_last=False, random_state=0).make_bags(
        X_train, y_train
    )
    print(f"{len(X_train)} training images in {bags.max() + 1} bags of 16\n")

    for name, method, labels in [
        ("LLP-VAT (bags of 16)", "vat", None),
        ("DLLP (bags of 16)", "dllp", None),
        ("supervised (same network)", "dllp", y_train),
    ]:
        clf = LLPClassifier(method=method, random_state=0, verbose=0)
        start = time.perf_counter()
        if labels is None:
            clf.fit(X_train, bags, props)
        else:
            clf.fit(X_train, labels)
        seconds = time.perf_counter() - start
        accuracy = np.mean(clf.predict(X_test) == y_test)
        print(f"{name:<28} test accuracy {accuracy:.3f}  ({seconds:.1f} s)")


if __name__ == "__main__":
    main()
