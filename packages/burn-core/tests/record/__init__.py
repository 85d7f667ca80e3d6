"""Tests of burn.record: save / load of modules."""
