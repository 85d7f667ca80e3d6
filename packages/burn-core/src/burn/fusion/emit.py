"""One elementwise op of a fused program, emitted with burn-cube's `KernelBuilder` (the reduce
and matmul fusers build their kernels op by op with it).

An op is given as in a block's signature (`burn.fusion.elementwise.Signature`): its name, its
arguments (``("in", k)``, ``("op", j)``, ``("num", dtype id)`` or ``("fixed", value)``) and the
id of its result dtype. Its value is rounded to the result dtype in a local, as the unfused op
would store it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from burn.backends.cube.math import emit_fused_math
from burn.dtype import DType
from burn.ir import OPS
from burn.ir.cube import cube_dtype, emit_row

#: Dtypes by id (signatures hold ids).
DTYPES = {id(d): d for d in DType}

#: How an operand of an op is found: (parameter position, role, value) -> a builder value.
Operand = Callable[[int, str, Any], Any]


def kernel_name(kind: str, ops: tuple[Any, ...]) -> str:
    """A fused kernel's name: its kind and the names of its ops in order, each once (a GPU
    profile shows it as the kernel's entry point).

    Args:
        kind: ``fused`` or ``fused_reduce``.
        ops: the block's ops as in its signature.
    Returns:
        e.g. ``fused_mul_add_tanh`` (the backends' ``float_`` prefixes left out).
    """
    names = dict.fromkeys(op[0].removeprefix("float_") for op in ops)
    return "_".join((kind, *names))


class Opaque:
    """Hides each use of a float value from the shader compiler's algebra.

    WGSL lets a driver assume there is no NaN or infinity, and the drivers rewrite float
    expressions by identities that only hold then: fused, ``x - x`` and ``x + (-x)`` were 0 at
    inf and NaN, ``(x - x) + -0.0`` gave -0.0, ``exp(log(x))``, ``1 / (1 / x)`` and
    ``(x + y) - y`` gave ``x``, ``sqrt(x) ** 2`` gave ``|x|`` (Mesa's llvmpipe and NVIDIA's
    Vulkan driver). The unfused ops read their operands from memory, where no identity applies.
    Here each use of a value as a float operand of an op is burn-cube's ``opaque(value, zero & k)``
    (its bits XOR a kernel scalar 0 at launch, masked by a constant of the use's own): the
    compiler can neither look into the value nor prove two uses equal. (``v * one`` with a
    scalar one is not enough: the compiler moves negations and runtime factors across it; nor
    ``select(keep, v, k)``: NVIDIA's driver hoists an op of two selects on one condition.)

    Args:
        b: the `burn_cube.KernelBuilder`.
        zero: the kernel's u32 scalar, `VALUES` at launch.
    """

    #: The kernel scalars' values at launch, in their order.
    VALUES = (0,)

    def __init__(self, b: Any, zero: Any) -> None:
        self.b = b
        self.zero = zero
        self.uses = 0

    @classmethod
    def declare(cls, b: Any, name: str) -> Opaque:
        """Declares the kernel's u32 scalar `name` (next in parameter order) and hides with it.

        Args:
            b: the `burn_cube.KernelBuilder`.
            name: the scalar's name.
        Returns:
            The `Opaque` of the kernel.
        """
        from burn_cube.types import u32

        return cls(b, b.scalar(name, u32))

    def __call__(self, value: Any) -> Any:
        dtype = getattr(value, "dtype", None)
        if dtype is None or not dtype.is_float:
            return value
        self.uses += 1
        return self.b.opaque(value, self.zero & self.uses)


def emit_op(b: Any, op: tuple[Any, ...], operand: Operand, lanes: int = 1,
            opaque: Opaque | None = None) -> Any:
    """The value of one op of a program signature, in a local of its result dtype.

    A cast of a bool to a number is emitted as a select of 1 or 0: C compilers vectorize that
    loop, not the conversion of a C ``bool``. A bf16 value, computed in float32 on the C and
    CUDA targets, is rounded to bf16 by casts there.

    Args:
        b: the `burn_cube.KernelBuilder`.
        op: (name, arguments, result dtype id).
        operand: the builder value of a tensor (``in`` / ``op``) or number (``num``) argument.
        lanes: the line width of the kernel's values (1: scalars).
        opaque: where given, wraps the op's tensor operands (WGSL kernels: `Opaque`).
    Returns:
        The local holding the op's value.
    """
    from burn_cube.errors import CompileError
    from burn_cube.types import bf16, bool_, f32, line

    name, args, out_id = op
    row = OPS[name]
    env: dict[str, Any] = {}
    for p, (param, (role, value)) in enumerate(zip(row.params, args, strict=True)):
        if role != "fixed":
            env[param.name] = operand(p, role, value)
            if opaque is not None and role != "num":
                env[param.name] = opaque(env[param.name])
        elif param.type == "dtype":
            env[param.name] = cube_dtype(name, value)
        else:
            env[param.name] = value
    scalar = cube_dtype(name, DTYPES[out_id])
    target = line(scalar, lanes)
    cube = row.cube
    if cube is None:  # an activation of the cube backends' `MATH` expressions
        if lanes > 1:  # (written for scalars: the fuser builds the block by element)
            raise CompileError(f"{name} has no line form", name)
        value = emit_fused_math(b, name, [env[row.params[i].name] for i in row.tensor_at],
                                [env[p.name] for p in row.params if p.type == "float"], env)
    elif cube[0] == "cast" and getattr(env.get(cube[1]), "dtype", None) is bool_ \
            and scalar is not bool_:
        value = b.select(env[cube[1]], b.const(1, scalar), b.const(0, scalar))
    else:
        value = emit_row(b, row, env)
    if getattr(value, "dtype", target) != target:
        value = b.cast(value, target)
    elif scalar is bf16 and hasattr(value, "dtype"):  # computed in float32 on C and CUDA
        value = b.cast(b.cast(value, f32), target)  # rounded there by the cast to bf16
    return b.local(target, init=value)
