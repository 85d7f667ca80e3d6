"""`ImageFolderDataset`: images on disk with class, multi-label, mask or bounding-box
annotations; images are decoded with pillow into uint8 HxWxC arrays."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, UnidentifiedImageError

from burn_dataset.dataset import Dataset
from burn_dataset.errors import (
    CorruptFileError,
    DatasetUnavailableError,
    InvalidAnnotationError,
)

IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"})
PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Label:
    """Single-class annotation: the class index."""

    index: int


@dataclass(frozen=True)
class MultiLabel:
    """Multi-class annotation: sorted class indices."""

    indices: tuple[int, ...]


@dataclass(frozen=True)
class SegmentationMask:
    """Per-pixel class ids, a uint8 array of shape (H, W)."""

    mask: np.ndarray


@dataclass(frozen=True)
class BoundingBox:
    """One box: ``(x, y, width, height)`` in pixels and its class index."""

    coords: tuple[float, float, float, float]
    label: int


@dataclass(frozen=True)
class _MaskFile:
    """A mask not yet decoded (decoded with its image)."""

    path: Path


Annotation = Label | MultiLabel | SegmentationMask | list[BoundingBox]


@dataclass(frozen=True)
class ImageItem:
    """A decoded image and its annotation.

    Attributes:
        image: uint8 array of shape (H, W, C).
        annotation: a Label, MultiLabel, SegmentationMask or list of BoundingBox.
        path: the image file.
    """

    image: np.ndarray
    annotation: Annotation
    path: Path


def decode_image(path: Path, mode: str | None = "RGB") -> np.ndarray:
    """Decode ``path`` to a uint8 (H, W, C) array.

    Args:
        path: the image file.
        mode: pillow mode to convert to (``"RGB"``, ``"L"``, ``"RGBA"``...); None keeps the
            file's mode.

    Raises:
        CorruptFileError: the file is not a decodable image, or declares more than twice
            pillow's `Image.MAX_IMAGE_PIXELS` (a decompression bomb: pillow refuses it) (names
            it).
    """
    try:
        with Image.open(path) as img:
            arr = np.asarray(img.convert(mode) if mode else img)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError,
            Image.DecompressionBombError) as e:
        raise CorruptFileError(f"{path}: cannot decode image: {e}") from e
    if arr.dtype != np.uint8:
        raise CorruptFileError(f"{path}: {arr.dtype} pixels are not 8-bit; pass a mode")
    return arr[:, :, None] if arr.ndim == 2 else arr


def _image_files(root: Path) -> list[Path]:
    """Image files under ``root``, recursively, sorted."""
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS)


def _class_index(classes: Sequence[str], name: str, where: str) -> int:
    try:
        return classes.index(name)
    except ValueError:
        raise InvalidAnnotationError(
            f"{where}: unknown class {name!r}; classes are {list(classes)}"
        ) from None


def _require_files(paths: Iterable[Path]) -> None:
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise DatasetUnavailableError(f"image files not found: {missing}")


class ImageFolderDataset(Dataset[ImageItem]):
    """Annotated images decoded on access; ``get_many`` decodes on worker threads.

    Build one with ``classification``, ``multilabel``, ``segmentation`` or ``bounding_boxes``.

    Args:
        items: ``(image path, annotation)`` pairs.
        classes: class names; annotations hold indices into it.
        mode: pillow mode images are converted to; None keeps each file's mode.
        num_workers: threads used by ``get_many``.
    """

    def __init__(
        self,
        items: Sequence[tuple[Path, Annotation | _MaskFile]],
        classes: Sequence[str],
        mode: str | None = "RGB",
        num_workers: int = 4,
    ) -> None:
        self.items = list(items)
        self.classes = list(classes)
        self.mode = mode
        self.num_workers = num_workers

    @classmethod
    def classification(cls, root: PathLike, **kwargs: Any) -> ImageFolderDataset:
        """Images under ``root/<class>/``, labelled by their folder; classes sorted by name.

        Args:
            root: the folder holding one sub-folder per class.
            **kwargs: ``mode``, ``num_workers`` (see the class).
        """
        root = Path(root)
        if not root.is_dir():
            raise DatasetUnavailableError(f"image folder not found: {root}")
        classes = sorted(d.name for d in root.iterdir() if d.is_dir())
        items = [(p, Label(k)) for k, c in enumerate(classes) for p in _image_files(root / c)]
        return cls(items, classes, **kwargs)

    @classmethod
    def multilabel(
        cls,
        root: PathLike,
        labels: PathLike | Mapping[str, Sequence[str]] | Callable[[Path], Iterable[str]],
        classes: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> ImageFolderDataset:
        """Images with several labels each.

        Args:
            root: the image folder.
            labels: a JSON file or mapping ``{path relative to root: [class names]}`` (its keys
                are the items), or a callable giving the class names of each image under
                ``root``.
            classes: class names; default: every name used, sorted.
            **kwargs: ``mode``, ``num_workers`` (see the class).

        Raises:
            InvalidAnnotationError: a label is not in ``classes``.
            DatasetUnavailableError: a mapped image does not exist.
        """
        root = Path(root)
        if callable(labels):
            named = [(p, list(labels(p))) for p in _image_files(root)]
        else:
            mapping = labels if isinstance(labels, Mapping) else _read_json(Path(labels))
            named = [(root / rel, list(names)) for rel, names in mapping.items()]
            _require_files(p for p, _ in named)
        classes = list(classes) if classes is not None else sorted(
            {n for _, names in named for n in names})
        items = [(p, MultiLabel(tuple(sorted({_class_index(classes, n, str(p)) for n in names}))))
                 for p, names in named]
        return cls(items, classes, **kwargs)

    @classmethod
    def segmentation(
        cls, pairs: Sequence[tuple[PathLike, PathLike]], classes: Sequence[str], **kwargs: Any
    ) -> ImageFolderDataset:
        """Images with per-pixel masks (grayscale images whose values are class ids).

        Args:
            pairs: ``(image path, mask path)`` pairs.
            classes: class names, indexed by mask value.
            **kwargs: ``mode``, ``num_workers`` (see the class).

        Raises:
            DatasetUnavailableError: an image or mask does not exist.
        """
        items = [(Path(img), _MaskFile(Path(mask))) for img, mask in pairs]
        _require_files(p for img, m in items for p in (img, m.path))
        return cls(items, classes, **kwargs)

    @classmethod
    def bounding_boxes(
        cls,
        root: PathLike,
        annotations: Mapping[str, Sequence[Mapping[str, Any]]],
        classes: Sequence[str],
        **kwargs: Any,
    ) -> ImageFolderDataset:
        """Images with boxes: ``{path relative to root: [{"bbox": [x, y, w, h],
        "label": class name}, ...]}``.

        Args:
            root: the image folder.
            annotations: the boxes of each image (its keys are the items).
            classes: class names.
            **kwargs: ``mode``, ``num_workers`` (see the class).

        Raises:
            InvalidAnnotationError: a box lacks ``bbox``/``label``, has not 4 coordinates, or
                names an unknown class (names the image and box).
            DatasetUnavailableError: an image does not exist.
        """
        root = Path(root)
        classes = list(classes)
        items = [(root / rel, [_box(classes, f"{root / rel}, box {k}", b)
                               for k, b in enumerate(boxes)])
                 for rel, boxes in annotations.items()]
        _require_files(p for p, _ in items)
        return cls(items, classes, **kwargs)

    def __len__(self) -> int:
        return len(self.items)

    def _get(self, index: int) -> ImageItem:
        path, annotation = self.items[index]
        image = decode_image(path, self.mode)
        if isinstance(annotation, _MaskFile):
            mask = decode_image(annotation.path, "L")[:, :, 0]
            if mask.shape != image.shape[:2]:
                raise CorruptFileError(
                    f"{annotation.path}: mask is {mask.shape}, image {path} is {image.shape[:2]}"
                )
            annotation = SegmentationMask(mask)
        return ImageItem(image, annotation, path)

    def _get_many(self, indices: list[int]) -> list[ImageItem]:
        if self.num_workers <= 1 or len(indices) <= 1:
            return super()._get_many(indices)
        with ThreadPoolExecutor(min(self.num_workers, len(indices))) as pool:
            return list(pool.map(self._get, indices))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetUnavailableError(f"label file not found: {path}") from None
    except json.JSONDecodeError as e:
        raise CorruptFileError(f"{path}: not valid JSON: {e}") from e


def _box(classes: list[str], where: str, box: Mapping[str, Any]) -> BoundingBox:
    """Parse one ``{"bbox": [x, y, w, h], "label": name}`` entry."""
    missing = [k for k in ("bbox", "label") if k not in box]
    if missing:
        raise InvalidAnnotationError(f"{where}: missing key(s) {missing}")
    coords = tuple(float(v) for v in box["bbox"])
    if len(coords) != 4:
        raise InvalidAnnotationError(f"{where}: bbox needs 4 numbers, got {len(coords)}")
    return BoundingBox(coords, _class_index(classes, box["label"], where))  # type: ignore[arg-type]
