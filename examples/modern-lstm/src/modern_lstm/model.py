"""`LstmNetwork`: burn.nn's Lstm (gates packed into one input and one hidden matrix per
direction; `num_layers`, `bidirectional`, inter-layer dropout), then layer norm, dropout and a
linear head on the last step's features."""

from __future__ import annotations

import burn
from burn.nn import Dropout, LayerNorm, Linear, Lstm, Module, MseLoss
from burn.train import RegressionOutput


class LstmNetwork(Module):
    """A sequence regressor: [batch, seq, d_input] -> [batch, d_output].

    Args:
        d_input: input features per step.
        d_hidden: hidden features per direction.
        d_output: predicted values.
        num_layers: stacked LSTM layers.
        bidirectional: add a reverse direction per layer (the head sees both).
        dropout: probability of dropping features between the layers and before the head.
        device: where the params live (the default device when None).
    """

    def __init__(self, d_input: int = 1, d_hidden: int = 32, d_output: int = 1,
                 num_layers: int = 2, bidirectional: bool = True, dropout: float = 0.1,
                 device: burn.Device | None = None) -> None:
        d_features = d_hidden * (2 if bidirectional else 1)
        self.lstm = Lstm(d_input, d_hidden, device=device, num_layers=num_layers,
                         bidirectional=bidirectional, dropout=dropout)
        self.norm = LayerNorm(d_features, device=device)
        self.dropout = Dropout(dropout)
        self.head = Linear(d_features, d_output, device=device)
        self.loss = MseLoss()

    def forward(self, x: burn.Tensor) -> burn.Tensor:
        """Args:
            x: [batch, seq, d_input].
        Returns:
            [batch, d_output]: the head applied to the last step's normalised features.
        """
        out, _ = self.lstm(x)
        return self.head(self.dropout(self.norm(out[:, -1])))

    def train_step(self, batch: tuple[burn.Tensor, burn.Tensor]) -> RegressionOutput:
        """The mean squared error and predictions of one (x, y) batch (also validation)."""
        x, y = batch
        predictions = self(x)
        return RegressionOutput(self.loss(predictions, y), predictions, y)
