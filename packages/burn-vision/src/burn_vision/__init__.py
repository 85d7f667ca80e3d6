"""burn-vision: computer-vision operators on burn tensors, on every backend.

Ops are a backend extension (`VisionOps`): the defaults are written with burn tensor ops;
a backend registers faster paths with `register_vision_ops` (the NumPy backend's are in
`burn_vision.numpy_ops`, the cube backends' burn-cube kernels in `burn_vision.cube`, both
registered on import).
"""

from importlib import metadata as _metadata

from burn_vision import cube as _cube  # noqa: F401  (registers the cube backends' kernels)
from burn_vision import numpy_ops as _numpy_ops  # noqa: F401  (registers the NumPy fast paths)
from burn_vision.augment import RandomGaussianBlur
from burn_vision.border import BORDER_MODES, BorderMode
from burn_vision.color import (
    denormalize,
    grayscale_to_rgb,
    hsv_to_rgb,
    normalize,
    rgb_to_grayscale,
    rgb_to_hsv,
    rgb_to_ycbcr,
    ycbcr_to_rgb,
)
from burn_vision.connected import connected_components, connected_components_with_stats
from burn_vision.extension import VisionOps, register_vision_ops, vision_ops
from burn_vision.filters import box_blur, filter2d, gaussian_blur, gaussian_kernel1d, sobel
from burn_vision.image_io import from_pil, make_grid, save_grid, to_pil
from burn_vision.layers import DropBlock, DropPath, GramLoss, gram_matrix
from burn_vision.morphology import (
    MORPH_OPS,
    dilate,
    erode,
    morphology,
    structuring_element,
)
from burn_vision.nms import batched_nms, nms
from burn_vision.stats import ConnectedStats, ConnectedStatsOptions, Connectivity
from burn_vision.transform import Transform2d, resize

__version__ = _metadata.version("burn-vision")  # the one version: pyproject.toml

__all__ = [
    "BORDER_MODES", "MORPH_OPS", "BorderMode", "ConnectedStats", "ConnectedStatsOptions",
    "Connectivity", "DropBlock", "DropPath", "GramLoss", "RandomGaussianBlur", "Transform2d",
    "VisionOps", "batched_nms", "box_blur", "connected_components",
    "connected_components_with_stats", "denormalize", "dilate", "erode", "filter2d",
    "from_pil", "gaussian_blur", "gaussian_kernel1d", "gram_matrix", "grayscale_to_rgb",
    "hsv_to_rgb", "make_grid", "morphology", "nms", "normalize", "register_vision_ops",
    "resize", "rgb_to_grayscale", "rgb_to_hsv", "rgb_to_ycbcr", "save_grid", "sobel",
    "structuring_element", "to_pil", "vision_ops", "ycbcr_to_rgb",
]
