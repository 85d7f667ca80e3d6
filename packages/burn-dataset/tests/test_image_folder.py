"""ImageFolderDataset on PIL-written PNG / JPEG images: classes, multi-label, masks, boxes."""

import json

import numpy as np
import pytest
from PIL import Image

from burn_dataset import (
    CorruptFileError,
    DatasetUnavailableError,
    ImageFolderDataset,
    InvalidAnnotationError,
)
from burn_dataset.source import BoundingBox, Label, MultiLabel, SegmentationMask


def _save(path, array, **kwargs):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(array).save(path, **kwargs)
    return array


@pytest.fixture
def folder(tmp_path):
    """root/cat/*.png, root/dog/*.jpg, root/empty/; returns (root, {path: pixels})."""
    rng = np.random.default_rng(0)
    pixels = {}
    for cls, ext in (("cat", "png"), ("dog", "jpg")):
        for i in range(3):
            arr = rng.integers(0, 256, size=(8, 6, 3), dtype=np.uint8)
            p = tmp_path / "root" / cls / f"{i}.{ext}"
            _save(p, arr, **({"quality": 95} if ext == "jpg" else {}))
            pixels[p] = arr
    (tmp_path / "root" / "empty").mkdir()
    (tmp_path / "root" / "cat" / "notes.txt").write_text("not an image")
    return tmp_path / "root", pixels


def test_classification(folder):
    root, pixels = folder
    ds = ImageFolderDataset.classification(root)
    assert ds.classes == ["cat", "dog", "empty"] and len(ds) == 6
    item = ds[0]
    assert item.path == root / "cat" / "0.png" and item.annotation == Label(0)
    assert item.image.dtype == np.uint8 and item.image.shape == (8, 6, 3)
    np.testing.assert_array_equal(item.image, pixels[item.path])  # PNG is lossless
    jpg = ds[-1]
    assert jpg.annotation == Label(1)
    np.testing.assert_array_equal(jpg.image, np.asarray(Image.open(jpg.path).convert("RGB")))
    threaded = ds.get_many(range(6))
    assert [i.path for i in threaded] == [i.path for i in ds]
    assert all(np.array_equal(a.image, b.image) for a, b in zip(threaded, ds, strict=True))
    gray = ImageFolderDataset.classification(root, mode="L")[0].image
    assert gray.shape == (8, 6, 1)


def test_multilabel_from_file_and_callable(folder, tmp_path):
    root, _ = folder
    mapping = {"cat/0.png": ["furry", "small"], "dog/1.jpg": ["furry"]}
    (tmp_path / "labels.json").write_text(json.dumps(mapping))
    ds = ImageFolderDataset.multilabel(root, tmp_path / "labels.json")
    assert ds.classes == ["furry", "small"]
    assert [i.annotation for i in ds] == [MultiLabel((0, 1)), MultiLabel((0,))]
    by_fn = ImageFolderDataset.multilabel(root, lambda p: [p.parent.name, "pet"])
    assert by_fn.classes == ["cat", "dog", "pet"] and by_fn[0].annotation == MultiLabel((0, 2))
    with pytest.raises(InvalidAnnotationError, match=r"0\.png: unknown class 'small'"):
        ImageFolderDataset.multilabel(root, mapping, classes=["furry"])
    with pytest.raises(DatasetUnavailableError, match=r"image files not found: .*ghost\.png"):
        ImageFolderDataset.multilabel(root, {"ghost.png": ["x"]})


def test_segmentation(tmp_path):
    img = _save(tmp_path / "img.png", np.full((4, 5, 3), 7, dtype=np.uint8))
    mask = _save(tmp_path / "mask.png", np.arange(20, dtype=np.uint8).reshape(4, 5) % 3)
    ds = ImageFolderDataset.segmentation([(tmp_path / "img.png", tmp_path / "mask.png")],
                                         classes=["bg", "a", "b"])
    item = ds[0]
    np.testing.assert_array_equal(item.image, img)
    assert isinstance(item.annotation, SegmentationMask)
    np.testing.assert_array_equal(item.annotation.mask, mask)
    _save(tmp_path / "small.png", np.zeros((2, 2), dtype=np.uint8))
    bad = ImageFolderDataset.segmentation([(tmp_path / "img.png", tmp_path / "small.png")], [])
    with pytest.raises(CorruptFileError, match=r"small\.png: mask is \(2, 2\), image .* \(4, 5\)"):
        bad[0]


def test_bounding_boxes(folder):
    root, _ = folder
    ann = {"cat/1.png": [{"bbox": [1, 2, 3, 4], "label": "cat"},
                         {"bbox": [0, 0, 1.5, 1], "label": "dog"}]}
    ds = ImageFolderDataset.bounding_boxes(root, ann, classes=["cat", "dog"])
    assert ds[0].annotation == [BoundingBox((1.0, 2.0, 3.0, 4.0), 0),
                                BoundingBox((0.0, 0.0, 1.5, 1.0), 1)]
    msg = r"1\.png, box 0: missing key\(s\) \['label'\]"
    with pytest.raises(InvalidAnnotationError, match=msg):
        ImageFolderDataset.bounding_boxes(root, {"cat/1.png": [{"bbox": [1, 2, 3, 4]}]}, ["cat"])
    with pytest.raises(InvalidAnnotationError, match="bbox needs 4 numbers, got 2"):
        ImageFolderDataset.bounding_boxes(root, {"cat/1.png": [{"bbox": [1, 2], "label": "cat"}]},
                                          ["cat"])


def test_corrupt_image_names_file(folder):
    root, _ = folder
    (root / "cat" / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    good = root / "dog" / "0.jpg"
    (root / "dog" / "truncated.jpg").write_bytes(good.read_bytes()[:200])
    ds = ImageFolderDataset.classification(root)
    index = {p.name: i for i, (p, _) in enumerate(ds.items)}
    with pytest.raises(CorruptFileError, match=r"broken\.png: cannot decode image"):
        ds[index["broken.png"]]
    with pytest.raises(CorruptFileError, match=r"truncated\.jpg: cannot decode image"):
        ds.get_many([index["0.png"], index["truncated.jpg"]])
    with pytest.raises(DatasetUnavailableError, match="image folder not found"):
        ImageFolderDataset.classification(root / "missing")


def test_decompression_bomb_is_a_corrupt_file(folder):
    """An image whose header declares more than twice pillow's pixel limit (a decompression
    bomb: a few bytes declaring 16 G pixels) is a CorruptFileError naming it, as pillow's
    DecompressionBombError escaped before."""
    root, _ = folder
    _save(root / "cat" / "bomb.bmp", np.zeros((8, 6, 3), np.uint8))
    bomb = bytearray((root / "cat" / "bomb.bmp").read_bytes())
    bomb[18:26] = (1 << 17).to_bytes(4, "little") * 2  # the info header's width and height
    (root / "cat" / "bomb.bmp").write_bytes(bytes(bomb))
    ds = ImageFolderDataset.classification(root)
    index = {p.name: i for i, (p, _) in enumerate(ds.items)}
    with pytest.raises(CorruptFileError, match=r"bomb\.bmp: cannot decode image.*decompression"):
        ds[index["bomb.bmp"]]
