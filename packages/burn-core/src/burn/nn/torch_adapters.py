"""Import of torch state dicts whose layers pack or name tensors unlike burn's, as Burn's
burn-import PyTorch adapter: recurrent layers (gates packed in `weight_ih_l{k}[_reverse]`, ...),
`MultiheadAttention` (`in_proj_weight` / `in_proj_bias`, `out_proj`) and the transformer layers
(`linear1`, `norm1`, `multihead_attn`, ...). Packed tensors are split lazily (on read).

`load_torch_state_dict(module, state_dict_or_path)` is the entry point; `TorchLayersAdapter()`
also plugs into `burn.record.load(module, "model.pt", adapter=TorchLayersAdapter())`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from burn.nn.attention import MultiHeadAttention
from burn.nn.module import Module
from burn.nn.rnn import BiLstm, _Recurrent
from burn.nn.transformer import TransformerDecoderLayer, TransformerEncoderLayer
from burn.record.policy import DTypePolicy, Entry, LoadReport, Source, load_into
from burn.record.safetensors_format import EXTENSION as SAFETENSORS_EXTENSION
from burn.record.safetensors_format import read_safetensors
from burn.record.torch_import import PyTorchAdapter, read_pytorch

Handler = Callable[[Source, str, Module], Source]

# torch sublayer name -> burn's, per transformer layer class (torch's names on the left).
_ENCODER_NAMES = {"linear1": "pwff.linear_inner", "linear2": "pwff.linear_outer",
                  "norm1": "norm_1", "norm2": "norm_2"}
_DECODER_NAMES = {**_ENCODER_NAMES, "norm3": "norm_3", "multihead_attn": "cross_attn"}


def _rows(entry: Entry, index: int, parts: int) -> Entry:
    """Part `index` of `parts` equal row blocks of `entry` (read on demand)."""
    n = entry.shape[0] // parts
    return Entry((n, *entry.shape[1:]), lambda: entry.read()[index * n:(index + 1) * n])


def _renamed(source: Source, prefix: str, names: Mapping[str, str]) -> Source:
    """`source` with keys `<prefix><old>[.rest]` renamed `<prefix><new>[.rest]`."""
    out: Source = {}
    for key, entry in source.items():
        for old, new in names.items():
            if key == prefix + old or key.startswith(f"{prefix}{old}."):
                key = prefix + new + key[len(prefix + old):]
                break
        out[key] = entry
    return out


def _split(source: Source, key: str, targets: list[str]) -> None:
    """Replace the packed `key` (if stored) by its row blocks under `targets`, in place."""
    entry = source.pop(key, None)
    if entry is not None:
        for i, target in enumerate(targets):
            source[target] = _rows(entry, i, len(targets))


def _attention(source: Source, prefix: str, module: Module) -> Source:
    """torch MultiheadAttention -> query / key / value / output Linears."""
    out = _renamed(source, prefix, {"out_proj": "output", "q_proj_weight": "query.weight",
                                    "k_proj_weight": "key.weight",
                                    "v_proj_weight": "value.weight"})
    for kind in ("weight", "bias"):
        _split(out, f"{prefix}in_proj_{kind}",
               [f"{prefix}{name}.{kind}" for name in ("query", "key", "value")])
    return out


def _recurrent_directions(module: Module) -> list[tuple[str, _Recurrent]]:
    """(torch suffix `l{k}[_reverse]`, burn one-direction module) for each layer and direction."""
    if isinstance(module, BiLstm):
        return [("l0.", module.forward_lstm), ("l0_reverse.", module.reverse_lstm)]
    assert isinstance(module, _Recurrent)
    out = []
    for k, layer in enumerate(module.layer_stack()):
        out.append((f"l{k}.", layer))
        if layer.reverse is not None:
            out.append((f"l{k}_reverse.", layer.reverse))
    return out


def _recurrent(source: Source, prefix: str, module: Module) -> Source:
    """torch RNN / LSTM / GRU packed gates -> each gate's input / hidden Linear."""
    paths = {id(m): name for name, m in module.named_modules()}
    out = dict(source)
    for suffix, direction in _recurrent_directions(module):
        path = paths[id(direction)]
        base = prefix + (f"{path}." if path else "")
        for torch_name, transform in (("ih", "input_transform"), ("hh", "hidden_transform")):
            for kind in ("weight", "bias"):
                _split(out, f"{prefix}{kind}_{torch_name}_{suffix[:-1]}",
                       [f"{base}{gate}.{transform}.{kind}" for gate in direction._gate_names])
    return out


def _layer_names(names: Mapping[str, str]) -> Handler:
    return lambda source, prefix, _: _renamed(source, prefix, names)


# Handlers by burn layer class; subclasses match too. Parents are handled before children.
HANDLERS: dict[type[Module], Handler] = {
    TransformerDecoderLayer: _layer_names(_DECODER_NAMES),
    TransformerEncoderLayer: _layer_names(_ENCODER_NAMES),
    MultiHeadAttention: _attention,
    _Recurrent: _recurrent,
    BiLstm: _recurrent,
}


@dataclass(frozen=True)
class TorchLayersAdapter:
    """A `burn.record` adapter: splits and renames torch's packed layer tensors for every
    layer of the module that has a handler, then applies `base` (linear transposes, norm
    renames, dropped `num_batches_tracked`).

    Attributes:
        base: the generic torch adapter applied last.
    """

    base: PyTorchAdapter = field(default_factory=PyTorchAdapter)

    def __call__(self, source: Source, module: Any) -> Source:
        """`source` (torch keys and layouts) in `module`'s keys and layouts."""
        for path, sub in module.named_modules():
            handler = next((h for cls, h in HANDLERS.items() if isinstance(sub, cls)), None)
            if handler is not None:
                source = handler(source, f"{path}." if path else "", sub)
        return self.base(source, module)


def _array(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):  # a torch tensor; numpy has no bfloat16 view of it
        value = value.detach().cpu()
        if str(value.dtype) == "torch.bfloat16":
            value = value.float()
        value = value.numpy()
    return np.array(value, order="C")  # a copy: torch tensors share their memory


def _stored(array: np.ndarray) -> Entry:
    return Entry(tuple(array.shape), lambda: array)


def load_torch_state_dict(module: Module,
                          state_dict: Mapping[str, Any] | str | os.PathLike[str], *,
                          strict: bool = True, dtype: DTypePolicy = "cast") -> LoadReport:
    """Load a torch state dict into `module` (values replaced in place, ids kept).

    Args:
        module: the burn module, built with the torch module's sizes and options.
        state_dict: `torch_module.state_dict()` (torch tensors or arrays by key), or a file
            written by torch: `.safetensors` (`safetensors.torch.save_file`) or `.pt` / `.pth`
            (`torch.save`, read without running its pickle).
        strict: raise on missing / unexpected keys and shape mismatches; else load what fits
            and report the rest.
        dtype: "cast" to the module's dtypes, or "keep" the stored ones.
    Returns:
        The load report (loaded, missing, unexpected, mismatched keys).
    Raises:
        RecordKeyError, RecordShapeError: strict, when the adapted keys or shapes differ.
        CorruptRecordError, UnsafePickleError: for an unreadable file.
    """
    metadata: dict[str, str] = {}
    if isinstance(state_dict, Mapping):
        source = {key: _stored(_array(value)) for key, value in state_dict.items()}
        path = "<state_dict>"
    else:
        path = os.fspath(state_dict)
        if Path(path).suffix.lower() == SAFETENSORS_EXTENSION:
            source, metadata = read_safetensors(path)
        else:
            source = {key: _stored(a) for key, a in read_pytorch(path).items()}
    return load_into(module, source, path=path, op="load_torch_state_dict", metadata=metadata,
                     dtype=dtype, strict=strict, adapter=TorchLayersAdapter())
