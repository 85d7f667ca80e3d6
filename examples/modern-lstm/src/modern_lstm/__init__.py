"""Burn's modern-lstm example: an LSTM network trained to predict the next value of a noisy
sine wave."""

from modern_lstm.data import sine_sequences
from modern_lstm.model import LstmNetwork

__all__ = ["LstmNetwork", "sine_sequences"]
