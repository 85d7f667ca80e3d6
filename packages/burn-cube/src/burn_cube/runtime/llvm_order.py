"""Load order of the two LLVMs a process can hold: triton's and a Vulkan driver's.

Mesa's llvmpipe (wgpu's adapter on machines without a GPU) loads the system's libLLVM, and
triton (PyPI's torch pulls it in; `torch.compile` and `torchvision.ops` import it) carries its
own LLVM in `libtriton.so`. When llvmpipe loads first, importing triton later registers LLVM's
command-line options a second time and the process dies with a segmentation fault; the other
way round both work. So before the wgpu runtime touches a Vulkan driver, triton's library is
loaded (not imported: no Python module runs) when triton is installed.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from functools import cache
from pathlib import Path


@cache
def load_triton_llvm_first() -> None:
    """dlopen triton's `libtriton.so` the way Python's import will (RTLD_NOW, local), once,
    when triton is installed and not imported yet; a failure to load is left to triton's own
    import to report."""
    if "triton" in sys.modules:
        return
    spec = importlib.util.find_spec("triton")
    if spec is None or not spec.submodule_search_locations:
        return
    for folder in spec.submodule_search_locations:
        for library in sorted(Path(folder, "_C").glob("libtriton*.so")):
            try:
                ctypes.CDLL(str(library), mode=os.RTLD_NOW)
            except OSError:
                continue
            return
