"""forge.py against GitHub's throttles and outages, through the CLI and real HTTP: which token
is read, which answers are retried (and for how long), and that each ends in one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import github_server
from tests.conftest import run_carry

TOKEN = "ghp_retry_secret_value_1234567890"
FORK = "lab/fork"


@pytest.fixture
def gh() -> Iterator[github_server.RunningServer]:
    server = github_server.start(TOKEN)
    server.state.add_pull(FORK, 9, title="consolidated", body="<!-- carry:series=demo -->",
                          head="carry/demo",
                          head_sha="9" * 40, base="main", user="carry-bot", draft=True)
    yield server
    server.stop()


@pytest.fixture
def env(gh: github_server.RunningServer, series_root: Path) -> dict[str, str]:
    (series_root / "demo").mkdir()
    (series_root / "demo" / "series.toml").write_text(
        'schema = 1\nname = "demo"\ntitle = "Demo"\n', encoding="utf-8")
    return {"GH_TOKEN": "", "GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": gh.url,
            "CARRY_SERIES_DIR": str(series_root)}


def _supersede(env: dict[str, str], *extra: str) -> tuple[int, str, str]:
    r = run_carry("supersede", "demo", "--by", "9", "--forge-repo", FORK, *extra, env=env)
    assert TOKEN not in r.out + r.err
    return r.code, r.out, r.err


def _lines(text: str) -> list[str]:
    return text.strip().splitlines()


def test_gh_token_comes_before_github_token(gh: github_server.RunningServer,
                                            env: dict[str, str]) -> None:
    env.update(GH_TOKEN=TOKEN, GITHUB_TOKEN="ghp_some_other_wrong_token")
    code, _, err = _supersede(env)
    assert code == 0, err


def test_token_env_names_the_only_variable_read(gh: github_server.RunningServer,
                                                env: dict[str, str]) -> None:
    env.update(CI_BOT_TOKEN=TOKEN, GITHUB_TOKEN="ghp_some_other_wrong_token")
    code, _, err = _supersede(env, "--token-env", "CI_BOT_TOKEN")
    assert code == 0, err
    env["CI_BOT_TOKEN"] = ""
    code, _, err = _supersede(env, "--token-env", "CI_BOT_TOKEN")
    assert code == 2 and _lines(err) == [
        "carry: error: no GitHub token: $CI_BOT_TOKEN is not set "
        "(hint: export GH_TOKEN=... or pass --token-env NAME)"]


@pytest.mark.parametrize(("status", "retry_after", "reason"), [
    (403, "1", "secondary rate limit"),
    (429, "0", "429 (too many requests)"),
    (502, None, "502 (server unavailable)"),
    (503, "0", "503 (server unavailable)"),
    (504, "0", "504 (server unavailable)"),
])
def test_throttles_and_outages_are_retried_with_one_line_each(
        status: int, retry_after: str | None, reason: str, gh: github_server.RunningServer,
        env: dict[str, str]) -> None:
    gh.state.fault(status, times=2, retry_after=retry_after, path=r"/pulls$")
    code, out, err = _supersede(env)
    assert code == 0, err
    lines = _lines(err)
    assert len(lines) == 2, err
    assert all(ln.startswith(f"carry: GitHub {reason} on pull requests of {FORK}; retry ")
               for ln in lines), err
    assert "0 other open PR(s) in lab/fork looked at" in out
    asked = [p for m, p in gh.state.requests if p == f"/repos/{FORK}/pulls"]
    assert len(asked) == 3  # two refused, the third answered


def test_secondary_limit_past_the_budget_stops_with_its_own_wait(
        gh: github_server.RunningServer, env: dict[str, str]) -> None:
    gh.state.fault(403, times=5, retry_after="120")
    code, _, err = _supersede(env, "--max-wait", "5")
    assert code == 2
    assert _lines(err) == [
        f"carry: error: GitHub secondary rate limit on repository {FORK}: it asks to wait "
        "120 s more, past the 5 s budget (0 s waited over 1 attempt(s)) "
        "(hint: run again later, or raise --max-wait)"]
    assert "UTC" not in err  # not the primary limit's reset time


def test_outage_that_outlasts_the_budget_ends_in_one_line(
        gh: github_server.RunningServer, env: dict[str, str]) -> None:
    gh.state.fault(502, times=100, retry_after="1")
    code, _, err = _supersede(env, "--max-wait", "2")
    assert code == 2
    lines = _lines(err)
    assert len(lines) == 3, err  # two retries logged, then the error
    assert lines[-1].startswith(f"carry: error: GitHub 502 (server unavailable) on "
                                f"repository {FORK}: it asks to wait 1 s more, past the 2 s")


@pytest.mark.parametrize(("status", "expect"), [
    (401, "carry: error: GitHub rejected the token (bad credentials)"),
    (500, f"carry: error: GitHub answered 500 for repository {FORK}: Server Error"),
])
def test_final_answers_are_not_retried(status: int, expect: str,
                                       gh: github_server.RunningServer,
                                       env: dict[str, str]) -> None:
    gh.state.fault(status, times=3)
    code, _, err = _supersede(env)
    assert code == 2
    assert len(_lines(err)) == 1 and _lines(err)[0].startswith(expect), err
    assert len(gh.state.requests) == 1
