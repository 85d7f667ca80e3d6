"""`import burn` stays light: heavy and optional modules load on first use only."""

import json
import subprocess
import sys

#: Modules `import burn` must not load (bf16 support, plotting, the live display, and the
#: subpackages reached through `burn.<name>` on first access).
HEAVY = ("ml_dtypes", "matplotlib", "rich", "burn.nn", "burn.record", "burn.train",
         "burn.data", "burn.optim")


def _loaded_after(code: str) -> dict[str, bool]:
    """Run `code` in a fresh interpreter; which of HEAVY are in sys.modules afterwards."""
    report = f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))"
    probe = f"{code}\nimport json, sys\n{report}"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.splitlines()[-1])


def test_import_burn_loads_no_heavy_module():
    loaded = _loaded_after("import burn")
    assert sorted(loaded) == sorted(HEAVY)
    assert [m for m, present in loaded.items() if present] == []


def test_lazy_names_resolve_on_access():
    loaded = _loaded_after(
        "import burn\nfrom burn import nn\nassert burn.nn.Linear is nn.Linear\n"
        "assert burn.train.Learner.__name__ == 'Learner'\nassert callable(burn.no_grad)")
    assert loaded["burn.nn"] and loaded["burn.train"]


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
