"""Behaviour of the autodiff engine: graph recording, backward, freeing, grad mode, checkpoints."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import numpy as np
import pytest

from burn import Device, float32
from burn import tensor as burn_tensor
from burn.autodiff import (
    Autodiff,
    AutodiffTensor,
    BalancedCheckpointing,
    Gradients,
    NoCheckpointing,
    is_grad_enabled,
    no_grad,
    saved_tensor_count,
)
from burn.backends.numpy import NumpyBackend
from burn.errors import AutodiffError

DEV = Device("numpy").autodiff()


@pytest.fixture
def ad() -> Autodiff:
    return DEV.backend


@pytest.fixture
def no_gc() -> Iterator[None]:
    """Frees must come from reference counting alone (no cycles)."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def leaf(ad: Autodiff, values: object) -> AutodiffTensor:
    return ad.float_require_grad(ad.float_from_data(np.asarray(values, np.float32), DEV))


def const(ad: Autodiff, values: object) -> AutodiffTensor:
    return ad.float_from_data(np.asarray(values, np.float32), DEV)


def data(ad: Autodiff, prim: object) -> np.ndarray:
    return ad.inner.float_into_data(prim)


def test_device_builds_the_decorator(ad: Autodiff) -> None:
    assert isinstance(ad, Autodiff) and ad.is_autodiff and ad.name == "autodiff(numpy)"
    assert isinstance(ad.inner, NumpyBackend)
    x = const(ad, [1.0])
    assert ad.device_of(x) == DEV and ad.shape(x) == (1,) and ad.dtype(x) == float32


def test_backward_seeds_ones_and_keeps_leaf_grads_only(ad: Autodiff) -> None:
    x = leaf(ad, [[1.0, 2.0], [3.0, 4.0]])
    y = ad.float_mul_scalar(x, 3.0)
    z = ad.float_add(y, const(ad, [1.0, 1.0]))  # non-scalar root: seeded with ones
    grads = ad.backward(z)
    assert isinstance(grads, Gradients) and len(grads) == 1
    g = ad.grad(x, grads)
    assert ad.inner.dtype(g) == float32
    np.testing.assert_array_equal(data(ad, g), np.full((2, 2), 3.0))
    assert ad.grad(y, grads) is None and ad.grad(const(ad, [1.0]), grads) is None


def test_gradients_take_a_burn_tensor_as_tensor_grad_does() -> None:
    """`grads.get(x)` / `grads.remove(x)` of a burn Tensor give `x.grad(grads)` /
    `x.grad_remove(grads)` (tensors of the inner device; torch's x.grad of (x * x).sum());
    what is no tensor, or a tensor off an autodiff device, raises AutodiffError."""
    import torch

    values = np.array([0.0, -1.5, 2.0], np.float32)
    x = burn_tensor(values, device=DEV).require_grad()
    grads = (x * x).sum().backward()
    tx = torch.from_numpy(values.copy()).requires_grad_()
    (tx * tx).sum().backward()
    assert tx.grad is not None
    got = grads.get(x)
    assert got.shape == tuple(tx.grad.shape) and got.dtype == float32
    assert got.device == DEV.inner()
    np.testing.assert_array_equal(got.numpy(), tx.grad.numpy())
    np.testing.assert_array_equal(grads.remove(x).numpy(), tx.grad.numpy())
    assert grads.get(x) is None and x.grad(grads) is None
    for bad in (3, burn_tensor(values, device="numpy")):
        with pytest.raises(AutodiffError, match="^grad: "):
            grads.get(bad)


def test_accumulates_over_paths(ad: Autodiff) -> None:
    x = leaf(ad, [1.0, -2.0, 3.0])
    y = ad.float_sum(ad.float_add(ad.float_mul(x, x), ad.float_mul_scalar(x, 2.0)))
    np.testing.assert_allclose(data(ad, ad.grad(x, ad.backward(y))), [4.0, -2.0, 8.0])


def test_grad_remove(ad: Autodiff) -> None:
    x = leaf(ad, [1.0])
    grads = ad.backward(ad.float_mul_scalar(x, 2.0))
    assert ad.grad_remove(x, grads) is not None
    assert ad.grad(x, grads) is None and ad.grad_remove(x, grads) is None


def test_untracked_backward_raises(ad: Autodiff) -> None:
    with pytest.raises(AutodiffError, match=r"backward.*shape=\(2, 3\)"):
        ad.backward(const(ad, np.ones((2, 3))))


def test_second_backward_raises_graph_freed(ad: Autodiff) -> None:
    x = leaf(ad, [1.0, 2.0])
    h = ad.float_exp(x)
    loss = ad.float_sum(h)
    ad.backward(loss)
    with pytest.raises(AutodiffError, match="graph already freed"):
        ad.backward(loss)
    with pytest.raises(AutodiffError, match="graph already freed"):
        ad.backward(ad.float_sum(ad.float_mul_scalar(h, 2.0)))  # reuses the freed h


def test_leaves_outlive_graphs(ad: Autodiff) -> None:
    w = leaf(ad, [2.0])
    for step in range(3):
        grads = ad.backward(ad.float_mul_scalar(w, float(step)))
        np.testing.assert_array_equal(data(ad, ad.grad(w, grads)), [float(step)])


def test_require_grad_semantics(ad: Autodiff) -> None:
    c = const(ad, [1.0])
    assert not ad.float_is_require_grad(c)
    x = ad.float_require_grad(c)
    assert ad.float_is_require_grad(x) and not ad.float_is_require_grad(c)
    assert ad.float_require_grad(x) is x
    y = ad.float_exp(x)
    assert not ad.float_is_require_grad(y)  # as Burn: only leaves require grad
    with pytest.raises(AutodiffError, match="require_grad"):
        ad.float_require_grad(y)
    d = ad.detach_values(y)
    assert d.node is None and d.primitive is y.primitive
    assert ad.float_is_require_grad(ad.float_require_grad(d))


def test_detach_stops_gradient(ad: Autodiff) -> None:
    x = leaf(ad, [3.0])
    y = ad.float_mul(x, ad.detach_values(ad.float_mul(x, x)))  # x * const(x^2)
    np.testing.assert_allclose(data(ad, ad.grad(x, ad.backward(y))), [9.0])


def test_untracked_inputs_record_nothing(ad: Autodiff) -> None:
    a, b = const(ad, [1.0]), const(ad, [2.0])
    assert ad.float_add(a, b).node is None and ad.float_exp(a).node is None
    x = leaf(ad, [1.0])
    assert ad.float_add(x, b).node is not None


def test_no_grad_context_decorator_and_threads(ad: Autodiff) -> None:
    x = leaf(ad, [1.0])
    assert is_grad_enabled()
    seen: list[bool] = []
    with no_grad():
        assert not is_grad_enabled()
        assert ad.float_mul(x, x).node is None and ad.float_exp(x).node is None
        t = threading.Thread(target=lambda: seen.append(is_grad_enabled()))
        t.start()
        t.join()
        with no_grad():
            pass
        assert not is_grad_enabled()
    assert is_grad_enabled() and seen == [True]

    @no_grad()
    def f() -> AutodiffTensor:
        return ad.float_add(x, x)

    assert f().node is None and is_grad_enabled()


def test_int_and_bool_ops_delegate(ad: Autodiff) -> None:
    i = ad.int_from_data(np.array([1, 2, 3]), DEV)
    assert type(i) is np.ndarray  # the inner primitive, unchanged
    f = ad.int_into_float(ad.int_add_scalar(i, 1), float32)
    assert isinstance(f, AutodiffTensor) and f.node is None
    np.testing.assert_array_equal(ad.float_into_data(f), [2.0, 3.0, 4.0])
    x = leaf(ad, [1.0, 5.0, 3.0])
    assert data(ad, ad.float_greater_elem(x, 2.0)).tolist() == [False, True, True]
    assert ad.int_into_data(ad.float_argmax(x, 0)).tolist() == [1]
    m = ad.bool_full((3,), True, DEV)
    assert isinstance(ad.bool_into_float(m, float32), AutodiffTensor)


def test_graph_freed_after_backward_and_no_cycles(ad: Autodiff, no_gc: None) -> None:
    x = leaf(ad, np.ones(1000))
    h = ad.float_mul_scalar(x, 2.0)
    saved = weakref.ref(h.primitive)  # sin saves its input
    loss = ad.float_sum(ad.float_sin(h))
    del h
    assert saved() is not None
    ad.backward(loss)
    assert saved() is None  # dropped with the graph while `loss` is alive

    h = ad.float_mul_scalar(x, 2.0)
    saved = weakref.ref(h.primitive)
    loss = ad.float_sum(ad.float_sin(h))
    del h, loss  # no backward: dropping the result drops the graph
    assert saved() is None


class _SpyBackend(NumpyBackend):
    """Records weak references to the results of float_mul / float_mul_scalar while spying."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[weakref.ref] | None = None

    def float_mul(self, lhs: object, rhs: object) -> object:
        return self._spy(super().float_mul(lhs, rhs))

    def float_mul_scalar(self, lhs: object, rhs: float) -> object:
        return self._spy(super().float_mul_scalar(lhs, rhs))

    def _spy(self, out: object) -> object:
        if self.refs is not None:
            self.refs.append(weakref.ref(out))
        return out


def test_intermediate_grads_are_freed(no_gc: None) -> None:
    spy = _SpyBackend()
    ad = Autodiff(spy)
    x = leaf(ad, np.ones(8))
    y = ad.float_sum(ad.float_exp(ad.float_mul_scalar(x, 2.0)))
    spy.refs = []
    grads = ad.backward(y)
    refs = spy.refs
    assert len(refs) == 2  # exp's grad (g * out), then mul_scalar's (the leaf grad)
    assert refs[1]() is ad.grad(x, grads)
    assert refs[0]() is None  # the intermediate grad was freed once consumed


def _chain(ad: Autodiff) -> tuple[AutodiffTensor, AutodiffTensor, AutodiffTensor]:
    rng = np.random.default_rng(1)
    x = leaf(ad, rng.normal(size=(4, 5)))
    w = leaf(ad, rng.normal(size=(5, 3)))
    h = ad.float_tanh(ad.float_exp(ad.float_sin(ad.float_mul_scalar(x, 0.5))))
    h = ad.float_matmul(h, w)
    loss = ad.float_sum(ad.float_mul(ad.float_sqrt(ad.float_add_scalar(ad.float_abs(h), 1.0)), h))
    return x, w, loss


def test_balanced_checkpointing_same_grads_fewer_saved() -> None:
    results = {}
    for strategy in (NoCheckpointing(), BalancedCheckpointing()):
        ad = Autodiff(NumpyBackend(), strategy)
        x, w, loss = _chain(ad)
        count = saved_tensor_count(loss)
        grads = ad.backward(loss)
        results[type(strategy).__name__] = (count, data(ad, ad.grad(x, grads)),
                                            data(ad, ad.grad(w, grads)))
        assert saved_tensor_count(loss) == 0  # all freed by backward
    (n_none, gx0, gw0), (n_bal, gx1, gw1) = results.values()
    np.testing.assert_allclose(gx0, gx1, rtol=1e-6)
    np.testing.assert_allclose(gw0, gw1, rtol=1e-6)
    assert n_bal < n_none, (n_bal, n_none)


def test_balanced_recompute_shared_and_deep(no_gc: None) -> None:
    ad = Autodiff(NumpyBackend(), BalancedCheckpointing())
    x = leaf(ad, [0.3, -0.2])
    h = x
    for _ in range(3000):  # deep chain: recomputation must not recurse
        h = ad.float_add_scalar(h, 0.0)
    e = ad.float_exp(h)
    loss = ad.float_sum(ad.float_add(ad.float_mul(e, e), ad.float_sin(e)))
    ex = np.exp(np.array([0.3, -0.2], np.float32))
    expected = 2 * ex * ex + np.cos(ex) * ex
    np.testing.assert_allclose(data(ad, ad.grad(x, ad.backward(loss))), expected, rtol=1e-6)


@pytest.mark.parametrize("spec", ["numpy+autodiff", "cpu+autodiff", "cpu+fusion+autodiff"])
@pytest.mark.parametrize("order", ["built order", "reversed"])
def test_balanced_graphs_sharing_a_leaf_each_keep_their_checkpoint(spec: str,
                                                                  order: str) -> None:
    """Graphs built on one leaf before any backward (micro-batches, a regularizer run on its
    own) each recompute from their own checkpoint of the leaf's value: the first backward no
    longer drops it for the others (AutodiffError: a saved tensor was neither kept nor
    recomputable), in either order; gradients as torch's."""
    import torch

    device = Device(spec)
    backend = device.backend
    kept = backend.checkpoint
    backend.checkpoint = BalancedCheckpointing()
    try:
        start = np.array([0.5, -1.0, 2.0], np.float32)
        w = burn_tensor(start, device=device).require_grad()
        losses = [(w * 2.0).exp().sum(), (w * 3.0).sin().sum()]
        tw = torch.tensor(start, requires_grad=True)
        wants = [torch.autograd.grad(loss, tw)[0].numpy()
                 for loss in ((tw * 2.0).exp().sum(), (tw * 3.0).sin().sum())]
        for k in ([0, 1] if order == "built order" else [1, 0]):
            got = w.grad(losses[k].backward())
            assert got.shape == wants[k].shape and got.dtype == float32
            np.testing.assert_allclose(got.numpy(), wants[k], rtol=1e-6)
    finally:
        backend.checkpoint = kept
