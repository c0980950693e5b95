"""End-to-end test of benchmarks/studies/reproduce_paper.py on tiny fake data sets.

Fake CIFAR-10 pickles and SVHN ``.mat`` files in the released formats are
written to a temporary directory; one cell of each runs for 2 epochs with a
WRN-10-1, and the output table is checked. The augmentation is unit-tested.
"""

import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.io import savemat

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks" / "studies"
sys.path.insert(0, str(BENCHMARKS))

import reproduce_paper as rp  # noqa: E402
from wrn import WideResNet  # noqa: E402


def write_fake_cifar10(root, n_per_batch=64, n_test=64, seed=0):
    rng = np.random.default_rng(seed)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    for name in names:
        n = n_test if name == "test_batch" else n_per_batch
        batch = {
            b"batch_label": name.encode(),
            b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
            b"labels": [int(v) for v in rng.integers(0, 10, n)],
            b"filenames": [f"{name}_{i}.png".encode() for i in range(n)],
        }
        with open(folder / name, "wb") as f:
            pickle.dump(batch, f)


def write_fake_svhn(root, n_train=320, n_test=64, seed=1):
    rng = np.random.default_rng(seed)
    for name, n in (("train", n_train), ("test", n_test)):
        X = rng.integers(0, 256, (32, 32, 3, n), dtype=np.uint8)
        y = rng.integers(1, 11, (n, 1)).astype(np.uint8)  # 10 is digit 0
        savemat(root / f"{name}_32x32.mat", {"X": X, "y": y})


TINY = ["--epochs", "2", "--wrn-depth", "10", "--wrn-width", "1", "--device", "cpu"]


@pytest.mark.slow
def test_cifar10_and_svhn_cells_end_to_end(tmp_path):
    data, out = tmp_path / "data", tmp_path / "out"
    write_fake_cifar10(data)
    write_fake_svhn(data)
    common = ["--data-dir", str(data), "--out", str(out), *TINY]

    rp.main(
        [*common, "--dataset", "cifar10", "--bagging", "uniform:16", "--method", "vat"]
        + ["--alpha", "0.5,0.05"]
    )
    rp.main([*common, "--dataset", "svhn", "--bagging", "kmeans:8", "--method", "dllp"])

    report = json.loads((out / "reproduce_paper.json").read_text())
    keys = ("dataset", "bagging", "value", "method")
    cells = {tuple(c[k] for k in keys): c for c in report["cells"]}
    assert set(cells) == {
        ("cifar10", "uniform", 16, "vat"),
        ("svhn", "kmeans", 8, "vanilla"),
    }
    vat = cells["cifar10", "uniform", 16, "vat"]
    assert [r["params"]["method__alpha"] for r in vat["runs"]] == [0.5, 0.05]
    assert all(r["params"]["method__eps"] == 6.0 for r in vat["runs"])
    best = min(vat["runs"], key=lambda r: r["valid_hard_l1"])
    assert vat["selected"] == best["params"]
    assert vat["test_acc"] == best["test_acc"]
    for run in vat["runs"]:
        assert len(run["test_acc_last_epochs"]) == 2  # both of the 2 epochs
        assert 0.0 <= run["test_acc"] <= 1.0
        # MultiStepLR at round(0.8 * 2) = 2 epochs: lr x 0.2 after epoch 2
        assert run["final_lr"] == pytest.approx(3e-4 * 0.2)
    assert vat["n_train_rows"] == 16 * vat["n_train_bags"]
    assert vat["n_valid_bags"] == 2  # 10 % of 20 bags of 16 out of 320 rows
    assert vat["batch_size"] == 32  # about two bags per step
    assert vat["paper"] == 89.30
    svhn = cells["svhn", "kmeans", 8, "vanilla"]
    assert svhn["selected"] == {} and len(svhn["runs"]) == 1
    assert svhn["paper"] is None  # K=8 is not a column of the paper

    table = (out / "reproduce_paper.md").read_text()
    assert "## Table 1: uniform bags" in table
    assert "| Dataset | Method | Bag size 16 | Bag size 32 | Bag size 64 |" in table
    row = next(ln for ln in table.splitlines() if ln.startswith("| CIFAR10 | LLP-VAT"))
    assert row.split("|")[3].strip() == f"{100 * vat['test_acc']:.2f} (89.30)"
    assert "| CIFAR10 | vanilla | — (88.77) |" in table
    assert "## Tables 2-3: K-means bags" in table
    assert "K 4576" in table and "K 8" in table
    assert "WRN-10-1" in table and "NOT the paper's" in table


def test_loaders_read_the_released_layouts_and_name_missing_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="data_batch_1.*test_batch"):
        rp.load_dataset("cifar10", tmp_path)
    with pytest.raises(FileNotFoundError, match="train_32x32.mat"):
        rp.load_dataset("svhn", tmp_path)
    with pytest.raises(FileNotFoundError, match="cifar-100-python"):
        rp.load_dataset("cifar100", tmp_path)
    write_fake_cifar10(tmp_path, n_per_batch=4, n_test=3)
    write_fake_svhn(tmp_path, n_train=5, n_test=2)
    X, y, X_test, y_test, k = rp.load_dataset("cifar10", tmp_path)
    assert X.shape == (20, 3, 32, 32) and X.dtype == np.uint8 and k == 10
    assert X_test.shape == (3, 3, 32, 32) and y.shape == (20,)
    with open(tmp_path / "cifar-10-batches-py" / "data_batch_1", "rb") as f:
        raw = pickle.load(f, encoding="bytes")[b"data"]
    # channel planes: the first 1024 bytes are the red 32x32 image
    np.testing.assert_array_equal(X[0, 0], raw[0, :1024].reshape(32, 32))
    X, y, _, _, k = rp.load_dataset("svhn", tmp_path)
    assert X.shape == (5, 3, 32, 32) and k == 10 and set(y) <= set(range(10))


def test_plan_expands_rows_and_full():
    svhn = ["--dataset", "svhn", "--bagging", "kmeans"]
    args = rp.parse_args(["--data-dir", ".", *svhn])
    pairs = [(k, m) for k in rp.KMEANS_K["svhn"] for m in ("vanilla", "vat")]
    assert rp.plan(args) == [("svhn", "kmeans", k, m) for k, m in pairs]
    args = rp.parse_args(["--data-dir", ".", "--full"])
    assert len(rp.plan(args)) == 3 * (5 * 3 + 5 * 2)
    args = rp.parse_args(["--data-dir", "."])
    assert rp.plan(args) == [("cifar10", "uniform", 64, "vat")]


# --- augmentation
def _distinct_images(n=64, c=3, h=32, w=32):
    return torch.arange(n * c * h * w, dtype=torch.float32).view(n, c, h, w) + 1.0


@pytest.mark.parametrize("fill", [None, (-1.0, -2.0, -3.0)])
def test_a_crop_is_a_random_window_of_the_image_padded_with_the_fill(fill):
    X = _distinct_images()
    gen = torch.Generator().manual_seed(0)
    out = rp.random_crop_flip(X, padding=4, flip=False, fill=fill, generator=gen)
    assert out.shape == X.shape and out.dtype == X.dtype
    padded = torch.tensor(fill or (0.0, 0.0, 0.0)).view(1, 3, 1, 1)
    padded = padded.repeat(len(X), 1, 40, 40)  # fill: per channel, None is 0
    padded[:, :, 4:36, 4:36] = X
    offsets = set()
    for i in range(len(X)):
        found = [
            (dy, dx)
            for dy in range(9)
            for dx in range(9)
            if torch.equal(out[i], padded[i, :, dy : dy + 32, dx : dx + 32])
        ]
        assert len(found) == 1  # every crop is one window of its padded image
        offsets.add(found[0])
    assert len(offsets) > 10  # and the windows are random


def test_flip_is_a_horizontal_flip():
    X = _distinct_images(n=200)
    out = rp.random_crop_flip(X, padding=0, flip=True)
    same = (out == X).flatten(1).all(1)
    mirrored = (out == X.flip(3)).flatten(1).all(1)
    assert bool((same ^ mirrored).all())  # each image: unchanged or mirrored
    assert 50 < int(mirrored.sum()) < 150  # with probability 1/2
    assert torch.equal(rp.random_crop_flip(X, padding=0, flip=False), X)


def test_classifier_augments_training_batches_only():
    kw = dict(crop_padding=4, flip=False, module__depth=10)
    clf = rp.AugmentedLLPClassifier(module=WideResNet, **kw)
    X = _distinct_images(n=8)
    out = clf.augment_batch(X)
    assert out.shape == X.shape and not torch.equal(out, X)
    params = clf.get_params()
    assert params["crop_padding"] == 4 and params["flip"] is False
    from sklearn.base import clone

    assert clone(clf).crop_padding == 4


def test_wide_resnet_sizes():
    net = WideResNet(n_classes=10)  # WRN-28-2
    assert sum(p.numel() for p in net.parameters()) == pytest.approx(1.47e6, rel=0.01)
    tiny = WideResNet(n_classes=7, depth=10, widen_factor=1)
    assert tiny(torch.zeros(2, 3, 32, 32)).shape == (2, 7)
    with pytest.raises(ValueError, match="multiple of 6"):
        WideResNet(n_classes=10, depth=12)
