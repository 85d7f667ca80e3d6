"""The startup suite: fresh interpreters timed per candidate, tables per thread count and site
mode (torch left out here to keep the test short)."""

from __future__ import annotations

from burn_bench import startup
from burn_bench.suites import SUITES, report_runner

SMALL = (("python -c pass", "pass", None), ("import numpy", "import numpy", None),
         ("import burn", "import burn", "import numpy"))


def test_measure_times_each_candidate_per_table() -> None:
    tables = startup.measure(rounds=2, candidates=SMALL)
    assert list(tables) == ["1 thread", "2 threads", "1 thread, python -S"]
    for results in tables.values():
        assert [r.name for r in results] == [name for name, _, _ in SMALL]
        for r in results:
            assert 0 < r.seconds <= r.median <= r.worst < 120
    # an interpreter that imports numpy and burn does more than one that does nothing
    first = {r.name: r for r in tables["1 thread"]}
    assert first["import burn"].seconds > first["python -c pass"].seconds
    assert first["import burn"].vs == "import numpy"


def test_startup_is_a_report_suite() -> None:
    assert SUITES["startup"].kind == "report"
    assert callable(report_runner("startup"))
