"""Shape rules of the op table: an op's result shapes from its input shapes and host arguments.

A rule is called as ``rule(op, shapes, args)``: ``shapes`` maps each tensor parameter to its
shape (a list of shapes for a list parameter, None for an absent optional tensor), ``args`` maps
each host parameter to its value. It returns one shape per result, and raises a typed error
naming the op when the inputs cannot be the op's (shapes that do not broadcast, a dim out of
range). A None entry in a shape is a size known only after running (``argwhere``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from burn.backend.options import window_out
from burn.errors import BurnIndexError, ShapeError, ValueRangeError

Shape = tuple[int | None, ...]
Shapes = dict[str, Any]
Rule = Callable[[str, Shapes, dict[str, Any]], tuple[Shape, ...]]


def broadcast(op: str, *shapes: Shape) -> Shape:
    """NumPy broadcasting of `shapes`.

    Raises:
        ShapeError: if they do not broadcast.
    """
    ndim = max((len(s) for s in shapes), default=0)
    out: list[int | None] = []
    for i in range(ndim):
        size: int | None = 1
        for s in shapes:
            d = s[i - ndim + len(s)] if i - ndim + len(s) >= 0 else 1
            if d == 1 or d == size:
                continue
            if size != 1:
                raise ShapeError(op, "shapes do not broadcast", shapes=[tuple(s) for s in shapes])
            size = d
        out.append(size)
    return tuple(out)


def _dim(op: str, shape: Shape, dim: int) -> int:
    if not 0 <= dim < max(len(shape), 1):
        raise BurnIndexError(op, "dim out of range", dim=dim, shape=shape)
    return dim


def _first(shapes: Shapes) -> Shape:
    shape: Shape = next(iter(shapes.values()))
    return shape


def same(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """The first tensor's shape (unary elementwise ops, casts, cumulative ops, assigns)."""
    return (_first(shapes),)


def elementwise(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """The broadcast of every tensor input (binary ops, comparisons, mask_where)."""
    return (broadcast(op, *(s for s in shapes.values() if s is not None)),)


def full(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """The `shape` argument (full, empty, random)."""
    return (tuple(args["shape"]),)


def from_data(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """The host array's shape."""
    return (tuple(args["data"].shape),)


def arange(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """ceil((end - start) / step) elements, at least 0."""
    return (max(0, -(-(args["end"] - args["start"]) // args["step"])),),


def reduce_all(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """A 0-d result."""
    return ((),)


def reduce_dim(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """`dim` kept with size 1."""
    shape = _first(shapes)
    dim = _dim(op, shape, args["dim"])
    return (tuple(1 if i == dim else s for i, s in enumerate(shape)),)


def pair(rule: Rule) -> Rule:
    """A rule giving two results of the shape `rule` gives (values and indices)."""

    def rule2(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
        out = rule(op, shapes, args)[0]
        return (out, out)

    rule2.__doc__ = f"Two results shaped as {rule.__name__}."
    return rule2


def matmul(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[..., m, k] @ [..., k, n] -> [broadcast(...), m, n]."""
    a, b = shapes["lhs"], shapes["rhs"]
    if len(a) < 2 or len(b) < 2 or a[-1] != b[-2]:
        raise ShapeError(op, "matmul needs [..., m, k] @ [..., k, n]", lhs=a, rhs=b)
    return ((*broadcast(op, a[:-2], b[:-2]), a[-2], b[-1]),)


def reshape(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """The `shape` argument, holding as many elements as the input."""
    src, dst = _first(shapes), tuple(args["shape"])
    if None not in src and math.prod(src) != math.prod(dst):  # type: ignore[arg-type]
        raise ShapeError(op, "reshape must keep the number of elements", shape=src, to=dst)
    return (dst,)


def swap_dims(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """`dim1` and `dim2` exchanged."""
    out = list(_first(shapes))
    d1, d2 = _dim(op, tuple(out), args["dim1"]), _dim(op, tuple(out), args["dim2"])
    if out:
        out[d1], out[d2] = out[d2], out[d1]
    return (tuple(out),)


def permute(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """Dims reordered by `axes`."""
    shape, axes = _first(shapes), tuple(args["axes"])
    if sorted(axes) != list(range(len(shape))):
        raise ShapeError(op, "axes must be a permutation of the dims", shape=shape, axes=axes)
    return (tuple(shape[a] for a in axes),)


def expand(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """The `shape` argument, which the input must broadcast to."""
    shape, target = _first(shapes), tuple(args["shape"])
    if broadcast(op, shape, target) != target:
        raise ShapeError(op, "cannot expand", shape=shape, to=target)
    return (target,)


def repeat_dim(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """`dim` multiplied by `times`."""
    shape = _first(shapes)
    dim = _dim(op, shape, args["dim"])
    return (tuple(s * args["times"] if i == dim and s is not None else s
                  for i, s in enumerate(shape)),)


def cat(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """Inputs joined along `dim`; every other dim must agree."""
    parts: Sequence[Shape] = shapes["xs"]
    if not parts:
        raise ShapeError(op, "needs at least one tensor")
    dim = _dim(op, parts[0], args["dim"])
    rest = {tuple(s for i, s in enumerate(p) if i != dim) for p in parts}
    if len(rest) != 1 or len({len(p) for p in parts}) != 1:
        raise ShapeError(op, "shapes differ outside the cat dim", dim=dim, shapes=list(parts))
    sizes = [p[dim] for p in parts]
    total = None if None in sizes else sum(sizes)  # type: ignore[arg-type]
    return (tuple(total if i == dim else s for i, s in enumerate(parts[0])),)


def unfold(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """`dim` becomes the number of windows; the window size is appended."""
    shape = _first(shapes)
    dim, size, step = _dim(op, shape, args["dim"]), args["size"], args["step"]
    n = shape[dim] if shape else 1
    count = None if n is None else max(0, (n - size) // step + 1)
    out = tuple(count if i == dim else s for i, s in enumerate(shape))
    return ((*out, size),)


def slice_(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """Basic slicing: one builtin slice per leading dim."""
    shape = _first(shapes)
    slices = args["slices"]
    if len(slices) > len(shape):
        raise BurnIndexError(op, "more slices than dims", shape=shape, slices=len(slices))
    out = [len(range(*s.indices(n))) if n is not None else None
           for s, n in zip(slices, shape, strict=False)]
    return ((*out, *shape[len(slices):]),)


def select(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """`dim` replaced by the number of indices."""
    shape, idx = _first(shapes), shapes["indices"]
    dim = _dim(op, shape, args["dim"])
    if len(idx) != 1:
        raise ShapeError(op, "indices must be 1-d", indices=idx)
    return (tuple(idx[0] if i == dim else s for i, s in enumerate(shape)),)


def gather(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """The indices' shape (same number of dims as the input)."""
    shape, idx = shapes["x"], shapes["indices"]
    _dim(op, shape, args["dim"])
    if len(idx) != len(shape):
        raise ShapeError(op, "indices must have the input's number of dims", x=shape, indices=idx)
    return (idx,)


def argwhere(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[count, ndim]; the count is known only after running."""
    return ((None, len(_first(shapes))),)


def _spatial(op: str, x: Shape, n: int) -> tuple[int, ...]:
    if len(x) != n + 2:
        raise ShapeError(op, f"input must be [N, C, {n} spatial dims]", x=x)
    return tuple(x[2:])  # type: ignore[arg-type]


def conv(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[N, C_out, *windows] (also deform_conv2d)."""
    x, w, opt = shapes["x"], shapes["weight"], args["options"]
    spatial = _spatial(op, x, len(w) - 2)
    out = window_out(spatial, w[2:], opt.stride, opt.padding, opt.dilation)
    return ((x[0], w[0], *out),)


def conv_transpose(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[N, C_out, (n - 1) s - 2p + d (k - 1) + p_out + 1 per spatial dim]."""
    x, w, o = shapes["x"], shapes["weight"], args["options"]
    spatial = _spatial(op, x, len(w) - 2)
    out = [(n - 1) * s - 2 * p + d * (k - 1) + po + 1 for n, k, s, p, po, d in zip(
        spatial, w[2:], o.stride, o.padding, o.padding_out, o.dilation, strict=True)]
    return ((x[0], w[1] * o.groups, *out),)


def pool(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[N, C, *windows]."""
    x, o = shapes["x"], args["options"]
    spatial = _spatial(op, x, len(o.kernel_size))
    out = window_out(spatial, o.kernel_size, o.stride, o.padding, o.dilation, o.ceil_mode)
    return ((*x[:2], *out),)


def resized(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[N, C, *output_size] (adaptive pooling, interpolation)."""
    x, size = shapes["x"], tuple(args["output_size"])
    _spatial(op, x, len(size))
    return ((*x[:2], *size),)


def grid_sample(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[N, C, H_grid, W_grid]."""
    x, grid = shapes["x"], shapes["grid"]
    if len(x) != 4 or len(grid) != 4 or grid[-1] != 2 or grid[0] != x[0]:
        raise ShapeError(op, "needs x [N, C, H, W] and grid [N, H', W', 2]", x=x, grid=grid)
    return ((x[0], x[1], grid[1], grid[2]),)


def unfold4d(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[N, C * kh * kw, number of windows]."""
    x, k, o = shapes["x"], args["kernel_size"], args["options"]
    spatial = _spatial(op, x, 2)
    out = window_out(spatial, k, o.stride, o.padding, o.dilation)
    return ((x[0], x[1] * k[0] * k[1], math.prod(out)),)


def embedding(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[*indices, D]."""
    w = shapes["weight"]
    if len(w) != 2:
        raise ShapeError(op, "weight must be [V, D]", weight=w)
    return ((*shapes["indices"], w[1]),)


def attention(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[..., Lq, Ev]."""
    q, k, v = shapes["q"], shapes["k"], shapes["v"]
    if q[-1] != k[-1] or k[-2] != v[-2]:
        raise ShapeError(op, "needs q [..., Lq, E], k [..., Lk, E], v [..., Lk, Ev]",
                         q=q, k=k, v=v)
    return ((*broadcast(op, q[:-2], k[:-2], v[:-2]), q[-2], v[-1]),)


def layer_norm(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """x's shape, then the mean and rstd: x's shape with the last `num_dims` dims of size 1."""
    x, k = shapes["x"], args["num_dims"]
    if not 1 <= k <= len(x):
        raise ShapeError(op, "num_dims must be in [1, x.ndim]", x=x, num_dims=k)
    for name in ("weight", "bias"):
        if shapes.get(name) is not None and tuple(shapes[name]) != tuple(x[len(x) - k:]):
            raise ShapeError(op, f"{name} must be shaped as x's last num_dims dims",
                             x=x, num_dims=k, **{name: shapes[name]})
    stats = (*x[:len(x) - k], *(1,) * k)
    return (x, stats, stats)


def cross_entropy(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """[M] per-sample losses for reduction "none", else a 0-d loss."""
    x, t, w = shapes["logits"], shapes["target"], shapes.get("weight")
    if len(x) != 2 or tuple(t) != tuple(x[:1]) or (w is not None and tuple(w) != tuple(x[1:])):
        raise ShapeError(op, "needs logits [M, C], target [M] and weight [C] or None",
                         logits=x, target=t, weight=w)
    if args["reduction"] not in ("mean", "sum", "none"):
        raise ValueRangeError(op, "reduction must be 'mean', 'sum' or 'none'",
                              reduction=args["reduction"])
    return ((x[0],) if args["reduction"] == "none" else (),)


def grads_of(*names: str) -> Rule:
    """A backward rule: one result per named input, shaped as that input (None if absent)."""

    def rule(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
        return tuple(shapes[n] for n in names)

    rule.__doc__ = f"Gradients shaped as {', '.join(names)}."
    return rule


def none(op: str, shapes: Shapes, args: dict[str, Any]) -> tuple[Shape, ...]:
    """No tensor result (host data)."""
    return ()
