"""The cheap operation suites (Burn's benchmarks.toml list): for one (bench, size, dtype,
device), the burn call and the PyTorch / numpy calls doing the same work on the same data.

Each builder takes the size scale `n` (the side of the square operands), a numpy dtype name and
a burn device, and returns the candidates' calls keyed by "burn", "torch" (when torch, an
optional dependency, is installed) and, where numpy has the op, "numpy". Every burn call ends
with `burn.sync(device)` (device synchronisation). The builders of `BURN_SHAPES` also take
`shape=`: the operand shape of Burn's own bench (3-d) instead of n x n."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import burn
import burn.functional as F

Call = Callable[[], object]
Calls = dict[str, Call]
Shape = tuple[int, ...]
Builder = Callable[..., Calls]
#: burn backends that run on the host; torch references of the others run on CUDA where torch
#: has it (an H200's cuda and wgpu rows against torch on the same GPU)
HOST_BACKENDS = ("numpy", "cpu")


@dataclass(frozen=True)
class ToTorch:
    """numpy -> torch tensor conversion onto the reference's device ("cpu" or "cuda")."""

    torch: Any
    device: str

    def __call__(self, x: np.ndarray) -> Any:
        return self.torch.from_numpy(x.copy()).to(self.device)


#: given the torch module and the conversion to its device, the reference call
TorchRef = Callable[[Any, ToTorch], Call]


def torch_device(torch: Any, device: Any) -> str:
    """Where the torch reference of a row on burn `device` runs: "cuda" for a GPU backend when
    torch has CUDA, else "cpu"."""
    name = str(device).split("+")[0].split(":")[0]
    return "cuda" if name not in HOST_BACKENDS and torch.cuda.is_available() else "cpu"


def _data(dtype: str, *shape: int) -> np.ndarray:
    return np.random.default_rng(0).standard_normal(shape).astype(dtype)


def _calls(device: Any, burn_fn: Call, torch_ref: TorchRef, numpy_fn: Call | None = None
           ) -> Calls:
    """The calls of one bench: burn's (synchronised), torch's where installed, numpy's."""
    def synced() -> object:
        out = burn_fn()
        burn.sync(device)
        return out

    calls: Calls = {"burn": synced}
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        torch = None
    if torch is not None:
        to = ToTorch(torch, torch_device(torch, device))
        ref = torch_ref(torch, to)
        if to.device == "cpu":
            calls["torch"] = ref
        else:
            def ref_synced() -> object:
                out = ref()
                torch.cuda.synchronize()
                return out
            calls["torch"] = ref_synced
    if numpy_fn is not None:
        calls["numpy"] = numpy_fn
    return calls


def _unary(n: int, dtype: str, device: Any, burn_fn: Callable[[Any], object],
           torch_fn: Callable[[Any, Any], object],
           numpy_fn: Callable[[np.ndarray], object] | None,
           shape: tuple[int, ...] | None = None) -> Calls:
    """Calls applying one function to the same tensor (n x n unless `shape` is given);
    `torch_fn(torch, t)`."""
    x = _data(dtype, *(shape or (n, n)))
    b = burn.tensor(x, device=device)

    def ref(torch: Any, to: Callable[[np.ndarray], Any]) -> Call:
        t = to(x)
        return lambda: torch_fn(torch, t)
    return _calls(device, lambda: burn_fn(b), ref,
                  None if numpy_fn is None else lambda: numpy_fn(x))


def _binary(n: int, dtype: str, device: Any, fn: Callable[[Any, Any], object],
            transpose: bool = False, shape: Shape | None = None) -> Calls:
    """Calls applying `fn(a, b)` (the same operator on every library) to n x n operands (or
    operands of `shape`)."""
    x, y = _data(dtype, *(shape or (n, n))), _data(dtype, *(shape or (n, n)))
    y = (y.T if transpose else y[::-1]).copy()
    a, b = burn.tensor(x, device=device), burn.tensor(y, device=device)

    def ref(torch: Any, to: Callable[[np.ndarray], Any]) -> Call:
        ta, tb = to(x), to(y)
        return lambda: fn(ta, tb)
    return _calls(device, lambda: fn(a, b), ref, lambda: fn(x, y))


def unary(n: int, dtype: str, device: Any, shape: Shape | None = None) -> Calls:
    """`tanh(x)` on an n x n tensor (Burn's unary bench: tanh)."""
    return _unary(n, dtype, device, lambda b: b.tanh(), lambda torch, t: torch.tanh(t), np.tanh,
                  shape)


def binary(n: int, dtype: str, device: Any, shape: Shape | None = None) -> Calls:
    """`a + b` on n x n tensors (Burn's binary bench: add)."""
    return _binary(n, dtype, device, lambda a, b: a + b, shape=shape)


def matmul(n: int, dtype: str, device: Any, shape: Shape | None = None) -> Calls:
    """`a @ b` of two n x n matrices; with `shape` (batch, m, k, n), a batched
    (batch, m, k) @ (batch, k, n) product (Burn's matmul bench)."""
    if shape is None:
        return _binary(n, dtype, device, lambda a, b: a @ b, transpose=True)
    batch, m, k, cols = shape
    x, y = _data(dtype, batch, m, k), _data(dtype, batch, k, cols)
    a, b = burn.tensor(x, device=device), burn.tensor(y, device=device)

    def ref(torch: Any, to: Callable[[np.ndarray], Any]) -> Call:
        ta, tb = to(x), to(y)
        return lambda: ta @ tb
    return _calls(device, lambda: a @ b, ref, lambda: x @ y)


def reduce(n: int, dtype: str, device: Any, shape: Shape | None = None) -> Calls:
    """`x.sum(dim=1)` of an n x n tensor (or of a 3-d `shape`, as Burn's sum-dim bench)."""
    return _unary(n, dtype, device, lambda b: b.sum(1), lambda torch, t: t.sum(1),
                  lambda x: x.sum(1), shape)


def bool_select(n: int, dtype: str, device: Any, shape: Shape | None = None) -> Calls:
    """`mask.select(1, indices)` (torch.index_select) of a boolean n x n mask with n // 8
    random column indices (Burn's bool_select bench); `dtype` is unused (the data is bool).
    With `shape`, the mask has that shape and 16 indices are drawn, as in Burn's middle case."""
    rng = np.random.default_rng(0)
    dims = shape or (n, n)
    mask = rng.random(dims) < 0.5
    idx = rng.integers(0, dims[1], 16 if shape else max(1, n // 8))
    bm, bi = burn.tensor(mask, device=device), burn.tensor(idx, device=device)

    def ref(torch: Any, to: Callable[[np.ndarray], Any]) -> Call:
        tm, ti = to(mask), to(idx)
        return lambda: torch.index_select(tm, 1, ti)
    return _calls(device, lambda: bm.select(1, bi), ref, lambda: np.take(mask, idx, axis=1))


def softmax(n: int, dtype: str, device: Any) -> Calls:
    """`softmax(x, dim=1)` of an n x n tensor."""
    return _unary(n, dtype, device, lambda b: F.softmax(b, 1),
                  lambda torch, t: torch.softmax(t, 1), None)


def custom_gelu(n: int, dtype: str, device: Any, shape: Shape | None = None) -> Calls:
    """GELU from primitives, `x * 0.5 * (1 + erf(x / sqrt(2)))`, on an n x n tensor.

    What Burn's custom-gelu bench composes: the fusion candidate."""
    root = math.sqrt(2.0)
    return _unary(n, dtype, device, lambda b: b * 0.5 * ((b / root).erf() + 1.0),
                  lambda torch, t: t * 0.5 * (torch.erf(t / root) + 1.0), None, shape)


def random(n: int, dtype: str, device: Any) -> Calls:
    """A uniform [0, 1) n x n tensor.

    numpy draws float64 and casts (its generator has no float16)."""
    gen = np.random.default_rng(0)

    def ref(torch: Any, to: ToTorch) -> Call:
        return lambda: torch.rand(n, n, dtype=getattr(torch, dtype), device=to.device)
    return _calls(device, lambda: burn.rand(n, n, dtype=dtype, device=device), ref,
                  lambda: gen.random((n, n)).astype(dtype, copy=False))


def data(n: int, dtype: str, device: Any) -> Calls:
    """Host data to a tensor and back (`burn.tensor(array).numpy()`), n x n."""
    x = _data(dtype, n, n)

    def ref(torch: Any, to: ToTorch) -> Call:
        return lambda: torch.tensor(x, device=to.device).cpu().numpy()
    return _calls(device, lambda: burn.tensor(x, device=device).numpy(), ref,
                  lambda: np.array(x))


def autodiff(n: int, dtype: str, device: Any) -> Calls:
    """Forward and backward of `(a @ b).exp().sum()`, n x n leaves.

    The device gets the autodiff decorator when it lacks it."""
    if "autodiff" not in str(device).split("+"):
        device = burn.Device(f"{device}+autodiff")
    x, y = _data(dtype, n, n) / n, _data(dtype, n, n)
    a = burn.tensor(x, device=device).require_grad()
    b = burn.tensor(y, device=device).require_grad()

    def burn_step() -> object:
        grads = (a @ b).exp().sum().backward()
        return a.grad(grads), b.grad(grads)

    def ref(torch: Any, to: Callable[[np.ndarray], Any]) -> Call:
        ta, tb = to(x).requires_grad_(), to(y).requires_grad_()

        def torch_step() -> object:
            ta.grad = tb.grad = None
            (ta @ tb).exp().sum().backward()
            return ta.grad, tb.grad
        return torch_step
    return _calls(device, burn_step, ref)


def _conv(dtype: str, device: Any, op: str, x_shape: tuple[int, ...],
          w_shape: tuple[int, ...], **options: int) -> Calls:
    """Calls of `op` (a name shared by burn.functional and torch.nn.functional) with a bias,
    on the same input and weight; the bias has w_shape[0] (conv) or w_shape[1] (transposed)
    channels."""
    out = w_shape[1] if "transpose" in op else w_shape[0]
    x, w, bias = _data(dtype, *x_shape), _data(dtype, *w_shape), _data(dtype, out)
    bx, bw, bb = (burn.tensor(a, device=device) for a in (x, w, bias))
    burn_op = getattr(F, op)

    def ref(torch: Any, to: Callable[[np.ndarray], Any]) -> Call:
        tx, tw, tb = to(x), to(w), to(bias)
        torch_op = getattr(torch.nn.functional, op)
        return lambda: torch_op(tx, tw, tb, **options)
    return _calls(device, lambda: burn_op(bx, bw, bb, **options), ref)


def conv2d(n: int, dtype: str, device: Any) -> Calls:
    """3x3 convolution with bias, padding 1: batch 2, 8 -> 16 channels, n x n images."""
    return _conv(dtype, device, "conv2d", (2, 8, n, n), (16, 8, 3, 3), padding=1)


def conv3d(n: int, dtype: str, device: Any) -> Calls:
    """3x3x3 convolution with bias, padding 1: batch 2, 4 -> 8 channels, 4 x n x n volumes."""
    return _conv(dtype, device, "conv3d", (2, 4, 4, n, n), (8, 4, 3, 3, 3), padding=1)


def conv_transpose2d(n: int, dtype: str, device: Any) -> Calls:
    """3x3 transposed convolution with bias, stride 2: batch 2, 8 -> 16 channels, n x n."""
    return _conv(dtype, device, "conv_transpose2d", (2, 8, n, n), (8, 16, 3, 3), stride=2)


def conv_transpose3d(n: int, dtype: str, device: Any) -> Calls:
    """3x3x3 transposed convolution with bias: batch 2, 4 -> 8 channels, 4 x n x n."""
    return _conv(dtype, device, "conv_transpose3d", (2, 4, 4, n, n), (4, 8, 3, 3, 3))


def matmul_fused(n: int, dtype: str, device: Any) -> Calls:
    """`gelu(relu(a @ b) + bias)` for n x n matrices (Burn's matmul-fused bench)."""
    x, y, bias = _data(dtype, n, n), _data(dtype, n, n).T.copy(), _data(dtype, n)
    a, b, c = (burn.tensor(v, device=device) for v in (x, y, bias))

    def ref(torch: Any, to: Callable[[np.ndarray], Any]) -> Call:
        ta, tb, tc = to(x), to(y), to(bias)
        act = torch.nn.functional
        return lambda: act.gelu(act.relu(ta @ tb) + tc)
    return _calls(device, lambda: F.gelu(F.relu(a @ b) + c), ref)


def max_pool2d(n: int, dtype: str, device: Any) -> Calls:
    """3x3 max pooling, stride 2: batch 2, 8 channels, n x n images."""
    return _unary(n, dtype, device, lambda b: F.max_pool2d(b, 3, stride=2),
                  lambda torch, t: torch.nn.functional.max_pool2d(t, 3, stride=2), None,
                  shape=(2, 8, n, n))


#: bench name -> builder of its calls
BUILDERS: dict[str, Builder] = {
    "unary": unary, "binary": binary, "matmul": matmul, "reduce": reduce, "softmax": softmax,
    "bool_select": bool_select,
    "custom-gelu": custom_gelu, "random": random, "data": data, "autodiff": autodiff,
    "conv2d": conv2d, "conv3d": conv3d, "conv-transpose2d": conv_transpose2d,
    "conv-transpose3d": conv_transpose3d, "matmul-fused": matmul_fused, "max-pool2d": max_pool2d}

#: `shapes` settings: n x n operands, or Burn's shapes where it has them
SHAPES = ("square", "burn")
#: The operand shapes of Burn's backend-comparison benches that use 3-d shapes (matmul:
#: batch, m, k, n), for `shapes = "burn"`; the other benches keep their n x n operands.
BURN_SHAPES: dict[str, Shape] = {
    "unary": (32, 512, 1024), "binary": (32, 512, 1024), "custom-gelu": (32, 512, 2048),
    "reduce": (4096, 512, 64), "matmul": (3, 1024, 2048, 1024), "bool_select": (64, 128, 256)}
