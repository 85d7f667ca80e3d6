"""IDX reader/writer, the checksummed downloader (file:// URLs only) and the MNIST datasets."""

import gzip
import hashlib
import struct

import numpy as np
import pytest

from burn_dataset import (
    ChecksumMismatchError,
    CorruptFileError,
    DatasetUnavailableError,
    FashionMnistDataset,
    MnistDataset,
    SchemaMismatchError,
)
from burn_dataset.source import RemoteFile, cache_dir, fetch_files, read_idx, write_idx

RNG = np.random.default_rng(0)
IMAGES = RNG.integers(0, 256, size=(7, 28, 28), dtype=np.uint8)
LABELS = RNG.integers(0, 10, size=7, dtype=np.uint8)


def _write_split(directory, prefix, images=IMAGES, labels=LABELS, gz=False):
    ext = ".gz" if gz else ""
    directory.mkdir(parents=True, exist_ok=True)
    write_idx(directory / f"{prefix}-images-idx3-ubyte{ext}", images)
    write_idx(directory / f"{prefix}-labels-idx1-ubyte{ext}", labels)


def test_idx_header_is_big_endian(tmp_path):
    arr = np.arange(6, dtype=np.int32).reshape(2, 3)
    data = write_idx(tmp_path / "a.idx", arr).read_bytes()
    assert data[:4] == bytes([0, 0, 0x0C, 2]) and struct.unpack(">II", data[4:12]) == (2, 3)
    assert struct.unpack(">i", data[12:16]) == (0,) and data[-4:] == struct.pack(">i", 5)
    out = read_idx(tmp_path / "a.idx")
    np.testing.assert_array_equal(out, arr)
    assert out.dtype == np.int32 and out.dtype.isnative
    f = np.linspace(0, 1, 5).astype(np.float32)
    np.testing.assert_array_equal(read_idx(write_idx(tmp_path / "f.idx.gz", f)), f)


def test_idx_errors(tmp_path):
    good = write_idx(tmp_path / "g.idx", IMAGES).read_bytes()
    (tmp_path / "t.idx").write_bytes(good[:-10])
    with pytest.raises(CorruptFileError, match=r"t\.idx: truncated: header declares shape "
                                               r"\(7, 28, 28\) \(5488 data bytes\), file has 5478"):
        read_idx(tmp_path / "t.idx")
    (tmp_path / "m.idx").write_bytes(b"\x01\x02\x08\x01")
    with pytest.raises(CorruptFileError, match=r"m\.idx: bad IDX magic number 01020801"):
        read_idx(tmp_path / "m.idx")
    (tmp_path / "c.idx").write_bytes(b"\x00\x00\x07\x01" + bytes(8))
    with pytest.raises(CorruptFileError, match="unknown IDX type code 0x07"):
        read_idx(tmp_path / "c.idx")
    (tmp_path / "h.idx").write_bytes(b"\x00\x00\x08\x03\x00\x00")
    with pytest.raises(CorruptFileError, match="truncated header: 3 dimensions need 16 bytes"):
        read_idx(tmp_path / "h.idx")
    (tmp_path / "z.idx.gz").write_bytes(gzip.compress(good)[:50])
    with pytest.raises(CorruptFileError, match=r"z\.idx\.gz: not a valid gzip file"):
        read_idx(tmp_path / "z.idx.gz")
    # a damaged deflate stream inside a valid gzip header (zlib.error escaped before)
    packed = bytearray(gzip.compress(good))
    packed[10] = 0xFF  # the first block header: block type 3, which does not exist
    (tmp_path / "d.idx.gz").write_bytes(bytes(packed))
    with pytest.raises(CorruptFileError, match=r"d\.idx\.gz: not a valid gzip file"):
        read_idx(tmp_path / "d.idx.gz")


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_from_local_files(tmp_path, gz):
    _write_split(tmp_path, "t10k", gz=gz)
    ds = MnistDataset("test", root=tmp_path, download=False)
    assert len(ds) == 7 and ds[-1].label == int(LABELS[-1])
    np.testing.assert_array_equal(ds[3].image, IMAGES[3])
    assert ds[3].image.dtype == np.uint8 and isinstance(ds[0].label, int)


def test_mnist_uses_cache_env(tmp_path, monkeypatch):
    monkeypatch.setenv("BURN_DATASET_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    _write_split(tmp_path / "fashion-mnist", "train")
    ds = FashionMnistDataset("train", download=False)
    assert len(ds) == 7 and ds.root == tmp_path / "fashion-mnist"
    assert FashionMnistDataset.CLASSES[ds[0].label]
    monkeypatch.delenv("BURN_DATASET_CACHE")
    assert cache_dir().parts[-2:] == (".cache", "burn-dataset")


def test_mnist_unavailable_names_files_and_dir(tmp_path):
    write_idx(tmp_path / "train-labels-idx1-ubyte", LABELS)
    with pytest.raises(DatasetUnavailableError) as e:
        MnistDataset("train", root=tmp_path, download=False)
    msg = str(e.value)
    assert "train-images-idx3-ubyte.gz" in msg and "train-labels" not in msg
    assert str(tmp_path) in msg and "downloads disabled" in msg


def test_mnist_bad_files(tmp_path):
    _write_split(tmp_path, "train", labels=LABELS[:5])
    with pytest.raises(SchemaMismatchError, match="has 7 images but .* has 5 labels"):
        MnistDataset("train", root=tmp_path, download=False)
    _write_split(tmp_path, "train", images=IMAGES.astype(np.int32))
    with pytest.raises(CorruptFileError, match=r"expected uint8 images of shape \(N, H, W\)"):
        MnistDataset("train", root=tmp_path, download=False)
    with pytest.raises(ValueError, match="split must be one of"):
        MnistDataset("valid", root=tmp_path, download=False)


def test_downloader_checksums_and_atomicity(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    payload = b"hello dataset"
    (mirror / "f.bin").write_bytes(payload)
    good = RemoteFile("f.bin", hashlib.sha256(payload).hexdigest())
    md5 = RemoteFile("f.bin", hashlib.md5(payload).hexdigest(), "md5")
    bad = RemoteFile("f.bin", "0" * 64)
    cache = tmp_path / "cache"
    url = mirror.as_uri()
    with pytest.raises(DatasetUnavailableError, match=r"missing files \['f\.bin'\].*"
                                                      r"sha256 is .*expected 0000"):
        fetch_files([bad], cache, [url])
    assert list(cache.iterdir()) == []  # no partial file left behind
    with pytest.raises(DatasetUnavailableError, match="nowhere"):
        fetch_files([good], cache, [(tmp_path / "nowhere").as_uri()])
    assert fetch_files([good], cache, [(tmp_path / "nowhere").as_uri(), url]) == [cache / "f.bin"]
    assert (cache / "f.bin").read_bytes() == payload
    assert fetch_files([md5], tmp_path / "c2", [url]) == [tmp_path / "c2" / "f.bin"]
    assert issubclass(ChecksumMismatchError, CorruptFileError)


def test_mnist_download_from_mirror(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    _write_split(mirror, "t10k", gz=True)
    files = tuple(RemoteFile(p.name, hashlib.sha256(p.read_bytes()).hexdigest())
                  for p in sorted(mirror.iterdir()))  # images before labels
    monkeypatch.setattr(MnistDataset, "MIRRORS", (mirror.as_uri(),))
    monkeypatch.setattr(MnistDataset, "FILES", {"test": files})
    ds = MnistDataset("test", root=tmp_path / "cache")
    assert len(ds) == 7 and sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        f.name for f in files]


def _no_network(*args, **kwargs):
    raise AssertionError("no download may be attempted")


@pytest.mark.parametrize("value", ["1", "true", "ON"])
def test_offline_env_skips_downloads(tmp_path, monkeypatch, value):
    monkeypatch.setenv("BURN_DATASET_OFFLINE", value)
    monkeypatch.setattr("urllib.request.urlopen", _no_network)
    with pytest.raises(DatasetUnavailableError) as e:
        MnistDataset("test", root=tmp_path / "cache")
    msg = str(e.value)
    assert "t10k-images-idx3-ubyte.gz" in msg and "t10k-labels-idx1-ubyte.gz" in msg
    assert str(tmp_path / "cache") in msg and "BURN_DATASET_OFFLINE is set" in msg
    assert not (tmp_path / "cache").exists()
    _write_split(tmp_path / "cache", "t10k")  # files present: offline is no obstacle
    assert len(MnistDataset("test", root=tmp_path / "cache")) == 7


@pytest.mark.parametrize("value", ["", "0", "false"])
def test_offline_env_off_and_short_default_timeout(tmp_path, monkeypatch, value):
    monkeypatch.setenv("BURN_DATASET_OFFLINE", value)
    timeouts = []

    def refuse(url, timeout):
        timeouts.append(timeout)
        raise OSError("unreachable")

    monkeypatch.setattr("urllib.request.urlopen", refuse)
    with pytest.raises(DatasetUnavailableError, match="download failures: .*unreachable"):
        fetch_files([RemoteFile("f.bin", "0" * 64)], tmp_path, ["https://a/", "https://b/"])
    assert timeouts == [5.0, 5.0]
