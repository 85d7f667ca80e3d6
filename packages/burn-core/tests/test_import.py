"""`import burn` stays light: numpy, heavy and optional modules load on first use only.

Checked by module presence in fresh interpreters (`-X importtime` lists every module a statement
imports), never by timing; burn-bench's `startup` suite measures the time.
"""

import json
import os
import subprocess
import sys
from importlib.metadata import version

#: Modules `import burn` must not load (bf16 support, plotting, the live display, and the
#: subpackages reached through `burn.<name>` on first access).
HEAVY = ("ml_dtypes", "matplotlib", "rich", "burn.nn", "burn.record", "burn.train",
         "burn.data", "burn.optim")
#: Nor these: numpy and the tensor frontend (loaded with the first tensor), install metadata
#: (`__version__`, entry points), the functional ops and autodiff, the op table, the option
#: records, the backend protocol, registry and backends, and the optional dependencies (cube
#: runtimes, weight files, images, BLAS thread control).
NOT_AT_IMPORT = (*HEAVY, "numpy", "burn.frontend", "burn.frontend.tensor", "importlib.metadata",
                 "burn.functional", "burn.autodiff", "burn.ir",
                 "burn.backend.options", "burn.backend.protocol", "burn.backend.registry",
                 "burn.backends.numpy",
                 "burn.profiler", "burn_cube", "wgpu", "cupy", "safetensors", "PIL",
                 "threadpoolctl", "numpy.random")
#: What the first op on the default (NumPy) device must still not load: it needs the backend,
#: not the op table, module-op kernels, random numbers or autodiff.
NOT_AT_FIRST_OP = ("ml_dtypes", "importlib.metadata", "burn.nn", "burn.functional",
                   "burn.autodiff", "burn.ir", "burn.backend.options",
                   "burn.backends.numpy.module", "burn.backends.cube", "burn_cube", "wgpu",
                   "safetensors", "PIL", "threadpoolctl", "numpy.random")


def _imported(code: str, site: bool = True) -> set[str]:
    """Modules that `code` imports in a fresh interpreter, beyond what start-up itself imports
    (site and .pth files): those `python -X importtime` lists, plus those left in sys.modules
    (importtime does not list a module imported through `importlib.import_module`). Without
    `site`, the interpreter runs with `-S` and this `sys.path`, so that modules the
    environment's .pth files import at start-up count as well."""
    flags, env = ["-X", "importtime"], None
    if not site:
        flags.append("-S")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}

    def modules(snippet: str) -> set[str]:
        probe = f"{snippet}\nimport sys\nprint('\\n'.join(sys.modules))"
        run = subprocess.run([sys.executable, *flags, "-c", probe], env=env,
                             capture_output=True, text=True, check=True)
        timed = {line.rsplit("|", 1)[1].strip() for line in run.stderr.splitlines()
                 if line.startswith("import time:") and line.count("|") == 2}
        return timed | set(run.stdout.split())

    return modules(code) - modules("pass")


def _loaded_after(code: str) -> dict[str, bool]:
    """Run `code` in a fresh interpreter; which of HEAVY are in sys.modules afterwards."""
    report = f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_import_burn_loads_no_heavy_module():
    imported = _imported("import burn")
    assert {"burn", "burn.dtype", "burn.device"} <= imported  # the probe sees burn
    assert sorted(m for m in NOT_AT_IMPORT if m in imported) == []


def test_import_burn_without_site_loads_only_the_standard_library_core():
    # without the .pth files (which may import typing and more at start-up), `import burn`
    # loads no typing, re or numpy: its own modules, enum and threading
    imported = _imported("import burn", site=False)
    assert {"burn", "burn.dtype", "burn.device", "burn.errors", "enum"} <= imported
    unwanted = ("numpy", "typing", "re", "dataclasses", "inspect", "burn.frontend")
    assert sorted(m for m in unwanted if m in imported) == []


def test_dtypes_and_devices_work_without_numpy():
    # DType and Device behave as before (equality, names, sizes, pickling, parsing, the
    # default device) without loading numpy or a backend
    imported = _imported(
        "import burn, pickle\n"
        "assert burn.float32 == burn.DType('float32') and burn.float32 != burn.float64\n"
        "assert burn.bfloat16.itemsize == 2 and burn.int64.itemsize == 8\n"
        "assert burn.bool_.kind is burn.Kind.BOOL and burn.float16.is_float\n"
        "assert pickle.loads(pickle.dumps(burn.bfloat16)) is burn.bfloat16\n"
        "d = burn.Device('numpy+autodiff')\n"
        "assert pickle.loads(pickle.dumps(d)) == d and d.inner() == burn.Device('numpy')\n"
        "assert burn.default_device() == burn.Device('numpy')\n"
        "try:\n    burn.Device('nope')\nexcept burn.errors.DeviceError:\n    pass\n"
        "else:\n    raise AssertionError('unknown backend accepted')")
    assert {"burn.backend.registry", "pickle"} <= imported
    assert sorted(m for m in ("numpy", "burn.frontend", "burn.backends.numpy")
                  if m in imported) == []


def test_numpy_equivalents_load_numpy_on_first_lookup():
    import numpy as np

    loaded = _imported("import burn\nimport sys\nassert 'numpy' not in sys.modules\n"
                       "assert burn.float32.numpy.name == 'float32'")
    assert "numpy" in loaded and "ml_dtypes" not in loaded
    from burn import dtype

    assert [d.numpy for d in dtype.DType if d is not dtype.bfloat16] == [
        np.dtype(n) for n in ("float64", "float32", "float16", "int64", "int32", "int8",
                              "uint8", "bool")]
    assert [d.itemsize for d in dtype.DType] == [d.numpy.itemsize for d in dtype.DType]
    assert all(dtype.FROM_NUMPY_MAP[d.numpy] is d for d in dtype.DType)


def test_first_tensor_op_loads_no_heavy_module():
    imported = _imported("import burn\nburn.tensor([1.0, 2.0]) + 1")
    assert {"numpy", "burn.frontend.tensor", "burn.backend.registry",
            "burn.backends.numpy"} <= imported
    assert sorted(m for m in NOT_AT_FIRST_OP if m in imported) == []


def test_subpackages_load_no_optional_dependency():
    # bfloat16 support, system metrics, plotting, images, cube runtimes, torch, and the op table
    # (with the Autodiff decorator) load when used
    imported = _imported("import burn.nn, burn.optim, burn.record, burn.train, burn.data")
    assert {"burn.nn", "burn.optim", "burn.record", "burn.train", "burn.data"} <= imported
    optional = ("ml_dtypes", "psutil", "matplotlib", "rich", "PIL", "burn_cube", "wgpu",
                "torch", "importlib.metadata", "burn.ir", "burn.autodiff.backend")
    assert sorted(m for m in optional if m in imported) == []


def test_probe_sees_a_lazy_import():
    imported = _imported("import burn\nburn.nn\nburn.no_grad\nburn.__version__")
    assert {"burn.nn", "burn.functional", "burn.autodiff", "importlib.metadata"} <= imported


def test_public_names_and_version_resolve():
    import burn
    from burn import frontend

    # the lazy frontend names are the frontend's public names, and resolve to them
    assert sorted(burn._FRONTEND) == sorted(frontend.__all__)
    assert all(getattr(burn, n) is getattr(frontend, n) for n in frontend.__all__)

    probe = ("import burn\nfrom burn import *\n"
             "missing = [n for n in burn.__all__ if n not in dir(burn)]\n"
             "assert not missing, missing\nprint(burn.__version__)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == [version("burn-core")]
    assert burn.__version__ == version("burn-core")
    assert "__version__" in dir(burn) and "functional" in dir(burn)


def test_every_dtype_is_reached_by_the_name_its_repr_prints():
    """`repr(dtype)` is `burn.<name>`, and that name is an attribute of burn (torch's
    `torch.bool` as `burn.bool`, besides numpy's `burn.bool_`); a star import keeps the
    builtin `bool`."""
    import burn

    for dtype in burn.DType:
        assert repr(dtype).startswith("burn.")
        assert getattr(burn, repr(dtype).removeprefix("burn.")) is dtype
    assert burn.bool is burn.bool_ is burn.DType.bool
    namespace: dict[str, object] = {}
    exec("from burn import *", namespace)
    assert namespace.get("bool", bool) is bool


def test_lazy_names_resolve_on_access():
    loaded = _loaded_after(
        "import burn\nfrom burn import nn\nassert burn.nn.Linear is nn.Linear\n"
        "assert burn.train.Learner.__name__ == 'Learner'\nassert callable(burn.no_grad)")
    assert loaded["burn.nn"] and loaded["burn.train"]


def test_fusion_and_autodiff_are_reached_from_burn_before_any_device_uses_them():
    # `burn.fusion.stats()` before any fusion device is made (nothing imported burn.fusion)
    out = subprocess.run([sys.executable, "-c", (
        "import burn, sys\nassert 'burn.fusion' not in sys.modules\n"
        "s = burn.fusion.stats()\nprint(type(s).__name__, s.streams, s.kernels_launched)\n"
        "print(burn.autodiff.no_grad is burn.no_grad)")], capture_output=True, text=True,
        check=True)
    assert out.stdout.split() == ["FusionStats", "0", "0", "True"]


def test_float_tensors_do_not_load_ml_dtypes():
    loaded = _loaded_after(
        "import burn\nt = burn.tensor([1.5, 2.0]) * burn.ones(2, dtype=burn.float16)\n"
        "assert t.dtype is burn.float32 and t.to_numpy().dtype.name == 'float32'")
    assert not loaded["ml_dtypes"] and not loaded["burn.nn"]


def test_bfloat16_loads_ml_dtypes_when_used():
    loaded = _loaded_after(
        "import burn\nt = burn.tensor([1.5, 2.0], dtype=burn.bfloat16)\n"
        "assert t.dtype is burn.bfloat16 and t.to_numpy().dtype.name == 'bfloat16'")
    assert loaded["ml_dtypes"]


def test_unknown_attribute_raises_attribute_error():
    import burn

    try:
        burn.no_such_name  # noqa: B018
    except AttributeError as err:
        assert "no_such_name" in str(err)
    else:
        raise AssertionError("burn.no_such_name did not raise")
