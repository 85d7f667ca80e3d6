"""Layers against torch: forward and backward (input and param grads) with torch's weights."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
import torch

import burn
from burn import nn
from burn.errors import ShapeError

torch.set_num_threads(1)
DEV = burn.Device("numpy").autodiff()
RNG = np.random.default_rng(0)


def load_torch(module: nn.Module, tmodule: torch.nn.Module) -> None:
    """Copy `tmodule`'s state_dict into `module` by dotted path (Linear weights transposed:
    burn stores them [d_input, d_output])."""
    linear = {f"{p}.weight" if p else "weight" for p, m in module.named_modules()
              if isinstance(m, nn.Linear)}
    tensors = dict(module.named_tensors())
    for name, value in tmodule.state_dict().items():
        if name.endswith("num_batches_tracked"):
            continue
        arr = value.detach().numpy()
        tensors[name].set_(burn.tensor(arr.T if name in linear else arr, device=DEV))


def run_both(module: nn.Module, tmodule: torch.nn.Module, x_np: np.ndarray, train: bool = True,
             atol: float = 1e-5, load: bool = True) -> None:
    """Forward and backward of both on `x_np` (float inputs get gradients) must agree."""
    module.to(DEV)
    if load:
        load_torch(module, tmodule)
    module.train(train)
    tmodule.train(train)
    is_float = x_np.dtype.kind == "f"
    x = burn.tensor(x_np, device=DEV)
    if is_float:
        x.require_grad()
    tx = torch.tensor(x_np, requires_grad=is_float)
    out, tout = module(x), tmodule(tx)
    assert out.shape == tuple(tout.shape)
    assert out.dtype == burn.float32
    np.testing.assert_allclose(out.to_numpy(), tout.detach().numpy(), rtol=1e-4, atol=atol)
    cot = RNG.standard_normal(out.shape).astype(np.float32)
    grads = (out * burn.tensor(cot, device=DEV)).sum().backward()
    (tout * torch.tensor(cot)).sum().backward()
    if is_float:
        np.testing.assert_allclose(x.grad(grads).to_numpy(), tx.grad.numpy(), rtol=1e-4,
                                   atol=atol)
    tparams = dict(tmodule.named_parameters())
    linear = {f"{p}.weight" if p else "weight" for p, m in module.named_modules()
              if isinstance(m, nn.Linear)}
    for name, p in module.named_parameters():
        expected = tparams[name].grad.numpy()
        got = p.grad(grads).to_numpy()
        np.testing.assert_allclose(got.T if name in linear else got, expected, rtol=1e-4,
                                   atol=atol, err_msg=name)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# --- linear, embedding ---
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(2, 5, 4), (3, 4), (4,)])
def test_linear(bias: bool, shape: tuple[int, ...]) -> None:
    layer = nn.Linear(4, 3, bias=bias)
    assert layer.weight.shape == (4, 3)
    run_both(layer, torch.nn.Linear(4, 3, bias=bias), randn(*shape))


def test_linear_config_builds_same_layer() -> None:
    layer = nn.LinearConfig(4, 3, bias=False).init(DEV)
    assert layer.bias is None and layer.weight.device == DEV
    assert repr(layer) == "Linear(d_input=4, d_output=3, bias=False)"


def test_embedding() -> None:
    idx = np.array([[0, 3, 1], [4, 4, 2]], dtype=np.int64)
    run_both(nn.Embedding(5, 6), torch.nn.Embedding(5, 6), idx)


# --- convolutions ---
CONVS = [
    (nn.Conv1d, torch.nn.Conv1d, dict(stride=2, padding=1), (2, 4, 9)),
    (nn.Conv1d, torch.nn.Conv1d, dict(padding="same", dilation=2, groups=2), (4, 9)),
    (nn.Conv2d, torch.nn.Conv2d, dict(stride=(2, 1), padding=1, groups=2), (2, 4, 7, 6)),
    (nn.Conv2d, torch.nn.Conv2d, dict(bias=False, dilation=2), (1, 4, 7, 7)),
    (nn.Conv3d, torch.nn.Conv3d, dict(padding=1), (1, 4, 4, 5, 3)),
    (nn.ConvTranspose1d, torch.nn.ConvTranspose1d, dict(stride=2, output_padding=1), (2, 4, 5)),
    (nn.ConvTranspose2d, torch.nn.ConvTranspose2d, dict(stride=2, padding=1, groups=2),
     (2, 4, 4, 3)),
    (nn.ConvTranspose2d, torch.nn.ConvTranspose2d, dict(dilation=2, bias=False), (4, 3, 3)),
    (nn.ConvTranspose3d, torch.nn.ConvTranspose3d, dict(stride=(1, 2, 1)), (1, 4, 3, 3, 2)),
]


@pytest.mark.parametrize("cls,tcls,kw,shape", CONVS,
                         ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CONVS)])
def test_conv(cls: type, tcls: type, kw: dict, shape: tuple[int, ...]) -> None:
    layer = cls(4, 6, 3, **kw)
    tlayer = tcls(4, 6, 3, **kw)
    assert layer.weight.shape == tuple(tlayer.weight.shape)
    run_both(layer, tlayer, randn(*shape), atol=1e-4)


@pytest.mark.parametrize("cls,tcls", [(nn.Conv2d, torch.nn.Conv2d),
                                      (nn.ConvTranspose2d, torch.nn.ConvTranspose2d)])
def test_conv_default_init_bounds_as_torch(cls: type, tcls: type) -> None:
    burn.seed(1)
    layer, tlayer = cls(8, 6, 3, groups=2), tcls(8, 6, 3, groups=2)
    fan_in = torch.nn.init._calculate_fan_in_and_fan_out(tlayer.weight)[0]
    bound = 1 / math.sqrt(fan_in)
    for p in (layer.weight, layer.bias):
        values = p.to_numpy()
        assert np.abs(values).max() <= bound and np.abs(values).max() > 0.8 * bound


def test_conv_config() -> None:
    layer = nn.Conv2dConfig(4, 6, (3, 1), stride=2).init()
    assert isinstance(layer, nn.Conv2d) and layer.weight.shape == (6, 4, 3, 1)
    t = nn.ConvTranspose3dConfig(2, 4, 2, groups=2).init()
    assert isinstance(t, nn.ConvTranspose3d) and t.weight.shape == (2, 2, 2, 2, 2)


# --- normalisation ---
@pytest.mark.parametrize("shape,tcls", [((6, 3), torch.nn.BatchNorm1d),
                                        ((4, 3, 5), torch.nn.BatchNorm1d),
                                        ((2, 3, 4, 5), torch.nn.BatchNorm2d)])
@pytest.mark.parametrize("train", [True, False])
def test_batch_norm(shape: tuple[int, ...], tcls: type, train: bool) -> None:
    layer, tlayer = nn.BatchNorm(3, momentum=0.3), tcls(3, momentum=0.3)
    with torch.no_grad():  # non-trivial params and running stats
        tlayer.weight.uniform_(0.5, 1.5)
        tlayer.bias.uniform_(-0.5, 0.5)
        tlayer.running_mean.uniform_(-1, 1)
        tlayer.running_var.uniform_(0.5, 2)
    run_both(layer, tlayer, randn(*shape) * 2 + 1, train=train)
    np.testing.assert_allclose(layer.running_mean.to_numpy(), tlayer.running_mean.numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.running_var.to_numpy(), tlayer.running_var.numpy(),
                               rtol=1e-5, atol=1e-6)
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]


def test_batch_norm_buffers_not_trained() -> None:
    layer = nn.BatchNormConfig(3).init(DEV)
    names = [n for n, _ in layer.named_tensors()]
    assert names == ["weight", "bias", "running_mean", "running_var"]
    assert all(isinstance(b, nn.Buffer) for b in (layer.running_mean, layer.running_var))
    assert layer.num_params() == 6


@pytest.mark.parametrize("shape,affine,bias", [((3, 5), (5,), True), ((2, 3, 4, 5), (4, 5), True),
                                               ((2, 3, 4), (4,), False)])
def test_layer_norm(shape: tuple[int, ...], affine: tuple[int, ...], bias: bool) -> None:
    tlayer = torch.nn.LayerNorm(affine, bias=bias)
    with torch.no_grad():
        tlayer.weight.normal_()
    run_both(nn.LayerNorm(affine, bias=bias), tlayer, randn(*shape))


def test_group_norm() -> None:
    tlayer = torch.nn.GroupNorm(2, 4)
    with torch.no_grad():
        tlayer.weight.normal_()
        tlayer.bias.normal_()
    run_both(nn.GroupNorm(2, 4), tlayer, randn(3, 4, 5, 2))


@pytest.mark.parametrize("shape,tcls", [((2, 3, 6), torch.nn.InstanceNorm1d),
                                        ((2, 3, 4, 4), torch.nn.InstanceNorm2d)])
@pytest.mark.parametrize("affine", [False, True])
def test_instance_norm(shape: tuple[int, ...], tcls: type, affine: bool) -> None:
    tlayer = tcls(3, affine=affine)
    if affine:
        with torch.no_grad():
            tlayer.weight.normal_()
    run_both(nn.InstanceNorm(3, affine=affine), tlayer, randn(*shape))


def test_rms_norm() -> None:
    tlayer = torch.nn.RMSNorm(6, eps=1e-5)
    with torch.no_grad():
        tlayer.weight.normal_()
    run_both(nn.RmsNorm(6), tlayer, randn(2, 3, 6))


# --- dropout ---
def test_dropout_train_eval_and_seed() -> None:
    layer = nn.Dropout(0.25)
    x = burn.ones(200, 50, device=DEV).require_grad()
    burn.seed(7, DEV)
    out = layer(x)
    burn.seed(7, DEV)
    again = layer(x)
    values = out.to_numpy()
    assert set(np.unique(values)) <= {0.0, np.float32(1 / 0.75)}
    assert abs((values == 0).mean() - 0.25) < 0.02
    np.testing.assert_array_equal(values, again.to_numpy())
    grads = out.sum().backward()
    np.testing.assert_allclose(x.grad(grads).to_numpy(), values)  # grad = mask / (1 - p)
    assert layer.eval()(x) is x
    assert nn.Dropout(1.0)(x).to_numpy().max() == 0.0
    assert nn.DropoutConfig(0.1).init().prob == 0.1


# --- pooling and resizing ---
POOLS = [
    (nn.AvgPool1d(3, 2, 1), torch.nn.AvgPool1d(3, 2, 1), (2, 3, 8)),
    (nn.AvgPool2d(2, count_include_pad=False, padding=1), torch.nn.AvgPool2d(
        2, count_include_pad=False, padding=1), (2, 3, 5, 5)),
    (nn.MaxPool1d(2, ceil_mode=True), torch.nn.MaxPool1d(2, ceil_mode=True), (3, 7)),
    (nn.MaxPool2d(3, 2, 1, dilation=1), torch.nn.MaxPool2d(3, 2, 1), (2, 3, 6, 7)),
    (nn.AdaptiveAvgPool1d(3), torch.nn.AdaptiveAvgPool1d(3), (2, 3, 7)),
    (nn.AdaptiveAvgPool2d((2, None)), torch.nn.AdaptiveAvgPool2d((2, None)), (2, 3, 5, 4)),
    (nn.Interpolate(size=(6, 5), mode="bilinear"), torch.nn.Upsample(size=(6, 5),
                                                                      mode="bilinear"),
     (2, 3, 3, 4)),
    (nn.Interpolate(scale_factor=2), torch.nn.Upsample(scale_factor=2), (1, 2, 3, 3)),
    (nn.PixelShuffle(2), torch.nn.PixelShuffle(2), (2, 8, 3, 2)),
    (nn.PixelShuffle(3), torch.nn.PixelShuffle(3), (9, 2, 2)),
    (nn.Identity(), torch.nn.Identity(), (2, 3)),
]


@pytest.mark.parametrize("layer,tlayer,shape", POOLS,
                         ids=[f"{type(p[0]).__name__}-{i}" for i, p in enumerate(POOLS)])
def test_stateless_layers(layer: nn.Module, tlayer: torch.nn.Module,
                          shape: tuple[int, ...]) -> None:
    run_both(layer, tlayer, randn(*shape), load=False)


def test_pool_configs() -> None:
    assert isinstance(nn.MaxPool2dConfig(2).init(), nn.MaxPool2d)
    assert isinstance(nn.AvgPool1dConfig(2).init(), nn.AvgPool1d)
    assert isinstance(nn.AdaptiveAvgPool2dConfig((1, 1)).init(), nn.AdaptiveAvgPool2d)
    assert isinstance(nn.InterpolateConfig(size=4).init(), nn.Interpolate)
    assert nn.PixelShuffleConfig(2).init().upscale_factor == 2
    assert "kernel_size=2" in repr(nn.MaxPool1d(2))


# --- activations ---
ACTS: list[tuple[nn.Module, Callable[[], torch.nn.Module]]] = [
    (nn.Relu(), torch.nn.ReLU), (nn.Gelu(), torch.nn.GELU),
    (nn.Gelu("tanh"), lambda: torch.nn.GELU("tanh")), (nn.Silu(), torch.nn.SiLU),
    (nn.LeakyRelu(0.2), lambda: torch.nn.LeakyReLU(0.2)), (nn.Sigmoid(), torch.nn.Sigmoid),
    (nn.Tanh(), torch.nn.Tanh), (nn.Softplus(2.0, 3.0), lambda: torch.nn.Softplus(2.0, 3.0)),
    (nn.Mish(), torch.nn.Mish), (nn.Elu(0.5), lambda: torch.nn.ELU(0.5)),
    (nn.Selu(), torch.nn.SELU), (nn.HardSigmoid(1 / 6), torch.nn.Hardsigmoid),
    (nn.PRelu(), torch.nn.PReLU), (nn.PRelu(3, 0.1), lambda: torch.nn.PReLU(3, 0.1)),
]


@pytest.mark.parametrize("layer,tlayer", ACTS,
                         ids=[f"{type(a[0]).__name__}-{i}" for i, a in enumerate(ACTS)])
def test_activations(layer: nn.Module, tlayer: Callable[[], torch.nn.Module]) -> None:
    run_both(layer, tlayer(), randn(2, 3, 4) * 3)


class _TorchSwiGlu(torch.nn.Module):
    def __init__(self, d_input: int, d_output: int, bias: bool) -> None:
        super().__init__()
        self.linear_inner = torch.nn.Linear(d_input, d_output, bias)
        self.linear_outer = torch.nn.Linear(d_input, d_output, bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(self.linear_inner(x)) * self.linear_outer(x)


@pytest.mark.parametrize("bias", [False, True])
def test_swiglu(bias: bool) -> None:
    run_both(nn.SwiGlu(4, 5, bias), _TorchSwiGlu(4, 5, bias), randn(2, 3, 4))


def test_activation_configs() -> None:
    assert nn.LeakyReluConfig(0.3).init().negative_slope == 0.3
    prelu = nn.PReluConfig(4, alpha=0.5).init(DEV)
    np.testing.assert_allclose(prelu.weight.to_numpy(), [0.5] * 4)
    swiglu = nn.SwiGluConfig(4, 6).init()
    assert swiglu.linear_inner.weight.shape == (4, 6) and swiglu.linear_outer.bias is None
    assert isinstance(nn.GeluConfig("tanh").init(), nn.Gelu)
    assert isinstance(nn.IdentityConfig().init(), nn.Identity)


# --- bad inputs name the layer ---
BAD = [
    (nn.Linear(4, 3), (2, 5), "Linear"),
    (nn.Conv1d(4, 2, 3), (2, 3, 8), "Conv1d"),
    (nn.Conv2d(4, 2, 3), (4, 8), "Conv2d"),
    (nn.ConvTranspose2d(4, 2, 3), (1, 5, 4, 4), "ConvTranspose2d"),
    (nn.BatchNorm(3), (4, 2, 5), "BatchNorm"),
    (nn.BatchNorm(3), (3,), "BatchNorm"),
    (nn.LayerNorm((4, 5)), (2, 5, 4), "LayerNorm"),
    (nn.GroupNorm(2, 4), (2, 6, 3), "GroupNorm"),
    (nn.InstanceNorm(3), (2, 4, 5), "InstanceNorm"),
    (nn.RmsNorm(6), (2, 5), "RmsNorm"),
    (nn.MaxPool2d(2), (4, 4), "MaxPool2d"),
    (nn.AvgPool1d(2), (2, 3, 4, 4), "AvgPool1d"),
    (nn.AdaptiveAvgPool2d(2), (4,), "AdaptiveAvgPool2d"),
    (nn.Interpolate(size=4), (2, 3, 4), "Interpolate"),
    (nn.PixelShuffle(2), (2, 6, 3, 3), "PixelShuffle"),
    (nn.PRelu(3), (2, 4, 5), "PRelu"),
    (nn.SwiGlu(4, 3), (2, 3), "SwiGlu"),
]


@pytest.mark.parametrize("layer,shape,name", BAD, ids=[b[2] + f"-{i}" for i, b in enumerate(BAD)])
def test_bad_input_shape_names_layer(layer: nn.Module, shape: tuple[int, ...],
                                     name: str) -> None:
    with pytest.raises(ShapeError, match=rf"^{name}: expected input") as info:
        layer(burn.zeros(shape))
    assert str(shape) in str(info.value)


@pytest.mark.parametrize("device", ["numpy", "cpu", "cpu+fusion", "wgpu"])
@pytest.mark.parametrize("length", [6, 700, 40000])  # composite / rows kernel / streamed (GPU)
def test_layer_norm_of_constant_and_offset_rows(device: str, length: int) -> None:
    """A constant row normalises to exactly 0 (the output is the bias, as torch's); rows far
    from 0 keep their digits (the mean is the first element plus the mean of the
    differences): no farther from the float64 result than torch's float32 one."""
    import burn.functional as F

    rng = np.random.default_rng(length)
    rows = 64 if length < 1000 else 3
    const = np.repeat(rng.standard_normal((rows, 1)).astype(np.float32) * 7, length, 1)
    bias = rng.standard_normal(length).astype(np.float32)
    weight = rng.standard_normal(length).astype(np.float32)
    got = F.layer_norm(burn.tensor(const, device=device), (length,),
                       burn.tensor(weight, device=device), burn.tensor(bias, device=device))
    want = torch.nn.functional.layer_norm(torch.from_numpy(const), (length,),
                                          torch.from_numpy(weight), torch.from_numpy(bias))
    assert got.shape == tuple(want.shape) and got.dtype == burn.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(got.numpy(), np.broadcast_to(bias, const.shape))
    offset = rng.standard_normal((rows, length)).astype(np.float32) + 1000
    exact = offset.astype(np.float64)
    exact = (exact - exact.mean(1, keepdims=True)) / np.sqrt(exact.var(1, keepdims=True) + 1e-5)
    ours = F.layer_norm(burn.tensor(offset, device=device), (length,)).numpy()
    theirs = torch.nn.functional.layer_norm(torch.from_numpy(offset), (length,)).numpy()
    assert np.abs(ours - exact).max() <= np.abs(theirs - exact).max() + 1e-6
