"""Sequence layers (rnn, attention, transformer, encoding) against torch, forward and backward.

Weights go from a torch module's parameters into the burn module through `Pair`s: (burn Param,
torch Parameter, layout transform). The same pairs load the weights and compare the gradients.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import burn
from burn.errors import DTypeError, ShapeError, ValueRangeError
from burn.nn import Module, Param
from burn.nn.attention import (
    MhaCache,
    MultiHeadAttention,
    MultiHeadAttentionConfig,
    generate_autoregressive_mask,
)
from burn.nn.encoding import (
    PositionalEncoding,
    PositionalEncodingConfig,
    RotaryEncoding,
    RotaryEncodingConfig,
)
from burn.nn.rnn import BiLstm, Gru, GruConfig, Lstm, LstmConfig, Rnn, RnnConfig
from burn.nn.transformer import (
    PositionWiseFeedForward,
    TransformerDecoder,
    TransformerDecoderConfig,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderConfig,
    TransformerEncoderLayer,
)

torch.set_num_threads(1)
D = burn.Device("numpy").autodiff()
RTOL, ATOL = 1e-4, 2e-5

Pair = tuple[Param, torch.Tensor, Callable[[np.ndarray], np.ndarray]]


# --- torch -> burn weight mapping ---
def _linear(lin: Module, weight: torch.Tensor, bias: torch.Tensor | None,
            rows: slice = slice(None)) -> list[Pair]:
    """A burn Linear ([in, out] weight) from rows of a torch [out, in] weight and its bias."""
    pairs: list[Pair] = [(lin.weight, weight, lambda a: a[rows].T)]
    if bias is not None:
        pairs.append((lin.bias, bias, lambda a: a[rows]))
    return pairs


def _rnn_pairs(module: Module, ref: torch.nn.RNNBase, gates: tuple[str, ...],
               suffix: str = "") -> list[Pair]:
    """torch packs the gates' rows (LSTM i, f, g, o; GRU r, z, n) in weight_ih / weight_hh."""
    p, h = dict(ref.named_parameters()), ref.hidden_size
    pairs: list[Pair] = []
    for g, name in enumerate(gates):
        rows, gate = slice(g * h, (g + 1) * h), getattr(module, name)
        pairs += _linear(gate.input_transform, p[f"weight_ih_l0{suffix}"],
                         p.get(f"bias_ih_l0{suffix}"), rows)
        pairs += _linear(gate.hidden_transform, p[f"weight_hh_l0{suffix}"],
                         p.get(f"bias_hh_l0{suffix}"), rows)
    return pairs


def _mha_pairs(module: MultiHeadAttention, ref: torch.nn.MultiheadAttention) -> list[Pair]:
    """torch packs the q, k, v projections in in_proj_weight / in_proj_bias."""
    d = ref.embed_dim
    pairs: list[Pair] = []
    for i, lin in enumerate((module.query, module.key, module.value)):
        pairs += _linear(lin, ref.in_proj_weight, ref.in_proj_bias, slice(i * d, (i + 1) * d))
    return pairs + _linear(module.output, ref.out_proj.weight, ref.out_proj.bias)


def _norm(norm: Module, ref: torch.nn.LayerNorm) -> list[Pair]:
    return [(norm.weight, ref.weight, lambda a: a), (norm.bias, ref.bias, lambda a: a)]


def _layer_pairs(module: TransformerEncoderLayer | TransformerDecoderLayer,
                 ref: torch.nn.TransformerEncoderLayer | torch.nn.TransformerDecoderLayer
                 ) -> list[Pair]:
    pairs = (_mha_pairs(module.self_attn, ref.self_attn)
             + _linear(module.pwff.linear_inner, ref.linear1.weight, ref.linear1.bias)
             + _linear(module.pwff.linear_outer, ref.linear2.weight, ref.linear2.bias)
             + _norm(module.norm_1, ref.norm1) + _norm(module.norm_2, ref.norm2))
    if isinstance(module, TransformerDecoderLayer):
        pairs += _mha_pairs(module.cross_attn, ref.multihead_attn) + _norm(module.norm_3,
                                                                            ref.norm3)
    return pairs


def _load(module: Module, pairs: list[Pair]) -> None:
    assert len(pairs) == len(module.parameters())  # every param mapped
    for param, ref, layout in pairs:
        param.set_(burn.tensor(np.ascontiguousarray(layout(ref.detach().numpy())), device=D))


def _check_grads(pairs: list[Pair], grads: object) -> None:
    for param, ref, layout in pairs:
        np.testing.assert_allclose(param.grad(grads).to_numpy(), layout(ref.grad.numpy()),
                                   rtol=RTOL, atol=1e-4)


# --- helpers ---
def _pair(*shape: int, seed: int) -> tuple[burn.Tensor, torch.Tensor]:
    """The same random values as a burn gradient leaf and a torch leaf."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return burn.tensor(a, device=D).require_grad(), torch.tensor(a, requires_grad=True)


def _bool(a: np.ndarray) -> tuple[burn.Tensor, torch.Tensor]:
    return burn.tensor(a, device=D), torch.tensor(a)


def _close(ours: burn.Tensor, ref: torch.Tensor) -> None:
    """Shape and dtype first, then values."""
    assert ours.shape == tuple(ref.shape)
    assert ours.dtype == burn.float32
    np.testing.assert_allclose(ours.to_numpy(), ref.detach().numpy(), rtol=RTOL, atol=ATOL)


def _backward(ours: list[burn.Tensor], refs: list[torch.Tensor]) -> object:
    """Backward of sum(out * w) over the outputs, w random, in both libraries."""
    rng = np.random.default_rng(99)
    loss_b, loss_t = None, None
    for o, r in zip(ours, refs, strict=True):
        w = rng.standard_normal(o.shape).astype(np.float32)
        term_b, term_t = (o * burn.tensor(w, device=D)).sum(), (r * torch.tensor(w)).sum()
        loss_b = term_b if loss_b is None else loss_b + term_b
        loss_t = term_t if loss_t is None else loss_t + term_t
    loss_t.backward()
    return loss_b.backward()


# --- recurrent layers ---
RNNS = {  # name: (burn module, torch module, gate names, bidirectional)
    "rnn_tanh": (lambda bf, bias: Rnn(3, 4, bias, "tanh", bf, D),
                 lambda bf, bias: torch.nn.RNN(3, 4, 1, "tanh", bias, bf), ("gate",)),
    "rnn_relu": (lambda bf, bias: Rnn(3, 4, bias, "relu", bf, D),
                 lambda bf, bias: torch.nn.RNN(3, 4, 1, "relu", bias, bf), ("gate",)),
    "lstm": (lambda bf, bias: Lstm(3, 4, bias, bf, D),
             lambda bf, bias: torch.nn.LSTM(3, 4, 1, bias, bf),
             ("input_gate", "forget_gate", "cell_gate", "output_gate")),
    "gru": (lambda bf, bias: Gru(3, 4, bias, bf, D),
            lambda bf, bias: torch.nn.GRU(3, 4, 1, bias, bf),
            ("reset_gate", "update_gate", "new_gate")),
    "bilstm": (lambda bf, bias: BiLstm(3, 4, bias, bf, D),
               lambda bf, bias: torch.nn.LSTM(3, 4, 1, bias, bf, bidirectional=True),
               ("input_gate", "forget_gate", "cell_gate", "output_gate")),
}


@pytest.mark.parametrize("kind", list(RNNS))
@pytest.mark.parametrize("batch_first, with_state, bias",
                         [(True, False, True), (False, True, True), (True, True, False)])
def test_recurrent_matches_torch(kind: str, batch_first: bool, with_state: bool,
                                 bias: bool) -> None:
    make, make_ref, gates = RNNS[kind]
    torch.manual_seed(0)
    module, ref = make(batch_first, bias), make_ref(batch_first, bias)
    if kind == "bilstm":
        pairs = (_rnn_pairs(module.forward_lstm, ref, gates)
                 + _rnn_pairs(module.reverse_lstm, ref, gates, "_reverse"))
    else:
        pairs = _rnn_pairs(module, ref, gates)
    _load(module, pairs)
    batch, seq, dirs = 2, 5, 2 if kind == "bilstm" else 1
    x, x_t = _pair(*((batch, seq, 3) if batch_first else (seq, batch, 3)), seed=1)
    n_states = 2 if kind in ("lstm", "bilstm") else 1
    states = [_pair(dirs, batch, 4, seed=2 + i) for i in range(n_states)] if with_state else []
    if n_states == 2:
        state = tuple(s for s, _ in states) if with_state else None
        state_t = tuple(s for _, s in states) if with_state else None
        out, (h, c) = module(x, state)
        out_t, (h_t, c_t) = ref(x_t, state_t)
        finals, finals_t = [h, c], [h_t, c_t]
    else:
        out, h = module(x, states[0][0] if with_state else None)
        out_t, h_t = ref(x_t, states[0][1] if with_state else None)
        finals, finals_t = [h], [h_t]
    _close(out, out_t)
    for ours, theirs in zip(finals, finals_t, strict=True):
        _close(ours, theirs)
    grads = _backward([out, *finals], [out_t, *finals_t])
    _close(x.grad(grads), x_t.grad)
    for s, s_t in states:
        _close(s.grad(grads), s_t.grad)
    _check_grads(pairs, grads)


def test_recurrent_configs_and_repr() -> None:
    rnn = RnnConfig(3, 4, nonlinearity="relu").init(D)
    assert isinstance(rnn, Rnn) and rnn.nonlinearity == "relu"
    assert "d_hidden=4" in repr(rnn) and "nonlinearity='relu'" in repr(rnn)
    lstm = LstmConfig(3, 4, bias=False, batch_first=False).init(D)
    assert not lstm.batch_first and lstm.num_params() == 4 * (3 * 4 + 4 * 4)
    config = GruConfig(3, 5)
    assert GruConfig.from_dict(config.to_dict()) == config
    assert sorted(n for n, _ in config.init(D).named_parameters())[:2] == [
        "new_gate.hidden_transform.bias", "new_gate.hidden_transform.weight"]


# --- multi-head attention ---
def _mha(d: int = 8, heads: int = 2, bias: bool = True
         ) -> tuple[MultiHeadAttention, torch.nn.MultiheadAttention, list[Pair]]:
    torch.manual_seed(0)
    module = MultiHeadAttention(d, heads, dropout=0.0, bias=bias, device=D)
    ref = torch.nn.MultiheadAttention(d, heads, dropout=0.0, bias=bias, batch_first=True)
    with torch.no_grad():  # torch zeroes in_proj_bias; random biases test the mapping better
        for p in ref.parameters():
            p.uniform_(-0.5, 0.5)
    pairs = _mha_pairs(module, ref)
    _load(module, pairs)
    return module, ref, pairs


@pytest.mark.parametrize("masks", ["none", "pad", "attn2d", "attn3d_pad"])
@pytest.mark.parametrize("cross", [False, True])
def test_mha_matches_torch(masks: str, cross: bool) -> None:
    module, ref, pairs = _mha()
    batch, heads, seq_q = 2, 2, 4
    seq_k = 6 if cross else seq_q
    q, q_t = _pair(batch, seq_q, 8, seed=1)
    (k, k_t), (v, v_t) = (_pair(batch, seq_k, 8, seed=2), _pair(batch, seq_k, 8, seed=3)) \
        if cross else ((q, q_t), (q, q_t))
    rng = np.random.default_rng(4)
    pad = np.zeros((batch, seq_k), bool)
    pad[0, -2:] = True
    attn = rng.random((batch, seq_q, seq_k)) < 0.3
    attn[..., 0] = False  # no query has all keys masked (torch gives NaN there)
    mask_pad = _bool(pad) if "pad" in masks else (None, None)
    mask_attn = (_bool(attn[0]) if masks == "attn2d" else _bool(attn) if masks == "attn3d_pad"
                 else (None, None))
    out, weights = module(q, k, v, mask_pad[0], mask_attn[0])
    attn_t = mask_attn[1]
    if masks == "attn3d_pad":  # torch takes a 3-d mask as [batch * heads, seq_q, seq_k]
        attn_t = attn_t.repeat_interleave(heads, dim=0)
    out_t, weights_t = ref(q_t, k_t, v_t, key_padding_mask=mask_pad[1], attn_mask=attn_t,
                           average_attn_weights=False)
    _close(out, out_t)
    _close(weights, weights_t)
    grads = _backward([out], [out_t])
    for ours, theirs in ([(q, q_t), (k, k_t), (v, v_t)] if cross else [(q, q_t)]):
        _close(ours.grad(grads), theirs.grad)
    _check_grads(pairs, grads)


def test_mha_half_precision_whose_raw_scores_overflow() -> None:
    """float16 MHA with identity projections over rows of +-40: q k^T per head (64 dims) is
    +-102400, past float16's range, while the scaled scores (+-12800) fit, as torch's."""
    module, ref, pairs = _mha(d=128, heads=2)
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.eye(128).repeat(3, 1))
        ref.out_proj.weight.copy_(torch.eye(128))
        for bias in (ref.in_proj_bias, ref.out_proj.bias):
            bias.zero_()
    _load(module, pairs)
    module = module.map(lambda _, p: p.cast(burn.float16))
    ref = ref.half()
    x = np.full((1, 3, 128), 40.0, np.float32)
    x[0, 1] *= -1
    x[0, 2] *= np.where(np.arange(128) % 2 == 0, 1.0, -0.5).astype(np.float32)
    out = module(*(burn.tensor(x, device=D).cast(burn.float16),) * 3)
    out_t, weights_t = ref(*(torch.tensor(x).half(),) * 3, average_attn_weights=False)
    for ours, theirs in ((out.context, out_t), (out.weights, weights_t)):
        assert ours.shape == tuple(theirs.shape) and ours.dtype == burn.float16
        values = ours.cast(burn.float32).to_numpy()
        assert np.isfinite(values).all()
        np.testing.assert_allclose(values, theirs.float().detach().numpy(), rtol=2e-3,
                                   atol=2e-3)


def test_mha_without_bias_matches_torch() -> None:
    module, ref, pairs = _mha(bias=False)
    x, x_t = _pair(2, 3, 8, seed=1)
    out_t = ref(x_t, x_t, x_t)[0]
    _close(module(x, x, x).context, out_t)
    grads = _backward([module(x, x, x).context], [out_t])
    _check_grads(pairs, grads)


@pytest.mark.parametrize("chunk", [1, 2])
def test_mha_cache_equals_causal_pass(chunk: int) -> None:
    module = _mha()[0]
    x, _ = _pair(2, 6, 8, seed=1)
    pad = np.zeros((2, 6), bool)
    pad[1, 2] = True
    full = module(x, x, x, _bool(pad)[0], generate_autoregressive_mask(2, 6, D)).context
    cache = MhaCache()
    steps = []
    for start in range(0, 6, chunk):
        new = x[:, start:start + chunk]
        steps.append(module.forward_autoregressive(new, new, new, cache,
                                                   _bool(pad[:, :start + chunk])[0]).context)
        assert len(cache) == start + chunk
    np.testing.assert_allclose(burn.cat(steps, dim=1).to_numpy(), full.to_numpy(), atol=1e-6)


def test_mha_static_cache_equals_cross_attention() -> None:
    module = _mha()[0]
    x, _ = _pair(2, 4, 8, seed=1)
    memory, _ = _pair(2, 5, 8, seed=2)
    full = module(x, memory, memory).context
    cache = MhaCache(static=True)
    steps = [module.forward_autoregressive(x[:, t:t + 1], memory, memory, cache).context
             for t in range(4)]
    assert len(cache) == 5
    np.testing.assert_allclose(burn.cat(steps, dim=1).to_numpy(), full.to_numpy(), atol=1e-6)


def test_mha_dropout_only_in_training() -> None:
    burn.seed(0)
    module = MultiHeadAttentionConfig(8, 2, dropout=0.5).init(D)
    x, _ = _pair(2, 5, 8, seed=1)
    dropped = module(x, x, x).weights.to_numpy()
    weights = module.eval()(x, x, x).weights.to_numpy()
    np.testing.assert_allclose(weights.sum(-1), 1.0, rtol=1e-5)
    assert (dropped == 0).any() and (dropped != 0).any()
    kept = dropped != 0
    np.testing.assert_allclose(dropped[kept], 2 * weights[kept], rtol=1e-5)


def test_autoregressive_mask() -> None:
    mask = generate_autoregressive_mask(2, 3, D)
    assert mask.shape == (2, 3, 3) and mask.dtype == burn.bool_
    np.testing.assert_array_equal(mask.to_numpy()[1], np.triu(np.ones((3, 3), bool), 1))


# --- transformer ---
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_torch(norm_first: bool, activation: str) -> None:
    torch.manual_seed(0)
    ref = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                           batch_first=True, norm_first=norm_first)
    module = TransformerEncoderLayer(8, 2, 16, 0.0, norm_first, activation, device=D)
    pairs = _layer_pairs(module, ref)
    _load(module, pairs)
    x, x_t = _pair(2, 5, 8, seed=1)
    pad = np.zeros((2, 5), bool)
    pad[0, -1] = True
    causal = np.triu(np.ones((5, 5), bool), 1)
    out = module(x, _bool(pad)[0], _bool(causal)[0])
    out_t = ref(x_t, src_mask=torch.tensor(causal), src_key_padding_mask=torch.tensor(pad))
    _close(out, out_t)
    grads = _backward([out], [out_t])
    _close(x.grad(grads), x_t.grad)
    _check_grads(pairs, grads)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer_matches_torch(norm_first: bool, activation: str) -> None:
    torch.manual_seed(0)
    ref = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                           batch_first=True, norm_first=norm_first)
    module = TransformerDecoderLayer(8, 2, 16, 0.0, norm_first, activation, device=D)
    pairs = _layer_pairs(module, ref)
    _load(module, pairs)
    tgt, tgt_t = _pair(2, 4, 8, seed=1)
    mem, mem_t = _pair(2, 6, 8, seed=2)
    tgt_pad, mem_pad = np.zeros((2, 4), bool), np.zeros((2, 6), bool)
    tgt_pad[1, -1], mem_pad[0, -2:] = True, True
    causal = np.triu(np.ones((4, 4), bool), 1)
    out = module(tgt, mem, _bool(tgt_pad)[0], _bool(causal)[0], _bool(mem_pad)[0])
    out_t = ref(tgt_t, mem_t, tgt_mask=torch.tensor(causal),
                tgt_key_padding_mask=torch.tensor(tgt_pad),
                memory_key_padding_mask=torch.tensor(mem_pad))
    _close(out, out_t)
    grads = _backward([out], [out_t])
    _close(tgt.grad(grads), tgt_t.grad)
    _close(mem.grad(grads), mem_t.grad)
    _check_grads(pairs, grads)


def test_feed_forward_matches_torch() -> None:
    torch.manual_seed(0)
    lin1, lin2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)
    module = PositionWiseFeedForward(8, 16, dropout=0.0, activation="gelu", device=D)
    pairs = (_linear(module.linear_inner, lin1.weight, lin1.bias)
             + _linear(module.linear_outer, lin2.weight, lin2.bias))
    _load(module, pairs)
    x, x_t = _pair(2, 3, 8, seed=1)
    out, out_t = module(x), lin2(torch.nn.functional.gelu(lin1(x_t)))
    _close(out, out_t)
    grads = _backward([out], [out_t])
    _close(x.grad(grads), x_t.grad)
    _check_grads(pairs, grads)


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_cache_equals_causal_pass(norm_first: bool) -> None:
    burn.seed(0)
    encoder = TransformerEncoderConfig(8, 2, 16, 2, dropout=0.0, norm_first=norm_first).init(D)
    x, _ = _pair(2, 5, 8, seed=1)
    full = encoder(x, mask_attn=generate_autoregressive_mask(2, 5, D))
    cache = encoder.new_autoregressive_cache()
    steps = [encoder.forward_autoregressive(x[:, t:t + 1], cache) for t in range(5)]
    np.testing.assert_allclose(burn.cat(steps, dim=1).to_numpy(), full.to_numpy(), atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_cache_equals_causal_pass(norm_first: bool) -> None:
    burn.seed(0)
    decoder = TransformerDecoderConfig(8, 2, 16, 2, dropout=0.0, norm_first=norm_first,
                                       activation="relu").init(D)
    tgt, _ = _pair(2, 5, 8, seed=1)
    mem, _ = _pair(2, 3, 8, seed=2)
    mem_pad = _bool(np.array([[False, False, True], [False, False, False]]))[0]
    full = decoder(tgt, mem, target_mask_attn=generate_autoregressive_mask(2, 5, D),
                   memory_mask_pad=mem_pad)
    cache = decoder.new_autoregressive_cache()
    steps = [decoder.forward_autoregressive(tgt[:, t:t + 1], mem, cache, memory_mask_pad=mem_pad)
             for t in range(5)]
    np.testing.assert_allclose(burn.cat(steps, dim=1).to_numpy(), full.to_numpy(), atol=1e-5)


def test_transformer_stack_and_configs() -> None:
    burn.seed(0)
    config = TransformerEncoderConfig(8, 2, 16, 3, norm_first=True)
    assert TransformerEncoderConfig.from_dict(config.to_dict()) == config
    encoder = config.init(D).eval()
    assert isinstance(encoder, TransformerEncoder) and len(encoder.layers) == 3
    x, _ = _pair(2, 4, 8, seed=1)
    expected = x
    for layer in encoder.layers:
        expected = layer(expected)
    np.testing.assert_allclose(encoder(x).to_numpy(), expected.to_numpy())
    decoder = TransformerDecoderConfig(8, 2, 16, 1).init(D)
    assert isinstance(decoder, TransformerDecoder)
    assert "n_layers=1" in repr(decoder) and "norm_first=False" in repr(decoder)
    assert decoder.layers[0].pwff.activation == "gelu"


# --- encodings ---
def test_positional_encoding_matches_formula() -> None:
    layer = PositionalEncodingConfig(6, max_sequence_size=10).init(D)
    x, _ = _pair(2, 7, 6, seed=1)
    out = layer(x)
    assert out.shape == (2, 7, 6) and out.dtype == burn.float32
    pe = np.zeros((7, 6))
    for pos in range(7):
        for i in range(0, 6, 2):
            pe[pos, i] = np.sin(pos / 10_000 ** (i / 6))
            pe[pos, i + 1] = np.cos(pos / 10_000 ** (i / 6))
    np.testing.assert_allclose(out.to_numpy(), x.to_numpy() + pe, rtol=1e-6, atol=1e-6)
    grads = out.sum().backward()
    np.testing.assert_array_equal(x.grad(grads).to_numpy(), np.ones((2, 7, 6)))


def _rope_reference(x: np.ndarray, start: int, theta: float = 10_000.0,
                    inverse: bool = False) -> np.ndarray:
    """llama's RoPE: feature pairs as complex numbers times exp(i * m * theta^(-2j / d))
    (exp(-i ...) when `inverse`)."""
    d, seq = x.shape[-1], x.shape[-2]
    freqs = theta ** (-np.arange(0, d, 2) / d)
    angles = np.arange(start, start + seq)[:, None] * freqs
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp((-1j if inverse else 1j) * angles)
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


@pytest.mark.parametrize("start", [0, 3])
def test_rotary_encoding_matches_reference(start: int) -> None:
    layer = RotaryEncodingConfig(8, max_sequence_length=10, theta=500.0).init(D)
    x, _ = _pair(2, 3, 4, 8, seed=1)  # [batch, heads, seq, d_head]
    out = layer(x, start)
    assert out.shape == x.shape and out.dtype == burn.float32
    np.testing.assert_allclose(out.to_numpy(), _rope_reference(x.to_numpy(), start, 500.0),
                               rtol=1e-5, atol=1e-6)
    w = np.random.default_rng(2).standard_normal(x.shape).astype(np.float32)
    grads = (out * burn.tensor(w, device=D)).sum().backward()
    # a rotation's gradient is the inverse rotation
    np.testing.assert_allclose(x.grad(grads).to_numpy(),
                               _rope_reference(w, start, 500.0, inverse=True),
                               rtol=1e-5, atol=1e-6)


def test_rotary_cache_positions_compose() -> None:
    layer = RotaryEncoding(4, 8)
    x, _ = _pair(1, 6, 4, seed=1)
    whole = layer(x).to_numpy()
    parts = np.concatenate([layer(x[:, :2]).to_numpy(), layer(x[:, 2:], start=2).to_numpy()], 1)
    np.testing.assert_allclose(parts, whole, rtol=1e-6)


# --- bad inputs ---
def _x(*shape: int) -> burn.Tensor:
    return burn.zeros(shape, device=D)


BAD_SHAPES = {
    "rnn d_input": (lambda: Rnn(3, 4, device=D)(_x(2, 5, 2)), "Rnn", "[batch, seq, d_input=3]"),
    "lstm rank": (lambda: Lstm(3, 4, device=D)(_x(5, 3)), "Lstm", "d_input=3"),
    "gru state": (lambda: Gru(3, 4, device=D)(_x(2, 5, 3), _x(2, 4)), "Gru",
                  "state [1, batch=2, d_hidden=4]"),
    "bilstm state": (lambda: BiLstm(3, 4, device=D)(_x(2, 5, 3), (_x(1, 2, 4), _x(1, 2, 4))),
                     "BiLstm", "state [2, batch=2"),
    "lstm seq first": (lambda: Lstm(3, 4, batch_first=False, device=D)(_x(5, 2, 4)), "Lstm",
                       "[seq, batch, d_input=3]"),
    "mha d_model": (lambda: MultiHeadAttention(8, 2, device=D)(_x(2, 3, 6), _x(2, 3, 6),
                                                               _x(2, 3, 6)),
                    "MultiHeadAttention", "d_model=8"),
    "mha key/value": (lambda: MultiHeadAttention(8, 2, device=D)(_x(2, 3, 8), _x(2, 4, 8),
                                                                 _x(2, 5, 8)),
                      "MultiHeadAttention", "key and value"),
    "mha mask_pad": (lambda: MultiHeadAttention(8, 2, device=D)(
        _x(2, 3, 8), _x(2, 3, 8), _x(2, 3, 8), mask_pad=_x(2, 4) > 0),
        "MultiHeadAttention", "mask_pad"),
    "mha mask_attn": (lambda: MultiHeadAttention(8, 2, device=D)(
        _x(2, 3, 8), _x(2, 3, 8), _x(2, 3, 8), mask_attn=_x(3, 4) > 0),
        "MultiHeadAttention", "mask_attn"),
    "encoder layer": (lambda: TransformerEncoderLayer(8, 2, 16, device=D)(_x(2, 3, 4)),
                      "TransformerEncoderLayer", "[batch, seq, d_model=8]"),
    "decoder memory": (lambda: TransformerDecoderLayer(8, 2, 16, device=D)(_x(2, 3, 8),
                                                                           _x(2, 3, 4)),
                       "TransformerDecoderLayer", "memory [batch, seq, d_model=8]"),
    "feed forward": (lambda: PositionWiseFeedForward(8, 16, device=D)(_x(2, 3, 4)),
                     "PositionWiseFeedForward", "d_model=8"),
    "positional too long": (lambda: PositionalEncoding(4, 3)(_x(1, 4, 4)),
                            "PositionalEncoding", "seq <= 3"),
    "positional d_model": (lambda: PositionalEncoding(4)(_x(1, 2, 6)), "PositionalEncoding",
                           "d_model=4"),
    "rotary past max": (lambda: RotaryEncoding(4, 5)(_x(1, 3, 4), start=3), "RotaryEncoding",
                        "start + seq <= 5"),
    "rotary d_model": (lambda: RotaryEncoding(4, 5)(_x(1, 3, 6)), "RotaryEncoding",
                       "d_model=4"),
}


@pytest.mark.parametrize("case", list(BAD_SHAPES))
def test_bad_shapes_raise(case: str) -> None:
    call, layer, expected = BAD_SHAPES[case]
    with pytest.raises(ShapeError, match=layer) as info:
        call()
    assert expected in str(info.value)


def test_bad_arguments_raise() -> None:
    with pytest.raises(DTypeError, match="mask_pad must be bool"):
        MultiHeadAttention(8, 2, device=D)(_x(2, 3, 8), _x(2, 3, 8), _x(2, 3, 8),
                                           mask_pad=_x(2, 3))
    with pytest.raises(ValueRangeError, match="n_heads must divide d_model"):
        MultiHeadAttention(8, 3)
    with pytest.raises(ValueRangeError, match="nonlinearity"):
        Rnn(3, 4, nonlinearity="sigmoid")  # type: ignore[arg-type]
    with pytest.raises(ValueRangeError, match="activation"):
        PositionWiseFeedForward(8, 16, activation="swish")  # type: ignore[arg-type]
    with pytest.raises(ValueRangeError, match="even"):
        RotaryEncoding(5, 10)
    with pytest.raises(ShapeError, match="batch changed"):
        module, cache = MultiHeadAttention(8, 2, device=D), MhaCache()
        module.forward_autoregressive(_x(2, 1, 8), _x(2, 1, 8), _x(2, 1, 8), cache)
        module.forward_autoregressive(_x(3, 1, 8), _x(3, 1, 8), _x(3, 1, 8), cache)
