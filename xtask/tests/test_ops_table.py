"""The ops-table pytest plugin (`-p xtask.ops_table`): each test's op, family and outcome in
its JSON report, the same whether the suite runs in one process or over pytest-xdist workers
(which collect the tests, so their reports carry the ops to the controller)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

CONFTEST = '''
def pytest_configure(config):
    config.addinivalue_line("markers", "op(name, family=None): the op a test covers")
'''
SUITE = '''
import pytest


@pytest.mark.op("add")
@pytest.mark.parametrize("i", range(4))
def test_add(i):
    assert i >= 0


@pytest.mark.op("mul", family="other")
def test_mul_fails():
    assert False


@pytest.mark.op("sub")
def test_sub_skipped():
    pytest.skip("not on this backend")


def test_unmarked():
    pass
'''
#: (test name, op, family, outcome) of every test of `SUITE`
EXPECTED = sorted([*((f"test_add[{i}]", "add", "family", "pass") for i in range(4)),
                   ("test_mul_fails", "mul", "other", "fail"),
                   ("test_sub_skipped", "sub", "family", "not run"),
                   ("test_unmarked", "<no op marker>", "family", "pass")])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_report_names_each_tests_op_family_and_outcome(tmp_path: Path,
                                                           workers: list[str]) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_family.py").write_text(SUITE)
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "-p", "xtask.ops_table",
                           f"--ops-report={report}", "-q", "-p", "no:cacheprovider", *workers],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # (test_mul_fails)
    data = json.loads(report.read_text())
    got = sorted((nodeid.split("::")[1], entry["op"], entry["family"], entry["outcome"])
                 for nodeid, entry in data["tests"].items())
    assert got == EXPECTED
    assert data["exitstatus"] == 1 and data["collection_errors"] == []
