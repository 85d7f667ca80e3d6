"""The op a user called, found on the calling stack: what a backend's AllocationError names
(an allocation under ``sort`` names ``sort``, not the op-table method or the buffer under it).
"""

from __future__ import annotations

import functools
import os
import sys
import types

#: Where burn's modules are, with the separator (installed beside it, burn_cube's and
#: burn_vision's paths share the bare prefix): `calling_op` names the op of a burn frame only.
_BURN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
#: Frames a stack walk for the op a user called stops at: a fusion stream running its
#: pending ops (the ops recorded there name their own results' allocations).
_STREAM_FILE = os.path.join(_BURN_DIR, "fusion", "stream.py")


def calling_op(default: str) -> str:
    """The op a user called, from the calling stack: the outermost frame of burn's code named
    as an op (a public function or `Tensor` method such as ``cumsum`` or ``max_pool2d``, or an
    op-table method such as ``float_cat``, by its `OpDef.user_name`), else `default`; the
    walk stops at a fusion stream's flush. Run on the error path only: an allocation under an
    op that failed (a product's buffer under ``conv2d``: ``conv2d``; a copy under a
    ``reshape``: ``reshape``).

    Args:
        default: the name to keep where no op's frame is on the stack.
    Returns:
        That op's user name.
    """
    names = _op_names()
    found = default
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_filename == _STREAM_FILE:
            break
        name = names.get(code.co_name)
        if name is not None and code.co_filename.startswith(_BURN_DIR):
            found = name
        frame = frame.f_back
    return found


@functools.cache
def _op_names() -> dict[str, str]:
    """Op user names by the names of the functions that run them: the public API's (`Tensor`
    methods, `burn`'s and `burn.functional`'s functions: ``sort``, ``max_pool2d``, ``conv2d``,
    by their own names; not ``backward``, under which the failing op of the backward pass is
    named), op-table methods by their user names; not ``empty``: the backend's allocation,
    under the op whose result it is (an empty tensor's own op is the default)."""
    import burn
    import burn.functional as functional
    from burn.ir import OPS  # (the op table loads with the first error, not the first op)

    api = {name for space in (burn.Tensor, burn, functional) for name in dir(space)
           if not name.startswith("_") and callable(getattr(space, name))} - {"backward"}
    names = {**{op.user_name: op.user_name for op in OPS.values()},
             **{name: op.user_name for name, op in OPS.items()},
             **{name: name for name in api}}
    return {name: user for name, user in names.items() if user != "empty"}
