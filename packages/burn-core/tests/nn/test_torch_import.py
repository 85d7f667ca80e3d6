"""torch state dicts (packed LSTM / GRU / RNN gates, MultiheadAttention, transformer layers)
loaded through `load_torch_state_dict`, then outputs and gradients compared with torch's.

Parameter gradients are compared by loading torch's gradients, named as its parameters, into a
second burn module through the same adapter: each burn param's gradient must equal the value
that lands on the same path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

import burn
from burn import nn
from burn.nn.torch_adapters import TorchLayersAdapter, load_torch_state_dict
from burn.record import RecordKeyError

torch.set_num_threads(1)
D = burn.Device("numpy").autodiff()
RTOL, ATOL = 1e-4, 3e-5


def _pair(*shape: int, seed: int) -> tuple[burn.Tensor, torch.Tensor]:
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return burn.tensor(a, device=D).require_grad(), torch.tensor(a, requires_grad=True)


def _close(ours: burn.Tensor, ref: torch.Tensor) -> None:
    assert ours.shape == tuple(ref.shape)
    assert ours.dtype == burn.float32
    np.testing.assert_allclose(ours.to_numpy(), ref.detach().numpy(), rtol=RTOL, atol=ATOL)


def _backward(ours: list[burn.Tensor], refs: list[torch.Tensor]) -> Any:
    rng = np.random.default_rng(7)
    loss_b: Any = 0.0
    loss_t: Any = 0.0
    for o, r in zip(ours, refs, strict=True):
        w = rng.standard_normal(o.shape).astype(np.float32)
        loss_b = (o * burn.tensor(w, device=D)).sum() + loss_b
        loss_t = (r * torch.tensor(w)).sum() + loss_t
    loss_t.backward()
    return loss_b.backward()


def _check_param_grads(module: nn.Module, twin: nn.Module, ref: torch.nn.Module,
                       grads: Any) -> None:
    """Load torch's grads into `twin` (same adapter), compare with `module`'s grads."""
    report = load_torch_state_dict(twin, {k: p.grad for k, p in ref.named_parameters()})
    assert report.ok
    theirs = dict(twin.named_parameters())
    for path, p in module.named_parameters():
        np.testing.assert_allclose(p.grad(grads).to_numpy(), theirs[path].to_numpy(),
                                   rtol=RTOL, atol=1e-4, err_msg=path)


RECURRENT = {  # kind: (burn class, torch class, n states)
    "rnn": (nn.Rnn, torch.nn.RNN, 1), "lstm": (nn.Lstm, torch.nn.LSTM, 2),
    "gru": (nn.Gru, torch.nn.GRU, 1),
}


@pytest.mark.parametrize("kind", list(RECURRENT))
@pytest.mark.parametrize("num_layers, bidirectional, batch_first",
                         [(2, False, True), (1, True, False), (3, True, True)])
def test_recurrent_layers_and_directions(kind: str, num_layers: int, bidirectional: bool,
                                         batch_first: bool) -> None:
    cls, tcls, n_states = RECURRENT[kind]
    torch.manual_seed(0)
    ref = tcls(3, 4, num_layers, batch_first=batch_first, bidirectional=bidirectional)
    make = lambda: cls(3, 4, batch_first=batch_first, device=D, num_layers=num_layers,  # noqa
                       bidirectional=bidirectional, dropout=0.3)
    module, twin = make(), make()
    module.eval()
    ref.eval()
    report = module.load_torch_state_dict(ref.state_dict())
    assert report.ok and len(report.loaded) == len(list(module.named_tensors()))
    dirs = 2 if bidirectional else 1
    x, x_t = _pair(*((2, 5, 3) if batch_first else (5, 2, 3)), seed=1)
    states = [_pair(num_layers * dirs, 2, 4, seed=2 + i) for i in range(n_states)]
    if n_states == 2:
        out, (h, c) = module(x, (states[0][0], states[1][0]))
        out_t, (h_t, c_t) = ref(x_t, (states[0][1], states[1][1]))
        finals, finals_t = [h, c], [h_t, c_t]
    else:
        out, h = module(x, states[0][0])
        out_t, h_t = ref(x_t, states[0][1])
        finals, finals_t = [h], [h_t]
    for ours, theirs in zip([out, *finals], [out_t, *finals_t], strict=True):
        _close(ours, theirs)
    grads = _backward([out, *finals], [out_t, *finals_t])
    _close(x.grad(grads), x_t.grad)
    for s, s_t in states:
        _close(s.grad(grads), s_t.grad)
    _check_param_grads(module, twin, ref, grads)


def test_inter_layer_dropout_in_training() -> None:
    """dropout=1 zeroes layer 0's output in training (deterministic in both libraries)."""
    torch.manual_seed(1)
    ref = torch.nn.LSTM(3, 4, 2, batch_first=True, dropout=1.0)
    module = nn.Lstm(3, 4, device=D, num_layers=2, dropout=1.0)
    module.load_torch_state_dict(ref.state_dict())
    x, x_t = _pair(2, 4, 3, seed=3)
    out, (h, _) = module(x)
    out_t, (h_t, _) = ref(x_t)
    _close(out, out_t)
    _close(h, h_t)
    module.eval()
    ref.eval()
    _close(module(x)[0], ref(x_t)[0])


def test_bilstm_and_config_options() -> None:
    torch.manual_seed(2)
    ref = torch.nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    module = nn.BiLstm(3, 4, device=D)
    assert load_torch_state_dict(module, ref.state_dict()).ok
    x, x_t = _pair(2, 5, 3, seed=4)
    _close(module(x)[0], ref(x_t)[0])
    gru = nn.GruConfig(3, 4, num_layers=2, bidirectional=True).init(D)
    assert gru.num_layers == 2 and gru.reverse is not None and len(gru.stacked) == 1
    assert "stacked.0.reverse.reset_gate.input_transform.weight" in dict(gru.named_parameters())
    with pytest.raises(burn.errors.ValueRangeError, match="num_layers"):
        nn.Lstm(3, 4, num_layers=0)


def _transformer_pair(decoder: bool, norm_first: bool) -> tuple[nn.Module, nn.Module,
                                                                  torch.nn.Module]:
    torch.manual_seed(3)
    kw: dict[str, Any] = {"dim_feedforward": 16, "dropout": 0.0, "activation": "gelu",
                          "batch_first": True, "norm_first": norm_first}
    layer = (torch.nn.TransformerDecoderLayer(8, 2, **kw) if decoder
             else torch.nn.TransformerEncoderLayer(8, 2, **kw))
    stack = torch.nn.TransformerDecoder if decoder else torch.nn.TransformerEncoder
    ref = stack(layer, 2, norm=torch.nn.LayerNorm(8))
    cls = nn.TransformerDecoder if decoder else nn.TransformerEncoder
    make = lambda: cls(8, 2, 16, 2, dropout=0.0, norm_first=norm_first, device=D,  # noqa
                       norm=True)
    return make(), make(), ref


@pytest.mark.parametrize("decoder", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_stacks_with_final_norm(decoder: bool, norm_first: bool) -> None:
    module, twin, ref = _transformer_pair(decoder, norm_first)
    state = ref.state_dict()
    assert any(k.endswith("in_proj_weight") for k in state) and "norm.weight" in state
    assert module.load_torch_state_dict(state).ok
    x, x_t = _pair(2, 5, 8, seed=5)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5).isinf()
    if decoder:
        mem, mem_t = _pair(2, 3, 8, seed=6)
        out = module(x, mem, target_mask_attn=burn.tensor(mask.numpy(), device=D))
        out_t = ref(x_t, mem_t, tgt_mask=mask)
    else:
        mem, mem_t = None, None
        out = module(x, mask_attn=burn.tensor(mask.numpy(), device=D))
        out_t = ref(x_t, mask=mask)
    _close(out, out_t)
    grads = _backward([out], [out_t])
    _close(x.grad(grads), x_t.grad)
    if mem is not None and mem_t is not None:
        _close(mem.grad(grads), mem_t.grad)
    _check_param_grads(module, twin, ref, grads)


def test_final_norm_in_autoregressive_path() -> None:
    module, _, ref = _transformer_pair(False, True)
    module.load_torch_state_dict(ref.state_dict())
    x, _ = _pair(1, 4, 8, seed=8)
    mask = burn.tensor(np.triu(np.ones((4, 4), bool), 1), device=D)
    cache = module.new_autoregressive_cache()
    steps = [module.forward_autoregressive(x[:, i:i + 1], cache) for i in range(4)]
    np.testing.assert_allclose(burn.cat(steps, dim=1).to_numpy(),
                               module(x, mask_attn=mask).to_numpy(), rtol=1e-4, atol=1e-5)


def test_multihead_attention_import() -> None:
    torch.manual_seed(4)
    ref = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    module = nn.MultiHeadAttention(8, 2, dropout=0.0, device=D)
    assert module.load_torch_state_dict(ref.state_dict()).ok
    q, q_t = _pair(2, 3, 8, seed=9)
    kv, kv_t = _pair(2, 4, 8, seed=10)
    out = module(q, kv, kv)
    out_t, w_t = ref(q_t, kv_t, kv_t, average_attn_weights=False)
    _close(out.context, out_t)
    _close(out.weights, w_t)


@pytest.mark.parametrize("suffix", [".safetensors", ".pt"])
def test_files_written_by_torch(tmp_path: Path, suffix: str) -> None:
    torch.manual_seed(5)
    ref = torch.nn.GRU(3, 4, 2, bidirectional=True, batch_first=True)
    path = tmp_path / f"gru{suffix}"
    if suffix == ".safetensors":
        save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(path))
    else:
        torch.save(ref.state_dict(), path)
    module = nn.Gru(3, 4, device=D, num_layers=2, bidirectional=True)
    assert load_torch_state_dict(module, path).ok
    x, x_t = _pair(2, 3, 3, seed=11)
    _close(module(x)[0], ref(x_t)[0])
    other = nn.Gru(3, 4, device=D, num_layers=2, bidirectional=True)
    burn.record.load(other, path, adapter=TorchLayersAdapter()) if suffix == ".pt" else \
        load_torch_state_dict(other, path)
    _close(other(x)[0], ref(x_t)[0])


def test_unsupported_torch_options_fail_strict() -> None:
    ref = torch.nn.LSTM(3, 4, proj_size=2)  # weight_hr_l0 has no burn counterpart
    with pytest.raises(RecordKeyError, match="load_torch_state_dict"):
        nn.Lstm(3, 4).load_torch_state_dict(ref.state_dict())
    report = nn.Lstm(3, 4).load_torch_state_dict(ref.state_dict(), strict=False)
    assert report.unexpected == ["weight_hr_l0"]
