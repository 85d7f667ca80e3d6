"""burn-cube: one kernel language compiled to C (CPU), WGSL (wgpu) and CUDA C (CuPy).

Write a kernel as a Python function, decorate it with ``@burn_cube.kernel`` (or build it in
code with ``burn_cube.KernelBuilder``) and launch it with
``kern.launch(burn_cube.runtime("cpu"), cube_count, cube_dim, *args)``.
"""

from importlib import metadata as _metadata

from burn_cube import errors
from burn_cube.autotune import Autotuner, autotune
from burn_cube.ir import KernelBuilder
from burn_cube.kernel import IRKernel, Kernel, kernel
from burn_cube.language.builtins import (
    ABSOLUTE_POS,
    ABSOLUTE_POS_X,
    ABSOLUTE_POS_Y,
    ABSOLUTE_POS_Z,
    CUBE_COUNT,
    CUBE_COUNT_X,
    CUBE_COUNT_Y,
    CUBE_COUNT_Z,
    CUBE_DIM,
    CUBE_DIM_X,
    CUBE_DIM_Y,
    CUBE_DIM_Z,
    CUBE_POS,
    CUBE_POS_X,
    CUBE_POS_Y,
    CUBE_POS_Z,
    PLANE_DIM,
    UNIT_POS,
    UNIT_POS_PLANE,
    UNIT_POS_X,
    UNIT_POS_Y,
    UNIT_POS_Z,
    acos,
    asin,
    atan,
    atomic_add,
    atomic_max,
    atomic_min,
    ceil,
    cos,
    cosh,
    erf,
    exp,
    exp2,
    floor,
    index_of,
    isinf,
    isnan,
    iszero,
    log,
    log1p,
    log2,
    opaque,
    plane_max,
    plane_sum,
    pow,
    round,
    rsqrt,
    select,
    shared_memory,
    sin,
    sinh,
    sqrt,
    sync_units,
    tan,
    tanh,
    trunc,
    unroll,
)
from burn_cube.runtime import DeviceArray, Properties, Runtime, available, devices, runtime
from burn_cube.types import (
    Comptime,
    DType,
    Line,
    Tensor,
    bf16,
    bool_,
    f16,
    f32,
    f64,
    i8,
    i32,
    i64,
    u8,
    u32,
)

__version__ = _metadata.version("burn-cube")  # the one version: pyproject.toml

__all__ = [
    "ABSOLUTE_POS", "ABSOLUTE_POS_X", "ABSOLUTE_POS_Y", "ABSOLUTE_POS_Z", "CUBE_COUNT",
    "CUBE_COUNT_X", "CUBE_COUNT_Y", "CUBE_COUNT_Z", "CUBE_DIM", "CUBE_DIM_X", "CUBE_DIM_Y",
    "CUBE_DIM_Z", "CUBE_POS", "CUBE_POS_X", "CUBE_POS_Y", "CUBE_POS_Z", "PLANE_DIM", "UNIT_POS",
    "UNIT_POS_PLANE", "UNIT_POS_X", "UNIT_POS_Y", "UNIT_POS_Z", "Autotuner", "Comptime",
    "DType", "DeviceArray", "IRKernel", "Kernel", "KernelBuilder", "Line", "Properties",
    "Runtime", "Tensor", "acos", "asin", "atan", "atomic_add", "atomic_max", "atomic_min",
    "autotune", "available", "bf16",
    "bool_", "ceil", "cos", "cosh", "devices", "erf", "errors", "exp", "exp2", "f16", "f32",
    "f64", "floor", "i8", "i32", "i64", "index_of", "isinf", "isnan", "iszero", "kernel", "log",
    "log1p",
    "log2", "opaque", "plane_max", "plane_sum", "pow", "round", "rsqrt", "runtime", "select",
    "shared_memory", "sin", "sinh", "sqrt", "sync_units", "tan", "tanh", "trunc", "u8", "u32",
    "unroll",
]
