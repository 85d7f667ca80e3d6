"""The ppo-agent example's smoke mode runs end to end and writes its artifacts."""

from __future__ import annotations

import json
from pathlib import Path

from ppo_agent.__main__ import main


def test_ppo_agent_smoke(tmp_path: Path) -> None:
    assert main(["--env", "CartPole-v1", "--smoke", "--artifact-dir", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "result.json").read_text())
    assert result["env_steps"] == 1024.0 and result["threshold"] == 475.0
    assert 8.0 <= result["eval_mean"] <= 500.0  # 5 CartPole episodes last 8 to 500 steps
    assert (tmp_path / "logs" / "train.csv").is_file()
    assert (tmp_path / "final" / "state.json").is_file()
