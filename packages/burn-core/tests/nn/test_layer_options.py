"""torch layer options against torch, forward and backward: BatchNorm running-stat options,
Embedding padding_idx, convolution padding modes; and dtype errors naming the layer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import burn
from burn import nn
from burn.errors import DTypeError, ShapeError, ValueRangeError

torch.set_num_threads(1)
DEV = burn.Device("numpy").autodiff()
RNG = np.random.default_rng(11)


def _randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _close(ours: burn.Tensor, ref: torch.Tensor, atol: float = 1e-5) -> None:
    assert ours.shape == tuple(ref.shape)
    assert ours.dtype == burn.float32
    np.testing.assert_allclose(ours.to_numpy(), ref.detach().numpy(), rtol=1e-4, atol=atol)


def _run_both(module: nn.Module, ref: torch.nn.Module, a: np.ndarray) -> None:
    """Load torch's state, then forward, input and param gradients must agree."""
    module.to(DEV)
    assert module.load_torch_state_dict(ref.state_dict()).ok
    x, tx = burn.tensor(a, device=DEV).require_grad(), torch.tensor(a, requires_grad=True)
    out, tout = module(x), ref(tx)
    _close(out, tout)
    cot = _randn(*out.shape)
    grads = (out * burn.tensor(cot, device=DEV)).sum().backward()
    (tout * torch.tensor(cot)).sum().backward()
    _close(x.grad(grads), tx.grad, atol=1e-4)
    tparams = dict(ref.named_parameters())
    for name, p in module.named_parameters():
        got = p.grad(grads).to_numpy()
        want = tparams[name].grad.numpy()
        np.testing.assert_allclose(got.T if got.shape != want.shape else got, want,
                                   rtol=1e-4, atol=1e-4, err_msg=name)


# --- BatchNorm ---
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm_without_running_stats(train: bool) -> None:
    layer, ref = nn.BatchNorm(3, track_running_stats=False), torch.nn.BatchNorm2d(
        3, track_running_stats=False)
    assert [k for k, _ in layer.named_tensors()] == list(ref.state_dict())
    layer.train(train)
    ref.train(train)
    _run_both(layer, ref, _randn(2, 3, 4, 4) * 2 + 1)  # batch statistics in eval too


def test_batch_norm_cumulative_average() -> None:
    layer, ref = nn.BatchNorm(3, momentum=None), torch.nn.BatchNorm1d(3, momentum=None)
    assert [k for k, _ in layer.named_tensors()] == list(ref.state_dict())
    layer.to(DEV)
    for step in range(4):
        a = _randn(5, 3) * (step + 1) + step
        _close(layer(burn.tensor(a, device=DEV)), ref(torch.tensor(a)))
        for name in ("running_mean", "running_var"):
            _close(getattr(layer, name), getattr(ref, name))
    assert layer.num_batches_tracked.item() == ref.num_batches_tracked.item() == 4
    assert layer.num_batches_tracked.dtype == burn.int64
    layer.eval()
    ref.eval()
    _run_both(layer, ref, _randn(6, 3))


# --- Embedding ---
@pytest.mark.parametrize("padding_idx", [2, -1])
def test_embedding_padding_idx(padding_idx: int) -> None:
    layer = nn.Embedding(5, 3, device=DEV, padding_idx=padding_idx)
    ref = torch.nn.Embedding(5, 3, padding_idx=padding_idx)
    assert layer.padding_idx == ref.padding_idx
    np.testing.assert_array_equal(layer.weight.to_numpy()[ref.padding_idx], np.zeros(3))
    with torch.no_grad():
        ref.weight[ref.padding_idx] = 1.5  # a non-zero padding row is still returned as is
    layer.load_torch_state_dict(ref.state_dict())
    idx = np.array([[0, ref.padding_idx, 4], [ref.padding_idx, 1, 1]])
    out, tout = layer(burn.tensor(idx, device=DEV)), ref(torch.tensor(idx))
    _close(out, tout)
    cot = _randn(*out.shape)
    grads = (out * burn.tensor(cot, device=DEV)).sum().backward()
    (tout * torch.tensor(cot)).sum().backward()
    _close(layer.weight.grad(grads), ref.weight.grad)
    assert not ref.weight.grad[ref.padding_idx].any()
    with pytest.raises(ValueRangeError, match="padding_idx"):
        nn.Embedding(5, 3, padding_idx=5)
    assert nn.EmbeddingConfig(4, 2, padding_idx=0).init().padding_idx == 0


# --- convolution padding modes ---
CONVS = [(nn.Conv1d, torch.nn.Conv1d, (2, 3, 7)), (nn.Conv2d, torch.nn.Conv2d, (2, 3, 6, 5)),
         (nn.Conv3d, torch.nn.Conv3d, (1, 3, 4, 5, 4))]


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "zeros"])
@pytest.mark.parametrize("cls, tcls, shape", CONVS)
@pytest.mark.parametrize("kw", [{"padding": 2}, {"padding": "same", "dilation": 2},
                                {"padding": (1, 2, 3), "stride": 2}])
def test_conv_padding_modes(mode: str, cls: type, tcls: type, shape: tuple[int, ...],
                            kw: dict[str, Any]) -> None:
    n = len(shape) - 2
    kw = {k: (v[:n] if isinstance(v, tuple) else v) for k, v in kw.items()}
    torch.manual_seed(0)
    ref = tcls(3, 4, 3, padding_mode=mode, **kw)
    _run_both(cls(3, 4, 3, padding_mode=mode, **kw), ref, _randn(*shape))


def test_conv_padding_mode_unbatched_and_errors() -> None:
    torch.manual_seed(1)
    ref = torch.nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular")
    _run_both(nn.Conv2d(2, 2, 3, padding=1, padding_mode="circular"), ref, _randn(2, 4, 4))
    with pytest.raises(ValueRangeError, match="padding_mode"):
        nn.Conv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(ValueError):
        torch.nn.Conv2d(2, 2, 3, padding_mode="mirror")
    for cls, tcls in ((nn.ConvTranspose1d, torch.nn.ConvTranspose1d),
                      (nn.ConvTranspose2d, torch.nn.ConvTranspose2d),
                      (nn.ConvTranspose3d, torch.nn.ConvTranspose3d)):
        with pytest.raises(ValueRangeError, match="zeros"):
            cls(2, 2, 3, padding_mode="reflect")
        with pytest.raises(ValueError):
            tcls(2, 2, 3, padding_mode="reflect")
        assert cls(2, 2, 3, padding_mode="zeros").padding_mode == "zeros"
    x = burn.tensor(_randn(1, 2, 3))
    with pytest.raises(ShapeError, match="reflect padding must be smaller"):
        nn.Conv1d(2, 2, 3, padding=3, padding_mode="reflect")(x)
    with pytest.raises(RuntimeError):
        torch.nn.Conv1d(2, 2, 3, padding=3, padding_mode="reflect")(torch.zeros(1, 2, 3))
    with pytest.raises(ShapeError, match="circular"):
        nn.Conv1d(2, 2, 3, padding=4, padding_mode="circular")(x)
    assert nn.Conv2dConfig(2, 2, 3, padding_mode="replicate").init().padding_mode == "replicate"


# --- dtype errors ---
F64 = burn.float64


@pytest.mark.parametrize("layer, shape", [
    (lambda: nn.Linear(3, 2), (2, 3)), (lambda: nn.Conv1d(3, 2, 1), (1, 3, 4)),
    (lambda: nn.Conv2d(3, 2, 1), (1, 3, 4, 4)), (lambda: nn.ConvTranspose2d(3, 2, 1),
                                                 (1, 3, 4, 4)),
    (lambda: nn.Lstm(3, 2), (1, 4, 3)), (lambda: nn.Gru(3, 2, num_layers=2), (1, 4, 3)),
    (lambda: nn.Rnn(3, 2), (1, 4, 3)), (lambda: nn.BiLstm(3, 2), (1, 4, 3)),
    (lambda: nn.BatchNorm(3), (2, 3)), (lambda: nn.LayerNorm(3), (2, 3)),
    (lambda: nn.GroupNorm(1, 3), (2, 3, 4)), (lambda: nn.InstanceNorm(3, affine=True), (2, 3, 4)),
    (lambda: nn.RmsNorm(3), (2, 3)),
])
def test_float64_input_to_float32_layer_is_refused(layer: Any, shape: tuple[int, ...]) -> None:
    module = layer()
    name = type(module).__name__
    with pytest.raises(DTypeError, match=rf"{name}: expected a float32 input.*input=burn.float64"
                       r".*layer=burn.float32"):
        module(burn.zeros(shape, dtype=F64))


def test_embedding_float_indices_name_the_layer() -> None:
    with pytest.raises(DTypeError, match="Embedding: indices must be an int tensor"):
        nn.Embedding(4, 2)(burn.zeros(3, dtype=F64))


def test_attention_names_itself_for_float64_inputs() -> None:
    x = burn.zeros((1, 2, 4), dtype=F64)
    with pytest.raises(DTypeError, match="MultiHeadAttention: expected a float32 input"):
        nn.MultiHeadAttention(4, 2)(x, x, x)
