"""The cuda runtime's NVRTC compile, checked without a GPU (NVRTC needs none): IEEE float
semantics (no flush of subnormals to zero, which CuPy's RawModule forces), the disk cache, and
NVRTC's errors as CompileError with the compiler's log."""

from __future__ import annotations

from pathlib import Path

import pytest

from burn_cube.cache import DiskCache
from burn_cube.errors import CompileError
from burn_cube.runtime import nvrtc

pytestmark = pytest.mark.skipif(nvrtc.nvrtc is None, reason="CuPy's NVRTC bindings missing")

#: A comparison and a product of float32: with -ftz=true their PTX carries ``.ftz``.
SOURCE = r"""extern "C" __global__ void bc_kernel(const float *x, float *y, int *nonzero) {
    const unsigned int i = threadIdx.x;
    nonzero[i] = x[i] != 0.0f;
    y[i] = x[i] * 0.5f;
}"""
#: The newest architecture this NVRTC knows: PTX for a newer device.
NEWEST = max(nvrtc.nvrtc.getSupportedArchs()) if nvrtc.nvrtc is not None else 0


def test_target_is_the_device_cubin_or_older_ptx() -> None:
    """A known architecture gets its own cubin; an unknown newer one PTX of the newest known;
    one older than every known is refused."""
    assert nvrtc.target(NEWEST) == (f"sm_{NEWEST}", True)
    assert nvrtc.target(NEWEST + 1) == (f"compute_{NEWEST}", False)
    with pytest.raises(CompileError, match="supports no architecture"):
        nvrtc.target(10)


def test_subnormals_are_kept(tmp_path: Path) -> None:
    """The PTX of a comparison and a product has no flush-to-zero modifier (CuPy's RawModule
    compiles the same source with -ftz=true: ``setp.neu.ftz.f32`` and ``mul.ftz.f32``)."""
    ptx = nvrtc.compile_image(SOURCE, NEWEST + 1, "probe", DiskCache(tmp_path)).decode()
    assert "setp.neu.f32" in ptx and "mul.f32" in ptx
    assert ".ftz" not in ptx


def test_images_come_from_the_disk_cache(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A second compile of the same source and architecture reads the cached image, written
    with its digest; another architecture compiles again."""
    disk = DiskCache(tmp_path)
    first = nvrtc.compile_image(SOURCE, NEWEST, "probe", disk)
    assert first[:4] == b"\x7fELF"  # a cubin is an ELF image
    assert len(list(tmp_path.glob("*.cubin"))) == 1 and len(list(tmp_path.glob("*.sha256"))) == 1
    assert not list(tmp_path.glob("*.tmp"))

    def refuse(*args: object) -> bytes:
        raise AssertionError("NVRTC ran on a cache hit")

    monkeypatch.setattr(nvrtc, "_compile", refuse)
    assert nvrtc.compile_image(SOURCE, NEWEST, "probe", disk) == first
    with pytest.raises(AssertionError, match="cache hit"):
        nvrtc.compile_image(SOURCE, NEWEST + 1, "probe", disk)


def test_a_corrupt_entry_is_rebuilt(tmp_path: Path) -> None:
    """A truncated cached image fails its digest: warned, compiled again, and replaced."""
    disk = DiskCache(tmp_path)
    image = nvrtc.compile_image(SOURCE, NEWEST, "probe", disk)
    entry = next(tmp_path.glob("*.cubin"))
    entry.write_bytes(image[:100])
    with pytest.warns(RuntimeWarning, match="corrupt"):
        assert nvrtc.compile_image(SOURCE, NEWEST, "probe", disk) == image
    assert entry.read_bytes() == image


def test_cuda_headers_are_found(tmp_path: Path) -> None:
    """Kernels include CUDA's half and bfloat16 headers (the prelude of every generated
    kernel): NVRTC finds them where CuPy does."""
    source = ("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
              'extern "C" __global__ void bc_kernel(__half *x, __nv_bfloat16 *y) {\n'
              "    x[0] = __float2half(1.0f); y[0] = __float2bfloat16_rn(2.0f);\n}")
    assert nvrtc.compile_image(source, NEWEST, "halves", DiskCache(tmp_path))[:4] == b"\x7fELF"


def test_errors_carry_the_compiler_log(tmp_path: Path) -> None:
    """A source NVRTC rejects raises CompileError naming the kernel, with NVRTC's log, and
    leaves nothing in the cache."""
    bad = SOURCE.replace("0.5f;", "0.5f + undefined_name;")
    with pytest.raises(CompileError, match="undefined_name") as info:
        nvrtc.compile_image(bad, NEWEST, "bad_kernel", DiskCache(tmp_path))
    assert "bad_kernel" in str(info.value)
    assert not list(tmp_path.iterdir())
