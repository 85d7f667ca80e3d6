"""The noxfile hands pip's configuration to uv (which does not read it): find-links, indexes,
constraints and certificate from `pip config list`, the later scope winning."""

from __future__ import annotations

import runpy
import subprocess
from pathlib import Path
from typing import Any

import pytest

# loaded once: each load registers the sessions with nox again
NOXFILE = runpy.run_path(str(Path(__file__).resolve().parents[2] / "noxfile.py"))

LISTED = """:env:.default-timeout='180'
:env:.find-links='/opt/env-wheels'
global.cert='/etc/ssl/certs/ca.crt'
global.constraint='/etc/pip/constraints.txt'
global.extra-index-url='file:///opt/a/simple file:///opt/b/simple'
global.find-links='/opt/wheels /opt/more'
install.index-url='https://mirror.example/simple'
"""


def _uv_environment(monkeypatch: pytest.MonkeyPatch, listed: str | None) -> dict[str, str]:
    def fake_run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert command[1:] == ["-m", "pip", "config", "list"]
        if listed is None:
            raise subprocess.CalledProcessError(1, command)
        return subprocess.CompletedProcess(command, 0, listed, "")

    monkeypatch.setattr(NOXFILE["subprocess"], "run", fake_run)
    result: dict[str, str] = NOXFILE["uv_environment"]()
    return result


def test_pip_config_becomes_uv_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _uv_environment(monkeypatch, LISTED) == {
        "UV_FIND_LINKS": "/opt/env-wheels",  # the environment's setting beats the file's
        "SSL_CERT_FILE": "/etc/ssl/certs/ca.crt",
        "UV_CONSTRAINT": "/etc/pip/constraints.txt",
        "UV_EXTRA_INDEX_URL": "file:///opt/a/simple file:///opt/b/simple",
        "UV_DEFAULT_INDEX": "https://mirror.example/simple",
        "UV_INDEX_STRATEGY": "unsafe-best-match"}


def test_several_find_links_are_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    env = _uv_environment(monkeypatch, "global.find-links='/opt/wheels /opt/more'\n")
    assert env == {"UV_FIND_LINKS": "/opt/wheels,/opt/more",
                   "UV_INDEX_STRATEGY": "unsafe-best-match"}


def test_no_pip_config_gives_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _uv_environment(monkeypatch, "") == {}
    assert _uv_environment(monkeypatch, None) == {}


def test_installs_ignore_the_projects_uv_config() -> None:
    assert NOXFILE["UV_INSTALL_ENV"]["UV_NO_CONFIG"] == "1"
    assert NOXFILE["nox"].options.default_venv_backend == "uv|virtualenv"
