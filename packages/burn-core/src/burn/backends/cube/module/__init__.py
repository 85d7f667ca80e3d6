"""Module ops of the cube backends, one family per file."""
