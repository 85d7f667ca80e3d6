"""Recurrent layers: Rnn (tanh / relu), Lstm, BiLstm and Gru, with torch's gate formulations.

Each gate is a `GateController` (Burn's layout): an input transform `Linear(d_input, d_hidden)`
and a hidden transform `Linear(d_hidden, d_hidden)`, each with its own bias as torch's `b_ih` /
`b_hh`. The forward packs the gates' weights so that one matmul projects the whole sequence and
one matmul per step projects the hidden state.

Rnn, Lstm and Gru take torch's `num_layers`, `bidirectional` and inter-layer `dropout`. The
layer's own gates are layer 0's forward direction (so a one-layer layer has Burn's param
names); `reverse` holds layer 0's reverse direction and `stacked` the layers above, each a
one-layer layer of the same class (`stacked.0.reverse.input_gate...` is layer 1's reverse
direction). `burn.nn.torch_adapters` maps torch's `weight_ih_l{k}[_reverse]` onto them.

Inputs are [batch, seq, d_input] (`batch_first=True`, Burn's default) or [seq, batch, d_input];
states are torch-shaped [directions, batch, d_hidden].
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import burn
import burn.functional as F
from burn.device import Device
from burn.errors import ShapeError, ValueRangeError
from burn.frontend.tensor import Tensor
from burn.nn._layer import LayerConfig, check_float_input, check_input
from burn.nn.dropout import Dropout
from burn.nn.init import Initializer, Uniform
from burn.nn.linear import Linear
from burn.nn.module import Module

_DeviceLike = Device | str | None
States = tuple[Tensor, ...]


class GateController(Module):
    """One gate's transforms (Burn's GateController); its pre-activation is
    `input_transform(x) + hidden_transform(h)`.

    Args:
        d_input: input features.
        d_hidden: hidden features.
        bias: whether both transforms have a bias.
        device: where the params live.
        initializer: of every weight and bias.
    """

    def __init__(self, d_input: int, d_hidden: int, bias: bool, device: _DeviceLike,
                 initializer: Initializer) -> None:
        self.input_transform = Linear(d_input, d_hidden, bias, device, initializer)
        self.hidden_transform = Linear(d_hidden, d_hidden, bias, device, initializer)


def _pack(linears: Sequence[Linear]) -> tuple[Tensor, Tensor | None]:
    """The weights (and biases) of `linears` side by side: [d_in, n * d_out], [n * d_out]."""
    weight = burn.cat([lin.weight for lin in linears], dim=1)
    if linears[0].bias is None:
        return weight, None
    return weight, burn.cat([lin.bias for lin in linears], dim=0)  # type: ignore[misc]


def _affine(x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
    out = x @ weight
    return out if bias is None else out + bias


class _Recurrent(Module, ABC):
    """Base of Rnn, Lstm and Gru: gates named `_gate_names` (layer 0, forward direction), a cell
    (`_cell`), the time loop (`_scan`), and the other directions and layers."""

    _gate_names: tuple[str, ...] = ()

    def __init__(self, d_input: int, d_hidden: int, bias: bool = True, batch_first: bool = True,
                 device: _DeviceLike = None, initializer: Initializer | None = None,
                 num_layers: int = 1, bidirectional: bool = False, dropout: float = 0.0) -> None:
        layer = type(self).__name__
        if num_layers < 1:
            raise ValueRangeError(layer, "num_layers must be at least 1", num_layers=num_layers)
        init = initializer or Uniform(-1 / math.sqrt(d_hidden), 1 / math.sqrt(d_hidden))
        self.d_input, self.d_hidden = d_input, d_hidden
        self.bias, self.batch_first = bias, batch_first
        self.num_layers, self.bidirectional = num_layers, bidirectional
        for name in self._gate_names:
            setattr(self, name, GateController(d_input, d_hidden, bias, device, init))
        self.reverse = (self._one_layer(d_input, device, init) if bidirectional else None)
        d_upper = d_hidden * (2 if bidirectional else 1)
        self.stacked = [self._one_layer(d_upper, device, init, bidirectional)
                        for _ in range(num_layers - 1)]
        self.dropout = Dropout(dropout)

    def _one_layer(self, d_input: int, device: _DeviceLike, init: Initializer,
                   bidirectional: bool = False) -> Any:
        """A one-layer layer of this class and options (a direction or a stacked layer)."""
        return type(self)(d_input, self.d_hidden, bias=self.bias, device=device,
                          initializer=init, bidirectional=bidirectional, **self._options())

    def _options(self) -> dict[str, Any]:
        """Subclass-specific constructor options, passed on to `_one_layer`."""
        return {}

    def layer_stack(self) -> list[Any]:
        """The layers bottom up: this one (layer 0), then `stacked`."""
        return [self, *self.stacked]

    @abstractmethod
    def _cell(self, x_proj: Tensor, h_proj: Tensor, state: States) -> States:
        """One step: the packed input and hidden projections [batch, gates * d_hidden] and the
        state -> the new state (hidden first)."""

    def _scan(self, x: Tensor, state: States, reverse: bool = False) -> tuple[Tensor, States]:
        """Run the cell over a batch-first sequence.

        Args:
            x: [batch, seq, d_input].
            state: the initial states, each [batch, d_hidden].
            reverse: walk the sequence from its end (the backward direction of BiLstm).
        Returns:
            The hidden states [batch, seq, d_hidden] (in input order) and the final states.
        """
        gates: list[GateController] = [getattr(self, name) for name in self._gate_names]
        x_proj = _affine(x, *_pack([g.input_transform for g in gates]))
        w_hidden, b_hidden = _pack([g.hidden_transform for g in gates])
        seq = x.shape[1]
        outputs = []
        for t in (range(seq - 1, -1, -1) if reverse else range(seq)):
            state = self._cell(x_proj[:, t], _affine(state[0], w_hidden, b_hidden), state)
            outputs.append(state[0])
        return burn.stack(outputs[::-1] if reverse else outputs, dim=1), state

    def _run(self, x: Tensor, given: tuple[Tensor | None, ...]) -> tuple[Tensor, States]:
        """Check `x` and the initial states (None = zeros), run every layer and direction, and
        lay the results out as torch: output in the input's layout, final states
        [num_layers * directions, batch, d_hidden] (layer-major, forward direction first)."""
        layer = type(self).__name__
        check_float_input(layer, x, self.input_gate_weight())
        x = _batch_major(layer, x, self.d_input, self.batch_first)
        dirs = 2 if self.bidirectional else 1
        init = [_initial_state(layer, s, self.num_layers * dirs, x, self.d_hidden)
                for s in given]
        finals: list[list[Tensor]] = [[] for _ in given]
        for k, stage in enumerate(self.layer_stack()):
            if k:
                x = self.dropout(x)
            outs = []
            for d, cell in enumerate([stage] if stage.reverse is None
                                     else [stage, stage.reverse]):
                out, final = cell._scan(x, tuple(s[k * dirs + d] for s in init), reverse=d == 1)
                outs.append(out)
                for acc, f in zip(finals, final, strict=True):
                    acc.append(f)
            x = outs[0] if len(outs) == 1 else burn.cat(outs, dim=-1)
        return (_sequence_out(x, self.batch_first),
                tuple(burn.stack(f, dim=0) for f in finals))

    def input_gate_weight(self) -> Tensor:
        """Layer 0's first input weight (the layer's dtype)."""
        gate: GateController = getattr(self, self._gate_names[0])
        return gate.input_transform.weight

    def extra_repr(self) -> str:
        return (f"d_input={self.d_input}, d_hidden={self.d_hidden}, bias={self.bias}, "
                f"batch_first={self.batch_first}, num_layers={self.num_layers}, "
                f"bidirectional={self.bidirectional}")


def _batch_major(layer: str, x: Tensor, d_input: int, batch_first: bool) -> Tensor:
    """Check a sequence input and return it as [batch, seq, d_input]."""
    expected = "[batch, seq, " if batch_first else "[seq, batch, "
    check_input(layer, x, expected + f"d_input={d_input}]", ranks=(3,), dim=-1, size=d_input)
    return x if batch_first else x.swap_dims(0, 1)


def _sequence_out(out: Tensor, batch_first: bool) -> Tensor:
    return out if batch_first else out.swap_dims(0, 1)


def _initial_state(layer: str, state: Tensor | None, directions: int, x: Tensor,
                   d_hidden: int) -> Tensor:
    """The given initial state, checked to be [directions, batch, d_hidden], or zeros."""
    shape = (directions, x.shape[0], d_hidden)
    if state is None:
        return burn.zeros(shape, dtype=x.dtype, device=x.device)
    if tuple(state.shape) != shape:
        raise ShapeError(layer, f"expected state [{directions}, batch={shape[1]}, "
                         f"d_hidden={d_hidden}]", state=state.shape)
    return state


class _HiddenOnly(_Recurrent):
    """Base of the layers whose state is the hidden state alone (Rnn, Gru)."""

    def forward(self, x: Tensor, state: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Args:
            x: [batch, seq, d_input] ([seq, batch, d_input] unless batch_first).
            state: h_0 [num_layers * directions, batch, d_hidden]; zeros when None.
        Returns:
            (output, h_n) as torch: output [batch, seq, directions * d_hidden] (seq first
            unless batch_first), h_n [num_layers * directions, batch, d_hidden].
        Raises:
            ShapeError: for a bad input or state shape.
        """
        out, (h,) = self._run(x, (state,))
        return out, h


class Rnn(_HiddenOnly):
    """Elman RNN, as torch.nn.RNN: h_t = act(x_t W_i + b_i + h_{t-1} W_h + b_h).

    Args:
        d_input: input features.
        d_hidden: hidden features.
        bias: whether the transforms have biases.
        nonlinearity: "tanh" or "relu".
        batch_first: inputs and outputs are [batch, seq, ...] (else [seq, batch, ...]).
        device: where the params live.
        initializer: of every weight and bias (torch's U(-1/sqrt(d_hidden), 1/sqrt(d_hidden))
            when None).
        num_layers: stacked layers, each fed the previous one's output.
        bidirectional: add a reverse direction per layer (outputs concatenated).
        dropout: probability of dropping each layer's output but the last, in training.

    Defaults that differ from torch: `batch_first` True (torch False).
    Raises:
        ValueRangeError: for another nonlinearity, or num_layers < 1.
    """

    _gate_names = ("gate",)

    def __init__(self, d_input: int, d_hidden: int, bias: bool = True,
                 nonlinearity: Literal["tanh", "relu"] = "tanh", batch_first: bool = True,
                 device: _DeviceLike = None, initializer: Initializer | None = None,
                 num_layers: int = 1, bidirectional: bool = False, dropout: float = 0.0) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueRangeError("Rnn", "nonlinearity must be 'tanh' or 'relu'",
                                  nonlinearity=nonlinearity)
        self.nonlinearity = nonlinearity
        super().__init__(d_input, d_hidden, bias, batch_first, device, initializer, num_layers,
                         bidirectional, dropout)

    def _options(self) -> dict[str, Any]:
        return {"nonlinearity": self.nonlinearity}

    def _cell(self, x_proj: Tensor, h_proj: Tensor, state: States) -> States:
        pre = x_proj + h_proj
        return (F.tanh(pre) if self.nonlinearity == "tanh" else F.relu(pre),)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, nonlinearity={self.nonlinearity!r}"


class Lstm(_Recurrent):
    """Long short-term memory, as torch.nn.LSTM (gates i, f, g, o):
    c_t = f * c_{t-1} + i * g, h_t = o * tanh(c_t).

    Args:
        d_input: input features.
        d_hidden: hidden (and cell) features.
        bias: whether the transforms have biases.
        batch_first: inputs and outputs are [batch, seq, ...] (else [seq, batch, ...]).
        device: where the params live.
        initializer: of every weight and bias (torch's U(-1/sqrt(d_hidden), 1/sqrt(d_hidden))
            when None).
        num_layers: stacked layers, each fed the previous one's output.
        bidirectional: add a reverse direction per layer (outputs concatenated).
        dropout: probability of dropping each layer's output but the last, in training.

    Defaults that differ from torch: `batch_first` True (torch False).
    Raises:
        ValueRangeError: for num_layers < 1.
    """

    _gate_names = ("input_gate", "forget_gate", "cell_gate", "output_gate")

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Args:
            x: [batch, seq, d_input] ([seq, batch, d_input] unless batch_first).
            state: (h_0, c_0), each [num_layers * directions, batch, d_hidden]; zeros when
                None.
        Returns:
            (output, (h_n, c_n)) as torch: output [batch, seq, directions * d_hidden] (seq
            first unless batch_first), h_n and c_n [num_layers * directions, batch, d_hidden].
        Raises:
            ShapeError: for a bad input or state shape.
        """
        out, (h, c) = self._run(x, state or (None, None))
        return out, (h, c)

    def _cell(self, x_proj: Tensor, h_proj: Tensor, state: States) -> States:
        i, f, g, o = (x_proj + h_proj).chunk(4, dim=-1)
        cell = F.sigmoid(f) * state[1] + F.sigmoid(i) * F.tanh(g)
        return F.sigmoid(o) * F.tanh(cell), cell


class Gru(_HiddenOnly):
    """Gated recurrent unit, as torch.nn.GRU (gates r, z, n, the reset gate applied
    after the hidden matmul): n = tanh(x W_in + b_in + r * (h W_hn + b_hn)),
    h_t = (1 - z) * n + z * h_{t-1}.

    Args:
        d_input: input features.
        d_hidden: hidden features.
        bias: whether the transforms have biases.
        batch_first: inputs and outputs are [batch, seq, ...] (else [seq, batch, ...]).
        device: where the params live.
        initializer: of every weight and bias (torch's U(-1/sqrt(d_hidden), 1/sqrt(d_hidden))
            when None).
        num_layers: stacked layers, each fed the previous one's output.
        bidirectional: add a reverse direction per layer (outputs concatenated).
        dropout: probability of dropping each layer's output but the last, in training.

    Defaults that differ from torch: `batch_first` True (torch False).
    Raises:
        ValueRangeError: for num_layers < 1.
    """

    _gate_names = ("reset_gate", "update_gate", "new_gate")

    def _cell(self, x_proj: Tensor, h_proj: Tensor, state: States) -> States:
        x_r, x_z, x_n = x_proj.chunk(3, dim=-1)
        h_r, h_z, h_n = h_proj.chunk(3, dim=-1)
        reset, update = F.sigmoid(x_r + h_r), F.sigmoid(x_z + h_z)
        new = F.tanh(x_n + reset * h_n)
        return (new + update * (state[0] - new),)


class BiLstm(Module):
    """Bidirectional LSTM (Burn's BiLstm), as torch.nn.LSTM(bidirectional=True) with one layer:
    a forward and a reverse `Lstm` whose hidden states are concatenated. `Lstm(...,
    bidirectional=True)` is the same computation with torch's options (num_layers, dropout).

    Args:
        d_input: input features.
        d_hidden: hidden features of each direction.
        bias: whether the transforms have biases.
        batch_first: inputs and outputs are [batch, seq, ...] (else [seq, batch, ...]).
        device: where the params live.
        initializer: of every weight and bias (torch's U(-1/sqrt(d_hidden), 1/sqrt(d_hidden))
            when None).

    Defaults that differ from torch: `batch_first` True (torch False).
    """

    def __init__(self, d_input: int, d_hidden: int, bias: bool = True, batch_first: bool = True,
                 device: _DeviceLike = None, initializer: Initializer | None = None) -> None:
        self.d_input, self.d_hidden = d_input, d_hidden
        self.bias, self.batch_first = bias, batch_first
        self.forward_lstm = Lstm(d_input, d_hidden, bias, True, device, initializer)
        self.reverse_lstm = Lstm(d_input, d_hidden, bias, True, device, initializer)

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """Args:
            x: [batch, seq, d_input] ([seq, batch, d_input] unless batch_first).
            state: (h_0, c_0), each [2, batch, d_hidden] (forward direction first); zeros when
                None.
        Returns:
            (output, (h_n, c_n)) as torch: output [batch, seq, 2 * d_hidden] (forward features
            first; [seq, batch, 2 * d_hidden] unless batch_first), h_n and c_n
            [2, batch, d_hidden].
        Raises:
            ShapeError: for a bad input or state shape.
        """
        check_float_input("BiLstm", x, self.forward_lstm.input_gate_weight())
        x = _batch_major("BiLstm", x, self.d_input, self.batch_first)
        h0, c0 = (_initial_state("BiLstm", s, 2, x, self.d_hidden)
                  for s in (state or (None, None)))
        out_f, (h_f, c_f) = self.forward_lstm._scan(x, (h0[0], c0[0]))
        out_r, (h_r, c_r) = self.reverse_lstm._scan(x, (h0[1], c0[1]), reverse=True)
        out = burn.cat([out_f, out_r], dim=-1)
        return (_sequence_out(out, self.batch_first),
                (burn.stack([h_f, h_r], dim=0), burn.stack([c_f, c_r], dim=0)))

    def extra_repr(self) -> str:
        return (f"d_input={self.d_input}, d_hidden={self.d_hidden}, bias={self.bias}, "
                f"batch_first={self.batch_first}")


@dataclass
class _RecurrentConfig(LayerConfig):
    d_input: int
    d_hidden: int
    bias: bool = True
    batch_first: bool = True
    initializer: Initializer | None = None


@dataclass
class _StackedConfig(_RecurrentConfig):
    num_layers: int = 1
    bidirectional: bool = False
    dropout: float = 0.0


@dataclass
class RnnConfig(_StackedConfig):
    """Config of `Rnn` (same arguments)."""

    nonlinearity: Literal["tanh", "relu"] = "tanh"
    module = Rnn


@dataclass
class LstmConfig(_StackedConfig):
    """Config of `Lstm` (same arguments)."""

    module = Lstm


@dataclass
class BiLstmConfig(_RecurrentConfig):
    """Config of `BiLstm` (same arguments)."""

    module = BiLstm


@dataclass
class GruConfig(_StackedConfig):
    """Config of `Gru` (same arguments)."""

    module = Gru
