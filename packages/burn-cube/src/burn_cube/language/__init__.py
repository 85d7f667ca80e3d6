"""The kernel language: builtins and the Python-AST frontend."""
