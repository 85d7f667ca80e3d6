"""Tensor creation: from data, filled, ranges, identity, random."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from burn.backend.distribution import Distribution
from burn.device import Device, as_device
from burn.dtype import DEFAULT_FLOAT, DEFAULT_INT, DType, Kind, as_dtype
from burn.dtype import from_numpy as dtype_of_numpy
from burn.errors import DTypeError, ShapeError, UnsupportedDTypeError, ValueRangeError
from burn.frontend.base import PREFIX, TensorBase, make
from burn.frontend.tensor import Tensor
from burn.frontend.validation import (
    as_scalar,
    check_alloc,
    check_device_arg,
    check_fill_value,
    check_host_int,
    finite_scalar,
    require_kind,
    shape_arg,
)

DTypeLike = DType | str | type | np.dtype | None
DeviceLike = Device | str | None
# numpy kinds of Python data -> the default burn dtype (as torch.tensor infers).
_PY_DEFAULTS = {"b": DType.bool, "i": DEFAULT_INT, "u": DEFAULT_INT, "f": DEFAULT_FLOAT}


def device_for(op: str, device: DeviceLike, dtype: DType) -> Device:
    """The device a new tensor of `dtype` goes to, checked to support that dtype.

    Raises:
        UnsupportedDTypeError: naming the op, dtype and device.
        DeviceError: for a device argument that is not a Device, a spec string or None.
    """
    check_device_arg(op, device)
    dev = as_device(device)
    if not dev.backend.supports(dtype):
        raise UnsupportedDTypeError(op, "dtype not supported on this device", dtype=dtype.value,
                                    device=str(dev))
    return dev


def _dtype(value: DTypeLike, op: str, default: DType) -> DType:
    return default if value is None else as_dtype(value, op)


def _from_array(arr: np.ndarray, dtype: DType, device: DeviceLike, op: str = "tensor") -> Tensor:
    dev = device_for(op, device, dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # 1e10 -> float16 is inf, quietly
        arr = arr.astype(dtype.numpy, copy=False)
    if not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return make(getattr(dev.backend, PREFIX[dtype] + "from_data")(arr, dev), dev, dtype)


def tensor(data: Any, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """A tensor holding a copy of `data`.

    Args:
        data: nested lists / tuples of Python scalars, a scalar, an array or a Tensor.
        dtype: element type; inferred when None: Python floats -> float32, ints -> int64,
            bools -> bool; arrays (numpy, or anything with `__array__` / `__dlpack__`: torch,
            jax) keep theirs (float64 stays float64).
        device: target device (the default device when None).
    Returns:
        The new tensor.
    Raises:
        ShapeError: for ragged nested sequences.
        DTypeError: for data of no supported dtype (strings, complex, objects).
    """
    if isinstance(data, TensorBase):
        out = data.detach() if device is None else data.to_device(device).detach()  # type: ignore
        return out if dtype is None else out._cast(as_dtype(dtype, "tensor"))
    if isinstance(data, np.ndarray | np.generic):
        arr = np.asarray(data)
        inferred = dtype_of_numpy(arr.dtype, "tensor")
    elif hasattr(data, "__array__") or hasattr(data, "__dlpack__"):  # torch, jax, CuPy host...
        arr = _host_array("tensor", data, np.asarray)
        inferred = dtype_of_numpy(arr.dtype, "tensor")
    else:
        try:
            arr = np.asarray(data)
        except ValueError as e:
            raise ShapeError("tensor", "nested sequences must be rectangular",
                             error=str(e)) from None
        if arr.dtype.kind in "uO":  # Python ints past int64
            _refuse_wide_ints(data)
        if arr.dtype.kind not in _PY_DEFAULTS:
            raise DTypeError("tensor", "data must hold bools, ints or floats",
                             dtype=str(arr.dtype))
        inferred = _PY_DEFAULTS[arr.dtype.kind]
        target = _dtype(dtype, "tensor", inferred)
        if target.kind is Kind.INT and arr.dtype.kind in "iuf" and arr.size:
            _refuse_overflow(arr, target)
        return _from_array(arr, target, device)
    return _from_array(arr, _dtype(dtype, "tensor", inferred), device)


def _refuse_overflow(arr: np.ndarray, dtype: DType) -> None:
    """Refuse Python numbers an int dtype cannot hold, as torch.tensor does: past the dtype's
    range (an unsigned dtype also takes negatives down to -max, wrapping, as torch), and NaN
    or infinities; floats inside it truncate toward zero. (Arrays keep numpy's wrapping cast,
    as torch's.)

    Raises:
        ValueRangeError: naming the first value out of range and the dtype.
    """
    info = np.iinfo(dtype.numpy)
    low = -int(info.max) if info.min == 0 else int(info.min)
    bad = (arr > info.max) | (arr < low)
    if arr.dtype.kind == "f":
        bad |= ~np.isfinite(arr)
    if bad.any():
        raise ValueRangeError("tensor", f"value cannot be converted to {dtype.value} without "
                              "overflow", value=arr[bad].flat[0].item(), dtype=dtype.value)


def from_numpy(array: np.ndarray, device: DeviceLike = None) -> Tensor:
    """A tensor holding a copy of a numpy array, of the array's dtype (as torch.from_numpy).

    Raises:
        DTypeError: when `array` is not a numpy array of a supported dtype.
    """
    if not isinstance(array, np.ndarray | np.generic):
        raise DTypeError("from_numpy", "expected a numpy array", type=type(array).__name__)
    return _from_host("from_numpy", np.asarray(array), device)


def from_dlpack(obj: Any, device: DeviceLike = None) -> Tensor:
    """A tensor holding a copy of any DLPack-exporting host array (torch, jax, numpy, ...).

    Raises:
        DTypeError: for an array numpy cannot import (torch's bfloat16).
    """
    return _from_host("from_dlpack", _host_array("from_dlpack", obj, np.from_dlpack), device)


def _from_host(op: str, arr: np.ndarray, device: DeviceLike) -> Tensor:
    """A tensor holding a copy of `arr`, of its dtype; errors name `op`."""
    return _from_array(arr, dtype_of_numpy(arr.dtype, op), device, op)


def _refuse_wide_ints(data: Any) -> None:
    """Refuse Python ints past int64 (as torch), which numpy reads as uint64 (wrapping into
    int64 here) or, below -2**63, as objects. (Next to smaller ints numpy reads them as
    float64, which is not looked for: a reduction per list costs small lists ~1 us.)

    Raises:
        ValueRangeError: naming the first such int.
    """
    for value in np.asarray(data, dtype=object).flat:
        if type(value) is int and not -2**63 <= value < 2**63:
            raise ValueRangeError("tensor", "ints must fit in int64", value=value)


def _host_array(op: str, data: Any, convert: Any) -> np.ndarray:
    """`convert(data)` (np.asarray or np.from_dlpack), a typed error where numpy cannot read
    the array (torch's bfloat16, which has no numpy dtype: convert it to float32 first)."""
    try:
        return np.asarray(convert(data))
    except (TypeError, RuntimeError, BufferError) as e:
        raise DTypeError(op, "numpy cannot read this array (a bfloat16 torch tensor: call "
                         ".float() first)", type=type(data).__name__, error=str(e)) from None


def _filled(op: str, shape: tuple[int, ...], value: Any, dtype: DType, device: DeviceLike
            ) -> Tensor:
    if not hasattr(value, "__float__"):  # (a number, a 0-d tensor; not a str or None)
        raise DTypeError(op, "the fill value must be a number", shape=shape,
                         dtype=dtype.value, value=type(value).__name__)
    if isinstance(value, int) and not isinstance(value, bool):
        check_host_int(op, value, dtype)
    elif not isinstance(value, bool):
        check_fill_value(op, dtype, float(value))
    check_alloc(op, shape, dtype)
    dev = device_for(op, device, dtype)
    bk = dev.backend
    if dtype is DType.bool:
        return make(bk.bool_full(shape, bool(value), dev), dev, dtype)
    if dtype.is_float:
        return make(bk.float_full(shape, float(value), dtype, dev), dev, dtype)
    return make(bk.int_full(shape, int(value), dtype, dev), dev, dtype)


def full(shape: int | tuple[int, ...], value: float | int | bool, dtype: DTypeLike = None,
         device: DeviceLike = None) -> Tensor:
    """A tensor of `shape` filled with `value`.

    Args:
        shape: the shape (an int for 1-d).
        value: the fill value; it sets the dtype when `dtype` is None (bool, int64, float32).
        dtype: element type.
        device: target device.
    Returns:
        The new tensor.
    Raises:
        DTypeError: for a `value` that is not a number (or a 0-d tensor).
        ValueRangeError: for a number outside [-2**63, 2**64) on an int dtype, an int there
            on any dtype, and nan or +-inf on an int or bool dtype (as torch; a float fills
            an int tensor truncated toward zero, 2.5 as 2, as torch and Burn).
    """
    value = as_scalar(value)
    inferred = (DType.bool if isinstance(value, bool) else
                DEFAULT_INT if isinstance(value, int) else DEFAULT_FLOAT)
    return _filled("full", shape_arg("full", (shape,)), value, _dtype(dtype, "full", inferred),
                   device)


def zeros(*shape: int | tuple[int, ...], dtype: DTypeLike = None,
          device: DeviceLike = None) -> Tensor:
    """A tensor of zeros (float32 unless `dtype`); `zeros(2, 3)` == `zeros((2, 3))`."""
    return _filled("zeros", shape_arg("zeros", shape), 0, _dtype(dtype, "zeros", DEFAULT_FLOAT),
                   device)


def ones(*shape: int | tuple[int, ...], dtype: DTypeLike = None,
         device: DeviceLike = None) -> Tensor:
    """A tensor of ones (float32 unless `dtype`)."""
    return _filled("ones", shape_arg("ones", shape), 1, _dtype(dtype, "ones", DEFAULT_FLOAT),
                   device)


def empty(*shape: int | tuple[int, ...], dtype: DTypeLike = None,
          device: DeviceLike = None) -> Tensor:
    """An uninitialised tensor (float32 unless `dtype`; bool tensors are all false)."""
    dims = shape_arg("empty", shape)
    dt = _dtype(dtype, "empty", DEFAULT_FLOAT)
    if dt is DType.bool:
        return _filled("empty", dims, False, dt, device)
    check_alloc("empty", dims, dt)
    dev = device_for("empty", device, dt)
    fn = dev.backend.float_empty if dt.is_float else dev.backend.int_empty
    return make(fn(dims, dt, dev), dev, dt)


def zeros_like(t: Tensor, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Zeros of `t`'s shape (and dtype / device unless given)."""
    return full_like(t, 0, dtype, device)


def ones_like(t: Tensor, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Ones of `t`'s shape (and dtype / device unless given)."""
    return full_like(t, 1, dtype, device)


def full_like(t: Tensor, value: float | int | bool, dtype: DTypeLike = None,
              device: DeviceLike = None) -> Tensor:
    """`value` in `t`'s shape (and dtype / device unless given)."""
    return _filled("full_like", t.shape, as_scalar(value), _dtype(dtype, "full_like", t.dtype),
                   t.device if device is None else device)


def empty_like(t: Tensor, dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """An uninitialised tensor of `t`'s shape (and dtype / device unless given)."""
    return empty(t.shape, dtype=t.dtype if dtype is None else dtype,
                 device=t.device if device is None else device)


def arange(start: float, end: float | None = None, step: float = 1, dtype: DTypeLike = None,
           device: DeviceLike = None) -> Tensor:
    """Values start, start + step, ... below `end` (`arange(n)` counts from 0).

    Args:
        start: first value (or `end` when `end` is None).
        end: exclusive bound.
        step: increment (non-zero; its sign must lead from start to end).
        dtype: int64 for int arguments, float32 otherwise, unless given.
        device: target device.
    Returns:
        The 1-d tensor.
    Raises:
        ValueRangeError: for a zero step, one pointing away from `end`, or nan / inf bounds.
        DTypeError: for bounds that are not numbers.
    """
    if end is None:
        start, end = 0, start
    start, end, step = as_scalar(start), as_scalar(end), as_scalar(step)  # type: ignore
    for name, value in (("start", start), ("end", end), ("step", step)):
        finite_scalar("arange", name, value)
    ints = all(isinstance(v, int) for v in (start, end, step))
    dt = _dtype(dtype, "arange", DEFAULT_INT if ints else DEFAULT_FLOAT)
    if step == 0 or (end - start) * step < 0:
        raise ValueRangeError("arange", "step must be non-zero and lead from start to end",
                              start=start, end=end, step=step)
    dev = device_for("arange", device, dt)
    n = max(0, int(-(-(end - start) // step)) if ints else math.ceil((end - start) / step))
    check_alloc("arange", (n,), dt)
    if ints and dt.kind is Kind.INT:
        return make(dev.backend.int_arange(int(start), int(end), int(step), dt, dev), dev, dt)
    # start + i * step in float64 then rounded once, as torch, on devices without float64 too
    return _from_array(np.arange(n, dtype=np.float64) * float(step) + float(start), dt, dev)


def wide_float(device: DeviceLike) -> DType:
    """The widest float dtype `device` holds: float64, else float32 (WebGPU adapters), for
    values computed wide and then cast."""
    return DType.float64 if as_device(device).backend.supports(DType.float64) else DType.float32


def eye(n: int, m: int | None = None, dtype: DTypeLike = None,
        device: DeviceLike = None) -> Tensor:
    """The [n, m] identity matrix (m defaults to n; float32 unless `dtype`)."""
    shape = shape_arg("eye", (n, n if m is None else m))
    dt = _dtype(dtype, "eye", DEFAULT_FLOAT)
    check_alloc("eye", shape, dt)
    return _from_array(np.eye(n, m, dtype=dt.numpy), dt, device, "eye")


def seed(n: int, device: DeviceLike = None) -> None:
    """Reseed the random generator of `device`'s backend (the default device's when None)."""
    check_device_arg("seed", device)
    as_device(device).inner().backend.seed(n)


def _random(op: str, shape: tuple[int, ...], dist: Distribution, dtype: DTypeLike,
            device: DeviceLike) -> Tensor:
    dt = _dtype(dtype, op, DEFAULT_FLOAT)
    require_kind(op, dt, Kind.FLOAT)
    check_alloc(op, shape, dt)
    dev = device_for(op, device, dt)
    return make(dev.backend.float_random(shape, dist, dt, dev), dev, dt)


def rand(*shape: int | tuple[int, ...], dtype: DTypeLike = None,
         device: DeviceLike = None) -> Tensor:
    """Uniform values in [0, 1)."""
    return _random("rand", shape_arg("rand", shape), Distribution("uniform", 0.0, 1.0), dtype,
                   device)


def randn(*shape: int | tuple[int, ...], dtype: DTypeLike = None,
          device: DeviceLike = None) -> Tensor:
    """Standard normal values."""
    return _random("randn", shape_arg("randn", shape), Distribution("normal", 0.0, 1.0), dtype,
                   device)


def uniform(shape: int | tuple[int, ...], low: float = 0.0, high: float = 1.0,
            dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Uniform values in [low, high).

    Raises:
        ValueRangeError: when low > high or a bound is nan / inf.
    """
    low, high = finite_scalar("uniform", "low", low), finite_scalar("uniform", "high", high)
    if low > high:
        raise ValueRangeError("uniform", "low must not exceed high", low=low, high=high)
    return _random("uniform", shape_arg("uniform", (shape,)),
                   Distribution("uniform", float(low), float(high)), dtype, device)


def normal(shape: int | tuple[int, ...], mean: float = 0.0, std: float = 1.0,
           dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Normal values of `mean` and `std`.

    Raises:
        ValueRangeError: for a negative std, or a nan / inf mean or std.
    """
    mean, std = finite_scalar("normal", "mean", mean), finite_scalar("normal", "std", std)
    if std < 0:
        raise ValueRangeError("normal", "std must be non-negative", std=std)
    return _random("normal", shape_arg("normal", (shape,)),
                   Distribution("normal", float(mean), float(std)), dtype, device)


def bernoulli(shape_or_probs: int | tuple[int, ...] | Tensor, p: float = 0.5,
              dtype: DTypeLike = None, device: DeviceLike = None) -> Tensor:
    """Samples of 0.0 / 1.0: with probability `p` for a shape, or elementwise probabilities
    from a float tensor (the result then has its dtype and device, as torch.bernoulli).

    Raises:
        ValueRangeError: for p (or probabilities) outside [0, 1] or nan.
    """
    if isinstance(shape_or_probs, TensorBase):
        probs = shape_or_probs
        require_kind("bernoulli", probs.dtype, Kind.FLOAT)
        inside = ((probs >= 0.0) & (probs <= 1.0)).all()  # false for nan too
        if not inside.item():
            raise ValueRangeError("bernoulli", "probabilities must be in [0, 1] (not nan)",
                                  shape=probs.shape, dtype=probs.dtype.value)
        u = _random("bernoulli", probs.shape, Distribution("uniform", 0.0, 1.0), probs.dtype,
                    probs.device)
        return (u < probs.detach())._cast(probs.dtype)  # type: ignore
    if not 0.0 <= p <= 1.0:
        raise ValueRangeError("bernoulli", "p must be in [0, 1]", p=p)
    return _random("bernoulli", shape_arg("bernoulli", (shape_or_probs,)),
                   Distribution("bernoulli", float(p)), dtype, device)


def randint(low: int, high: int, shape: int | tuple[int, ...], dtype: DTypeLike = None,
            device: DeviceLike = None) -> Tensor:
    """Uniform integers in [low, high) (int64 unless `dtype`).

    Raises:
        ValueRangeError: when high <= low or a bound is nan / inf.
        DTypeError: for bounds that are not integers.
    """
    for name, value in (("low", low), ("high", high)):
        if not float(finite_scalar("randint", name, value)).is_integer():
            raise DTypeError("randint", f"{name} must be an integer", **{name: value})
    low, high = int(low), int(high)
    if high <= low:
        raise ValueRangeError("randint", "high must exceed low", low=low, high=high)
    dt = _dtype(dtype, "randint", DEFAULT_INT)
    require_kind("randint", dt, Kind.INT)
    dims = shape_arg("randint", (shape,))
    check_alloc("randint", dims, dt)
    dev = device_for("randint", device, dt)
    return make(dev.backend.int_random(dims, low, high, dt, dev), dev, dt)
