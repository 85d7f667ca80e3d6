"""The default vision ops, written with burn tensor ops only, so every backend runs them (and
the Autodiff decorator differentiates the float ones)."""
