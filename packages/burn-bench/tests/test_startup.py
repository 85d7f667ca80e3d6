"""The startup suite: fresh interpreters timed per candidate, tables per thread count and site
mode (torch left out here to keep the test short)."""

from __future__ import annotations

import pytest

from burn_bench import startup
from burn_bench.suites import SUITES, report_runner

SMALL = (("python -c pass", "pass", None), ("import numpy", "import numpy", None),
         ("import burn", "import burn", "python -c pass"),
         ("burn: import, first op", "import burn; burn.tensor([1.0]) + 1", "import numpy"))


def test_measure_times_each_candidate_per_table() -> None:
    tables = startup.measure(rounds=2, candidates=SMALL)
    assert list(tables) == ["1 thread", "2 threads", "1 thread, python -S"]
    for results in tables.values():
        assert [r.name for r in results] == [name for name, _, _ in SMALL]
        for r in results:
            assert 0 < r.seconds <= r.median <= r.worst < 120
    # an interpreter that makes a tensor (importing burn and numpy) does more than one that
    # does nothing
    first = {r.name: r for r in tables["1 thread"]}
    assert first["burn: import, first op"].seconds > first["python -c pass"].seconds
    assert first["import burn"].vs == "python -c pass"


def test_startup_is_a_report_suite() -> None:
    assert SUITES["startup"].kind == "report"
    assert callable(report_runner("startup"))


def test_report_gives_burns_shares_per_table(monkeypatch: pytest.MonkeyPatch) -> None:
    measured = startup.measure
    no_torch = tuple((name, snippet, None if vs and "torch" in vs else vs)
                     for name, snippet, vs in startup.CANDIDATES if "torch" not in name)
    monkeypatch.setattr(startup, "measure", lambda rounds: measured(rounds, no_torch))
    text = startup.run(rounds=1)
    assert text.count("fresh-interpreter start-up") == 3
    for label, _, _ in startup.SHARES:
        assert text.count(f"burn's own share ({label}): ") == 3
