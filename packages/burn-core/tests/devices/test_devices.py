"""Devices: the spec grammar, the backend and decorator registry (entry points too), and
available_backends."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import burn
from burn.backend import registry
from burn.backends.numpy import NumpyBackend
from burn.errors import DeviceError


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Registrations made by a test are forgotten after it."""
    targets = {group: dict(names) for group, names in registry._targets.items()}
    yield
    registry._targets.clear()
    registry._targets.update(targets)
    registry._loaded.clear()


@pytest.mark.parametrize("spec, name, index, decorators", [
    ("numpy", "numpy", 0, ()),
    ("numpy:0", "numpy", 0, ()),
    ("numpy+autodiff", "numpy", 0, ("autodiff",)),
    (" numpy + profile + autodiff ", "numpy", 0, ("profile", "autodiff")),
])
def test_spec_grammar(spec, name, index, decorators):
    d = burn.Device(spec)
    assert (d.name, d.index, d.decorators) == (name, index, decorators)
    assert d.is_autodiff == (decorators[-1:] == ("autodiff",))
    assert burn.Device(str(d)) == d and hash(burn.Device(str(d))) == hash(d)


def test_devices_pickle_and_copy():
    import copy
    import pickle

    d = burn.Device("numpy+profile+autodiff")
    for other in (pickle.loads(pickle.dumps(d)), copy.deepcopy(d)):
        assert other == d and other.is_autodiff and other.decorators == d.decorators


def test_one_device_object_per_spec_string():
    """Tensors made from the same spec string share one Device object (the frontend's hot
    paths compare devices by identity first); equal Device objects made apart still mix."""
    from burn.device import as_device

    assert as_device("numpy+autodiff") is as_device("numpy+autodiff")
    a = burn.tensor(np.arange(6.0, dtype=np.float32).reshape(2, 3), device="numpy")
    b = burn.tensor(np.ones(3, np.float32), device="numpy")
    assert a.device is b.device
    c = burn.tensor(np.ones(3, np.float32), device=burn.Device("numpy"))
    for out in (a + b, a + c, a @ c.reshape((3, 1))):
        assert out.device == burn.Device("numpy")
    np.testing.assert_array_equal((a + c).to_numpy(), a.to_numpy() + 1.0)


def test_builders_compose_decorators():
    d = burn.Device("numpy")
    assert str(d.autodiff()) == "numpy+autodiff" and d.autodiff().autodiff() == d.autodiff()
    assert str(d.profile().autodiff()) == "numpy+profile+autodiff"
    assert str(d.autodiff().profile()) == "numpy+profile+autodiff"  # autodiff stays outermost
    assert d.profile().autodiff().inner() == d.profile() and d.inner() == d
    assert d.profile().autodiff().base == d


@pytest.mark.parametrize("spec, words", [
    ("tpu", "unknown backend"),
    ("numpy+fusion9", "unknown decorator"),
    ("numpy:x", "device index must be a non-negative int"),
    ("numpy:", "device index must be a non-negative int"),
    ("numpy+autodiff+profile", "autodiff must be the outermost"),
    ("numpy+profile+profile", "a decorator appears twice"),
    (42, "a device spec is a string"),
    (None, "a device spec is a string"),
])
def test_bad_specs_raise_device_errors(spec, words):
    with pytest.raises(DeviceError, match=words):
        burn.Device(spec)


def test_unknown_backend_lists_the_available_ones():
    with pytest.raises(DeviceError, match=r"available=\[.*'numpy'"):
        burn.Device("tpu")


def test_a_device_argument_of_the_wrong_type_is_a_device_error():
    with pytest.raises(DeviceError, match="Device"):
        burn.zeros(2, device=42)  # type: ignore[arg-type]


def test_single_device_backend_refuses_index_one():
    with pytest.raises(DeviceError, match="single device"):
        burn.zeros(2, device="numpy:1")


def test_available_backends_lists_numpy():
    infos = burn.available_backends()
    numpy = next(i for i in infos if i.name == "numpy")
    assert numpy.available and numpy.reason == "" and str(numpy) == "numpy"


class Unavailable(NumpyBackend):
    @classmethod
    def unavailable_reason(cls) -> str | None:
        return "no such driver here"


def test_unavailable_backend_says_why(clean_registry):
    burn.register_backend("faraway", Unavailable)
    info = next(i for i in burn.available_backends() if i.name == "faraway")
    assert not info.available and info.reason == "no such driver here"
    assert "unavailable: no such driver here" in str(info)
    with pytest.raises(DeviceError, match="not available on this machine"):
        burn.zeros(2, device="faraway")


class Incomplete(burn.backend.protocol.Backend):  # type: ignore[attr-defined]
    def seed(self, seed: int) -> None:
        pass


def test_incomplete_backend_is_refused_at_registration_naming_the_ops(clean_registry):
    with pytest.raises(DeviceError, match=r"lacks ops of the op table.*float_add"):
        burn.register_backend("broken", Incomplete)


def test_registered_backend_runs_tensors(clean_registry):
    class Renamed(NumpyBackend):
        name = "renamed"

        def device_of(self, x: object) -> burn.Device:
            return burn.Device("renamed")

    burn.register_backend("renamed", Renamed)
    x = burn.tensor([1.0, 2.0], device="renamed+autodiff").require_grad()
    (x * x).sum().backward()
    assert x.device == burn.Device("renamed+autodiff")
    assert isinstance(burn.Device("renamed").backend, Renamed)


def _write_distribution(root: Path, group: str, name: str, target: str, module: str,
                        source: str) -> None:
    dist = root / "burnext-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: burnext\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n")
    (root / f"{module}.py").write_text(textwrap.dedent(source))


def test_entry_points_add_backends_and_decorators(tmp_path, clean_registry, monkeypatch):
    """A package installed later adds a device through its entry points alone."""
    _write_distribution(tmp_path, "burn.decorators", "counting", "burnext_counting:Counting",
                        "burnext_counting", """
        from burn.backend.decorator import Decorator

        class Counting(Decorator):
            decorator_name = "counting"
            calls = 0

            def handle(self, op, args):
                type(self).calls += 1
                return self.forward(op, args)
        """)
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._targets.clear()
    registry._loaded.clear()
    assert "counting" in registry.decorator_names()
    x = burn.tensor(np.ones((2, 3), np.float32), device="numpy+counting")
    y = (x + x).sum()
    assert y.item() == 12.0 and y.device == burn.Device("numpy+counting")
    assert sys.modules["burnext_counting"].Counting.calls >= 3


def test_broken_entry_point_is_reported_by_available_backends(tmp_path, clean_registry,
                                                              monkeypatch):
    _write_distribution(tmp_path, "burn.backends", "ghost", "burnext_ghost:Ghost",
                        "burnext_ghost", "import a_module_that_does_not_exist\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._targets.clear()
    info = next(i for i in burn.available_backends() if i.name == "ghost")
    assert not info.available and "cannot import" in info.reason


def test_device_arg_is_an_argparse_type():
    import argparse

    from burn.device import device_arg

    parser = argparse.ArgumentParser()
    parser.add_argument("--device", type=device_arg)
    parsed = parser.parse_args(["--device", "numpy+autodiff"]).device
    assert parsed == burn.Device("numpy").autodiff()
    with pytest.raises(argparse.ArgumentTypeError, match="unknown backend.*numpy"):
        device_arg("tpu")
