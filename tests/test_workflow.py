"""The workflow's own rules, read from the YAML GitHub runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
