"""The workflow's own rules, read from the YAML GitHub runs, and what `carry ci` prints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


def _steps(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(job, step) for job, spec in (doc.get("jobs") or {}).items()
            for step in spec.get("steps") or []]


def test_every_checkout_keeps_no_credentials() -> None:
    """The target's code runs in these jobs: a token left in .git/config is theirs to read."""
    assert WORKFLOWS
    found = 0
    for path in WORKFLOWS:
        for job, step in _steps(yaml.safe_load(path.read_text())):
            if str(step.get("uses", "")).startswith("actions/checkout@"):
                found += 1
                assert (step.get("with") or {}).get("persist-credentials") is False, (
                    f"{path.name}: job {job}: checkout without persist-credentials: false")
    assert found


def test_the_push_gets_its_token_from_the_environment() -> None:
    keep = (ROOT / "ci" / "keep-series.sh").read_text()
    assert "GIT_CONFIG_VALUE_0" in keep and "git config" not in keep


def test_a_table_fits_the_terminal_and_json_keeps_every_character(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`carry ci`'s table once ran past 500 columns: a failing run's summary in one cell."""
    from carry.cli import render

    summary = "failed: " + ", ".join(f"tests/test_core.py::test_case_{i}" for i in range(20))
    rows = [["good", "release", "applied", "0", "0123456789ab", summary]]
    cols = ["series", "target", "rebase", "drops", "head", "validation"]
    monkeypatch.setenv("COLUMNS", "100")
    render.table("carry ci: failed", cols, rows)
    out = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in out) <= 100 and out[2].startswith("good    release  applied")
    assert out[2].endswith("\u2026")
    monkeypatch.delenv("COLUMNS")
    render.table("carry ci: failed", cols, rows)  # a pipe: every character
    assert summary in capsys.readouterr().out
