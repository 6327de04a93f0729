"""`carry trailers --signoff` signs only the running user's own patches, never another author's,
leaves a patch the policy keeps unamended unless --force, keeps every other byte, and writes
the next version; `check --dco` and `pr` to upstream say what is missing."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from carry.series.manifest import Policy, Repository, TrailerException
from tests.conftest import TOBY, CommitBuilder, git, run_carry

ME = ("Me Self", "me@example.com")
SOB = b"Signed-off-by: Me Self <me@example.com>"
MESSAGES = {  # patch number: (author, message)
    1: (TOBY, "Toby's fix\n\nNo sign-off yet.\n"),
    2: (ME, "My fix\n\nBody.\n"),
    3: (ME, "Published without trailers\n\nLeft unamended.\n"),
    4: (ME, "Quotes a separator\n\nAbove\n---\nBelow\n"),  # kept in X-Carry-Message
    5: (ME, "Already signed\n\nBody.\n\nSigned-off-by: Me Self <me@example.com>\n"),
}


@pytest.fixture
def signing(upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path,
            monkeypatch: pytest.MonkeyPatch) -> tuple[CommitBuilder, Path, list[str]]:
    """Series `demo` of MESSAGES in a series checkout whose git user is ME."""
    checkout = series_root.parent
    git(checkout, "init", "-q")
    git(checkout, "config", "user.name", ME[0])
    git(checkout, "config", "user.email", ME[1])
    monkeypatch.delenv("GIT_COMMITTER_NAME")  # git's identity comes from user.* alone
    monkeypatch.delenv("GIT_COMMITTER_EMAIL")
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    originals = []
    for n, (author, message) in MESSAGES.items():
        originals.append(upstream.commit(message, {f"src/p{n}.py": f"N = {n}\n"},
                                         author=author))
    upstream.checkout("main")
    make_series(upstream, "feature", upstream=Repository(repo="acme/widget"),
                policy=Policy(exceptions=[TrailerException(3, ["Signed-off-by"],
                                                           "left unamended, as published")]))
    return upstream, series_root, originals


def _files(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((root / "demo" / "patches").iterdir())}


def _applied(up: CommitBuilder, root: Path, branch: str) -> list[tuple[str, bytes]]:
    r = run_carry("apply", "demo", "--repo", str(up.path), "--onto", "base", "--branch", branch,
                  "--series-dir", str(root))
    assert r.code == 0, r.err
    shas = git(up.path, "rev-list", "--reverse", f"base..{branch}").split()
    return [(git(up.path, "log", "-1", "--format=%an <%ae> %ad", "--date=raw", s),
             subprocess.run(["git", "log", "-1", "--format=%B", s], cwd=up.path, check=True,
                            capture_output=True).stdout) for s in shas]


def test_signoff_signs_only_my_patches_and_keeps_every_other_byte(
        signing: tuple[CommitBuilder, Path, list[str]]) -> None:
    up, root, _ = signing
    before = _files(root)
    names = sorted(before)
    assert b"X-Carry-Message" in before[names[3]]
    dry = run_carry("trailers", "demo", "--signoff", "--dry-run", "--series-dir", str(root))
    assert dry.code == 0, dry.err
    assert _files(root) == before and "dry run" in dry.out
    old = _applied(up, root, "old")

    r = run_carry("trailers", "demo", "--signoff", "--json", "--series-dir", str(root))
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["signer"] == "Me Self <me@example.com>" and data["version"] == 2
    assert [p["action"] for p in data["patches"]] == [
        "others", "added", "excepted", "added", "signed"]
    assert [p["file"] for p in data["missing"]] == [names[0], names[2]]
    after = _files(root)
    for i in (0, 2, 4):  # Toby's, the excepted one, the one already signed: untouched
        assert after[names[i]] == before[names[i]]
    assert after[names[1]] == before[names[1]].replace(b"Body.\n---\n",
                                                       b"Body.\n\n" + SOB + b"\n---\n", 1)
    assert git(root.parent, "tag", "--list", "series/demo/*").split() == [
        "series/demo/v1", "series/demo/v2"]

    new = _applied(up, root, "new")
    assert [who for who, _ in new] == [who for who, _ in old]  # authors and dates kept
    for i, ((_, was), (_, now)) in enumerate(zip(old, new, strict=True)):
        want = was if i in (0, 2, 4) else was.rstrip(b"\n") + b"\n\n" + SOB + b"\n"
        assert now.rstrip(b"\n") == want.rstrip(b"\n"), (i, now)
    assert b"Above\n---\nBelow\n\n" + SOB in new[3][1]

    again = run_carry("trailers", "demo", "--signoff", "--series-dir", str(root))
    assert again.code == 0 and "unchanged at v2" in again.out and _files(root) == after
    text = run_carry("trailers", "demo", "--series-dir", str(root)).out
    assert "only Toby Mao can add it" in text and "left unamended, as published" in text


def test_force_signs_the_excepted_patch_but_never_anothers(
        signing: tuple[CommitBuilder, Path, list[str]]) -> None:
    up, root, _ = signing
    before = _files(root)
    r = run_carry("trailers", "demo", "--signoff", "--force", "--json", "--series-dir",
                  str(root))
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [p["action"] for p in data["patches"]] == [
        "others", "added", "added", "added", "signed"]
    after = _files(root)
    first = sorted(before)[0]
    assert after[first] == before[first]
    assert [p["file"] for p in data["missing"]] == [first]


def test_the_signer_is_the_repo_given(signing: tuple[CommitBuilder, Path, list[str]]) -> None:
    up, root, _ = signing
    r = run_carry("trailers", "demo", "--signoff", "--dry-run", "--json", "--repo",
                  str(up.path), "--series-dir", str(root))
    data = json.loads(r.out)
    assert data["signer"] == "C O Mitter <committer@example.com>"  # up's user.*
    assert "added" not in [p["action"] for p in data["patches"]]  # it authored none


def test_check_dco_and_pr_to_upstream_name_what_is_missing(
        signing: tuple[CommitBuilder, Path, list[str]]) -> None:
    up, root, _ = signing
    names = sorted(_files(root))
    r = run_carry("check", "demo", "--dco", "--series-dir", str(root))
    assert r.code == 1
    assert f"{names[0]} (Toby Mao <toby@example.com>)" in r.out
    assert "DCO: no Signed-off-by from its author Me Self" in r.out
    assert "DCO" not in run_carry("check", "demo", "--series-dir", str(root)).out
    assert run_carry("import", "clean", "--repo", str(up.path), "--range", "feature~1..feature",
                     "--series-dir", str(root)).code == 0  # patch 5 alone: signed by its author
    clean = run_carry("check", "clean", "--dco", "--series-dir", str(root))
    assert clean.code == 0 and "DCO: every patch is signed off by its author" in clean.out

    git(up.path, "branch", "carried", "feature")
    env = {"GH_TOKEN": "", "GITHUB_TOKEN": ""}
    pr = ["pr", "demo", "--repo", str(up.path), "--branch", "carried", "--base", "main",
          "--dry-run", "--series-dir", str(root)]
    refused = run_carry(*pr, "--forge-repo", "acme/widget", env=env)
    assert refused.code == 2 and refused.out == ""
    [line] = refused.err.splitlines()
    assert "acme/widget checks DCO" in line and "--allow-no-dco" in line
    for i, who in ((0, "Toby Mao"), (1, "Me Self"), (2, "Me Self"), (3, "Me Self")):
        assert f"demo/{names[i]} ({who} <" in line
    assert names[4] not in line
    allowed = run_carry(*pr, "--forge-repo", "acme/widget", "--allow-no-dco", env=env)
    assert allowed.code == 0, allowed.err
    fork = run_carry(*pr, "--forge-repo", "me/widget", env=env)  # not upstream: no DCO check
    assert fork.code == 0, fork.err


KELVIN = "\u212aim@example.com"  # `K` is the Kelvin sign: casefold() makes it kim@


@pytest.fixture
def lookalikes(upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path,
               monkeypatch: pytest.MonkeyPatch) -> Path:
    """Patch 1 by Kelvin-sign Kim, unsigned; patch 2 by strasse@, signed off by straße@;
    patch 3 by Kim in ASCII upper case, signed off by kim@. The checkout's user is kim@."""
    checkout = series_root.parent
    git(checkout, "init", "-q")
    git(checkout, "config", "user.name", "Kim")
    git(checkout, "config", "user.email", "kim@example.com")
    monkeypatch.delenv("GIT_COMMITTER_NAME")
    monkeypatch.delenv("GIT_COMMITTER_EMAIL")
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("Kelvin's fix\n", {"src/k.py": "K = 1\n"}, author=("Kim", KELVIN))
    upstream.commit("Strasse\n\nSigned-off-by: S <stra\u00dfe@example.com>\n",
                    {"src/s.py": "S = 1\n"}, author=("S", "strasse@example.com"))
    upstream.commit("Upper\n\nSigned-off-by: Kim <kim@example.com>\n",
                    {"src/u.py": "U = 1\n"}, author=("Kim", "KIM@Example.COM"))
    upstream.checkout("main")
    make_series(upstream, "feature", upstream=Repository(repo="acme/widget"))
    return series_root


def test_emails_compare_exactly_but_for_ascii_case(lookalikes: Path) -> None:
    """A Kelvin-sign `Kim@` is not kim@ (so kim@ never signs it), a sign-off by straße@ is
    not strasse@'s; only ASCII case is ignored."""
    r = run_carry("trailers", "demo", "--signoff", "--json", "--series-dir", str(lookalikes))
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert [p["action"] for p in data["patches"]] == ["others", "others", "signed"]
    assert data["changed"] is False
    check = run_carry("check", "demo", "--dco", "--series-dir", str(lookalikes))
    assert check.code == 1 and "Traceback" not in check.err
    dco_lines = [ln for ln in check.out.splitlines() if "DCO: no Signed-off-by" in ln]
    assert len(dco_lines) == 2, check.out


@pytest.mark.parametrize("email", ["", "kim", "kim @example.com"])
def test_a_signer_without_a_well_formed_email_is_refused(lookalikes: Path, email: str) -> None:
    git(lookalikes.parent, "config", "user.email", email)
    before = sorted(p.read_bytes() for p in (lookalikes / "demo/patches").iterdir())
    r = run_carry("trailers", "demo", "--signoff", "--series-dir", str(lookalikes))
    assert r.code == 2 and "Traceback" not in r.err, r.out + r.err
    assert r.err.startswith("carry: error: ") and len(r.err.strip().splitlines()) <= 2, r.err
    assert sorted(p.read_bytes() for p in (lookalikes / "demo/patches").iterdir()) == before


@pytest.mark.parametrize("source", ["env", "global config"])
def test_outside_a_checkout_the_signer_is_gits_own_identity(
        upstream: CommitBuilder, make_series: Callable[..., Any], series_root: Path,
        monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    """A series folder in no git checkout: git still knows the user from GIT_COMMITTER_* or
    the global config (`git var GIT_COMMITTER_IDENT`), so --signoff signs as them."""
    monkeypatch.delenv("GIT_COMMITTER_NAME")
    monkeypatch.delenv("GIT_COMMITTER_EMAIL")
    if source == "env":
        monkeypatch.setenv("GIT_COMMITTER_NAME", ME[0])
        monkeypatch.setenv("GIT_COMMITTER_EMAIL", ME[1])
    else:
        (Path(os.environ["HOME"]) / ".gitconfig").write_text(
            f"[user]\n\tname = {ME[0]}\n\temail = {ME[1]}\n")
    upstream.checkout("base")
    git(upstream.path, "checkout", "-q", "-b", "feature")
    upstream.commit("My fix\n\nBody.\n", {"src/p.py": "P = 1\n"}, author=ME)
    upstream.checkout("main")
    make_series(upstream, "feature")
    assert git(series_root, "rev-parse", "--is-inside-work-tree", check=False) != "true"
    r = run_carry("trailers", "demo", "--signoff", "--json", "--series-dir", str(series_root))
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["signer"] == "Me Self <me@example.com>" and data["version"] == 2
    assert [p["action"] for p in data["patches"]] == ["added"]
    [patch] = (series_root / "demo/patches").iterdir()
    assert SOB in patch.read_bytes()



def test_the_pr_dco_refusal_names_a_few_and_counts_the_rest(
        upstream: CommitBuilder, series_root: Path) -> None:
    """Walk: on the 53-patch fork series the refusal named every patch on one line."""
    from carry.base.errors import CarryError
    from carry.intake import importer
    from carry.series import dco
    from carry.series import store as seriesmod

    git(upstream.path, "checkout", "-q", "-b", "feature", "base")
    for i in range(8):
        upstream.commit(f"Unsigned {i}", {f"src/u{i}.py": f"U = {i}\n"})
    importer.run(series_root, "many", importer.Source(str(upstream.path), range="base..feature"))
    s = seriesmod.find(series_root, "many")
    s.manifest.upstream.repo = "acme/widget"
    with pytest.raises(CarryError) as caught:
        dco.refuse_unsigned([s], "acme/widget")
    line = caught.value.line()
    assert "8 patch(es) lack" in line and "and 3 more" in line and "0006-" not in line
