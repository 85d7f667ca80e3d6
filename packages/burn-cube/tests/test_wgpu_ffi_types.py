"""The wgpu runtime's fast path for cffi types named by wgpu-py (`fast_type_lookup`): the same
cffi types as cffi's own parse, for struct pointers, arrays, typedefs and primitives; other
declarations (function types) still parsed."""

from __future__ import annotations

import pytest

pytest.importorskip("wgpu")
from cffi import CDefError  # noqa: E402  (after the skip: cffi comes with wgpu)
from cffi.cparser import Parser  # noqa: E402
from wgpu.backends.wgpu_native._ffi import ffi  # noqa: E402

from burn_cube.runtime.wgpu import fast_type_lookup  # noqa: E402  (importing installs it)

#: names wgpu-py asks for while starting a device and running a kernel, spelled as it does
NAMES = ["WGPUBufferDescriptor *", "WGPUChainedStruct * ", "WGPUFeatureName[]",
         "WGPUBindGroupLayout[]", "WGPUCommandBuffer[]", "WGPUStringView *", "uint8_t []",
         "uint8_t *", "uintptr_t", "intptr_t", "WGPULimits *", "char []"]
FUNCTION = "void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)"


@pytest.mark.parametrize("name", NAMES)
def test_lookup_gives_the_parsed_type(name: str) -> None:
    fast = ffi._parser.parse_type_and_quals(name)
    assert fast == Parser.parse_type_and_quals(ffi._parser, name)
    assert ffi.typeof(name) is ffi.typeof(name.replace(" ", ""))  # one cached cffi type


def test_other_declarations_are_parsed() -> None:
    assert ffi._parser.parse_type_and_quals(FUNCTION) == Parser.parse_type_and_quals(
        ffi._parser, FUNCTION)
    with pytest.raises(CDefError, match="NoSuchType"):
        ffi.typeof("NoSuchType *")


def test_parser_of_another_layout_is_left_alone() -> None:
    class Other:
        def parse_type_and_quals(self, cdecl: str) -> str:
            return cdecl

    other = Other()
    fast_type_lookup(other)
    fast_type_lookup(None)
    assert other.parse_type_and_quals("T *") == "T *" and "parse_type_and_quals" not in vars(other)
