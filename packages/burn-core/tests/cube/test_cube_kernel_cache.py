"""`kernel_cache.cached_kernel`: kernel factories whose IR is built only where the runtime's
launch index misses it, and `stable_text`, the argument texts that name them."""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import burn_cube
from burn.backends.cube.kernel_cache import cached_kernel, stable_text
from burn.dtype import DType


class _Mode(enum.Enum):
    fast = "fast"


@dataclass(frozen=True)
class _Frozen:
    rank: int
    dtype: DType


@dataclass
class _Mutable:
    rank: int


def test_stable_text_names_values_exactly() -> None:
    assert stable_text((DType.float32, 3, True, None, "x", 0.1)) == \
        "(burn.dtype.DType.float32,3,True,None,'x',0.1,)"
    assert stable_text(burn_cube.f32) == "cube.f32"
    assert stable_text(_Mode.fast).endswith("_Mode.fast")
    assert stable_text(_Frozen(2, DType.int64)) == \
        f"({_Frozen.__module__}._Frozen,2,burn.dtype.DType.int64)"
    # one-tuples, nested tuples and ints vs bools vs floats stay apart
    texts = [stable_text(v) for v in ((1,), ((1,),), 1, True, 1.0, "1", (1, 2), ((1, 2),))]
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize("value", [np.float32(1.0), np.int64(3), [1, 2], {"a": 1},
                                   _Mutable(1), (1, object()), object()])
def test_stable_text_refuses_values_without_one(value: Any) -> None:
    assert stable_text(value) is None


def _scale_factory(builds: list[str]) -> Any:
    def scale(tag: str, factor: float) -> Any:
        builds.append(tag)
        b = burn_cube.KernelBuilder("scale_by")
        x = b.tensor("x", burn_cube.f32, rank=1, write=False)
        out = b.tensor("out", burn_cube.f32, rank=1, write=True)
        pos = b.ABSOLUTE_POS
        with b.if_(pos < out.len):
            out[pos] = x[pos] * float(factor)
        return b.kernel()

    return scale


def _run(kernel: Any, rt: Any, data: np.ndarray) -> np.ndarray:
    x = rt.upload(data)
    out = rt.allocate(data.shape, burn_cube.f32)
    kernel.launch(rt, 1, 256, x, out)
    return np.asarray(rt.download(out))


def test_cached_kernel_builds_the_ir_only_on_an_index_miss() -> None:
    rt = burn_cube.runtime("cpu")
    builds: list[str] = []
    factory = cached_kernel(_scale_factory(builds))
    tag = uuid.uuid4().hex  # a kernel no earlier run indexed
    data = np.arange(8, dtype=np.float32)
    kernel = factory(tag, 2.0)
    assert factory(tag, 2.0) is kernel and builds == []  # cached, and nothing built yet
    np.testing.assert_array_equal(_run(kernel, rt, data), data * 2)
    assert builds == [tag]
    factory.cache_clear()  # as a new process: a new kernel object, the same launch index
    again = factory(tag, 2.0)
    assert again is not kernel
    np.testing.assert_array_equal(_run(again, rt, data), data * 2)
    assert builds == [tag] and again.stats["index_hits"] == 1
    assert again.name == "scale_by"
    np.testing.assert_array_equal(_run(factory(tag, 3.0), rt, data), data * 3)
    assert builds == [tag, tag]  # another argument is another kernel


def test_cached_kernel_builds_at_once_without_a_stable_text() -> None:
    builds: list[str] = []
    factory = cached_kernel(_scale_factory(builds))
    kernel = factory("unnamed", np.float32(2.0))
    assert builds == ["unnamed"]
    np.testing.assert_array_equal(_run(kernel, burn_cube.runtime("cpu"), np.ones(4, np.float32)),
                                  np.full(4, 2.0, np.float32))
