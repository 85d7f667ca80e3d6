"""The cube backends: `cpu`, `wgpu` and `cuda` devices on burn-cube kernels."""

from .backend import CpuBackend, CubeBackend, CudaBackend, WgpuBackend
from .tensor import CubeTensor

__all__ = ["CpuBackend", "CubeBackend", "CubeTensor", "CudaBackend", "WgpuBackend"]
