"""The bad-input walk: every command fed a table of malformed inputs (files, names, refs,
manifests, states, URLs, HTTP answers), each through the real CLI in its own process.

Each must end in one line on stderr (`carry: error: ...`), exit 2, no traceback and no
internal error, with the series folder, the repository's and its remote's refs byte-for-byte
unchanged, no request that writes to GitHub, and no command run that an input smuggled in
as a git option (it would create `{mark}`). Run with -s to see the counts: inputs tried,
clean errors.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests import github_server
from tests.conftest import FORGE_TOKEN, CommitBuilder, git

Mutate = Callable[[Path], None]
HEX = "a" * 64


@dataclass
class Case:
    label: str
    args: list[str]
    mutate: Mutate | None = None
    env: dict[str, str] = field(default_factory=dict)
    http: tuple[int, bytes] | None = None  # what the GitHub double answers every request with
    needle: str = ""
    faults: tuple[tuple[str, int, bytes], ...] = ()  # (path regex, status, raw answer)
    read_only: bool = False  # the series folder mounted read-only (root ignores file modes)
    absent: str = ""  # must appear nowhere in stdout or stderr (a token)
    # A FIFO made at {tmp}/NAME, and what a writer feeds it: a carry that opens it for reading
    # gets that (it never hangs the walk); one that refuses it never reads it.
    fifo: tuple[str, bytes] | None = None
    git_file: tuple[str, bytes] | None = None  # written under the repository's .git for the run


@dataclass
class World:
    up: CommitBuilder
    pristine: Path
    tmp: Path
    gh: github_server.RunningServer
    sha256: Path
    plain: Path
    afile: Path


# -- mutations of a copy of the series folder --------------------------------------------------


def _manifest(text: str | bytes) -> Mutate:
    def go(root: Path) -> None:
        data = text.encode() if isinstance(text, str) else text
        (root / "demo" / "series.toml").write_bytes(data)
    return go


def _edit_manifest(old: str, new: str) -> Mutate:
    def go(root: Path) -> None:
        p = root / "demo" / "series.toml"
        text = p.read_text()
        assert old in text, (old, text)
        p.write_text(text.replace(old, new, 1))
    return go


def _append_manifest(extra: str) -> Mutate:
    def go(root: Path) -> None:
        p = root / "demo" / "series.toml"
        p.write_text(p.read_text() + extra)
    return go


def _patch(edit: Callable[[bytes], bytes]) -> Mutate:
    def go(root: Path) -> None:
        p = sorted((root / "demo" / "patches").iterdir())[0]
        p.write_bytes(edit(p.read_bytes()))
    return go


def _cut_after(marker: bytes) -> Mutate:
    return _patch(lambda d: d[:d.index(marker) + len(marker)])


def _tree(op: Callable[[Path], None]) -> Mutate:
    def go(root: Path) -> None:
        op(root / "demo")
    return go


def _mkdir(rel: str) -> Mutate:
    return _tree(lambda d: (d / rel).mkdir(parents=True))


def _symlink(rel: str, target: str) -> Mutate:
    def go(root: Path) -> None:
        p = root / "demo" / rel
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
        p.symlink_to(target)
    return go


def _replace_with_dir(rel: str) -> Mutate:
    def go(root: Path) -> None:
        p = root / "demo" / rel
        p.unlink()
        p.mkdir()
    return go


def _write(rel: str, data: bytes) -> Mutate:
    return _tree(lambda d: (d / rel).write_bytes(data))


def _mark(root: Path) -> Path:
    """The file a smuggled command creates: its existence fails the case."""
    return root.parent / "RAN"


def _remote_option(table: str, option: str) -> Mutate:
    """[TABLE].remote set to a git option that runs a command."""
    def go(root: Path) -> None:
        p = root / "demo" / "series.toml"
        value = option.replace("{mark}", str(_mark(root)))
        p.write_text(p.read_text() + f'\n[{table}]\nrepo = "lab/fork"\nremote = "{value}"\n'
                     'branch = "main"\n\n[[target]]\nname = "rel"\nref = "base"\n'
                     'kind = "release"\n')
    return go


def _loop_summary(option: str) -> Mutate:
    """A cell's summary that `ci loop --open-pr` acts on (a clean release target), with the
    manifest's fork remote an option: the loop pushes to that remote."""
    def go(root: Path) -> None:
        import json
        import tomllib

        _remote_option("fork", option)(root)
        base = tomllib.loads((root / "demo" / "series.toml").read_text())["base"]["commit"]
        row = {"series": "demo", "target": "rel", "onto": base, "rebase": "applied",
               "validate": "passed", "ref": "base"}
        (root.parent / "summary.json").write_text(json.dumps({"rows": [row]}))
    return go


# -- the table ---------------------------------------------------------------------------------

APPLY = ["apply", "demo", "--repo", "{repo}", "--onto", "base", "--branch", "new"]
CHECK = ["check", "demo"]
SHOW = ["series", "show", "demo"]
REBASE = ["rebase", "demo", "--repo", "{repo}", "--onto", "base"]
IMPORT = ["import", "demo", "--repo", "{repo}", "--range", "base..feature"]
RANGE = ["range-diff", "demo", "v1", "--repo", "{repo}"]
VALIDATE = ["validate", "demo", "--repo", "{repo}", "--onto", "base", "--engine", "local"]
PR = ["pr", "demo", "--repo", "{repo}", "--branch", "carried", "--forge-repo", "lab/fork",
      "--base", "main", "--remote", "{origin}"]
SUPERSEDE = ["supersede", "demo", "--by", "3", "--forge-repo", "lab/fork"]
RELEASES = ["releases", "demo", "--repo", "{repo}", "--index-url", "http://127.0.0.1:9/simple"]

BAD_NAMES = ["../outside/evil", "/tmp/abs", "a" * 300, "a..b", ".hidden", "x/y", "name.lock",
             "-x", "spa ce", "ünïcode", ""]
NAME_COMMANDS = [
    ["check", "{n}"], ["series", "show", "{n}"],
    ["import", "{n}", "--repo", "{repo}", "--range", "base..feature"],
    ["apply", "{n}", "--repo", "{repo}", "--onto", "base", "--branch", "b"],
    ["rebase", "{n}", "--repo", "{repo}", "--onto", "base"],
    ["range-diff", "{n}", "v1", "--repo", "{repo}"],
    ["validate", "{n}", "--repo", "{repo}", "--onto", "base", "--engine", "local"],
    ["init", "{n}", "--upstream", "o/u", "--fork", "o/f"],
    ["supersede", "{n}", "--by", "3", "--forge-repo", "lab/fork"],
]

MANIFESTS: dict[str, Mutate] = {
    "not-toml": _manifest("name = [unterminated\n"),
    "empty": _manifest(""),
    "binary": _manifest(b"\xff\xfe\x00\x01"),
    "not-utf8": _manifest(b'schema = 1\nname = "demo"\ntitle = "caf\xe9"\n'),
    "schema-2": _edit_manifest("schema = 1", "schema = 2"),
    "schema-str": _edit_manifest("schema = 1", 'schema = "1"'),
    "version-str": _edit_manifest("version = 1", 'version = "one"'),
    "version-neg": _edit_manifest("version = 1", "version = -1"),
    "name-int": _edit_manifest('name = "demo"', "name = 5"),
    "name-other": _edit_manifest('name = "demo"', 'name = "other"'),
    "name-evil": _edit_manifest('name = "demo"', 'name = "../evil"'),
    "title-list": _edit_manifest('title = "', 'title = ["'),
    "unknown-key": _append_manifest("\nrequried = 1\n"),
    "base-not-hex": _edit_manifest('commit = "', 'commit = "zz'),
    "target-not-table": _append_manifest('\ntarget = ["x"]\n'),
    "target-both": _append_manifest('\n[[target]]\nname = "t"\nref = "a"\ntags = "v*"\n'),
    "target-neither": _append_manifest('\n[[target]]\nname = "t"\n'),
    "target-latest-str": _append_manifest('\n[[target]]\nname = "t"\ntags = "v*"\n'
                                          'latest = "2"\n'),
    "prov-bad-pr": _append_manifest('\n[[provenance]]\npr = "12"\nrole = "origin"\n'),
    "prov-bad-role": _append_manifest('\n[[provenance]]\npr = "o/r#1"\nrole = "boss"\n'),
    "prov-patches-str": _append_manifest('\n[[provenance]]\npr = "o/r#1"\nrole = "origin"\n'
                                         'patches = ["1"]\n'),
    "expect-no-author": _append_manifest("\n[[expect]]\npatch = 1\n"),
    "policy-required-int": _edit_manifest('required = [', 'required = [5, '),
    "changelog-no-version": _append_manifest('\n[[changelog]]\ndate = "x"\n'),
    "test-suites-str": _edit_manifest("[test]\n", '[test]\nsuites = "tests"\n'),
    "fork-repo-dotdot": _append_manifest('\n[fork]\nrepo = "../../x"\n'),
    "upstream-repo-newline": _append_manifest('\n[upstream]\nrepo = "a/b\\n"\n'),
    "manifest-dir": _replace_with_dir("series.toml"),
    "manifest-link": _symlink("series.toml", "/etc/hostname"),
    "manifest-dangling": _symlink("series.toml", "/nonexistent/series.toml"),
    "fork-remote-option": _remote_option("fork", "--upload-pack=touch {mark}"),
    "upstream-remote-option": _remote_option("upstream", "--upload-pack=touch {mark}"),
}

FILES: dict[str, Mutate] = {
    "patch-not-mail": _patch(lambda d: b"this is not a patch\n"),
    "patch-empty": _patch(lambda d: b""),
    "patch-no-diff": _patch(lambda d: d[:d.index(b"\n---\n")] + b"\n"),
    "patch-cut-after-sep": _cut_after(b"\n---\n"),
    "patch-cut-in-stat": _cut_after(b" | "),
    "patch-cut-after-stat": _cut_after(b"changed, "),
    "patch-cut-after-diff-git": _cut_after(b"diff --git a/src/core.py b/src/core.py\n"),
    "patch-cut-after-index": _cut_after(b" 100644\n"),
    "patch-cut-after-minus": _cut_after(b"--- a/src/core.py\n"),
    "patch-cut-after-plus": _cut_after(b"+++ b/src/core.py\n"),
    "patch-cut-after-hunk-head": _cut_after(b"@@\n"),
    "patch-stat-more-files": _patch(lambda d: d.replace(b" 1 file changed", b" 2 files changed")),
    "patch-stat-more-lines": _patch(lambda d: d.replace(b"1 insertion(+)", b"7 insertions(+)")),
    "patch-no-date": _patch(lambda d: b"".join(ln for ln in d.splitlines(True)
                                               if not ln.startswith(b"Date: "))),
    "patch-bad-date": _patch(lambda d: d.replace(b"Date: ", b"Date: yesterday ", 1)),
    "patch-bad-b64": _patch(lambda d: d.replace(b"\n\n", b"\nX-Carry-Message: !!!\n\n", 1)),
    "patch-bad-author-hdr": _patch(lambda d: d.replace(
        b"\n\n", b"\nX-Carry-Author: bm8gZGF0ZQ==\n\n", 1)),
    "patch-author-newline": _patch(lambda d: d.replace(
        b"\n\n", b"\nX-Carry-Author: QSA8YUBiPiAxIC0wMDAwCnBhcmVudCB4\n\n", 1)),
    # numbers int() refuses (more than 4,300 digits), a date no calendar holds
    "patch-hunk-5000-digits": _patch(lambda d: d.replace(b"@@ -1,2 ", b"@@ -1," + b"2" * 5000
                                                         + b" ", 1)),
    "patch-stat-5000-digits": _patch(lambda d: d.replace(b" 1 file changed",
                                                         b" " + b"1" * 5000 + b" files changed")),
    "patch-date-year-huge": _patch(lambda d: re.sub(rb"(?m)^Date: .*$",
                                                    b"Date: Thu, 1 Jan 99999999 00:00:00 +0000",
                                                    d, count=1)),
    "patch-dir": _mkdir("patches/0005-x.patch"),
    "patch-dangling": _symlink("patches/0009-dangle.patch", "/nonexistent"),
    "patch-link-out": _symlink("patches/0009-out.patch", "/etc/hostname"),
    "patch-bad-name": _write("patches/notapatch.txt", b"x"),
    "patch-dup-number": _write("patches/0001-again.patch", b"x"),
    "patch-fifo": _tree(lambda d: os.mkfifo(d / "patches" / "0007-fifo.patch")),
    "patches-is-file": _tree(lambda d: (shutil.rmtree(d / "patches"),
                                        (d / "patches").write_bytes(b"x"))),
    "patches-link": _symlink("patches", "/tmp"),
    "cover-latin1": _write("cover.md", b"caf\xe9\n"),
    "cover-link": _symlink("cover.md", "/proc/self/environ"),
    "cover-dir": _mkdir("cover.md"),
    "series-link": lambda root: (shutil.rmtree(root / "demo"),
                                 (root / "demo").symlink_to("/tmp")),
}


# -- F13: untrusted documents, numbers, URLs and refs -------------------------------------------

DEEP = b"[" * 3000 + b"]" * 3000
URL_TOKEN = "urltok_0123456789abcdef"
LEDGER = b'{"schema": 1, "records": []}\n'
REPORT = b'{"series": "demo", "head_tree": "{carried_tree}", "steps": [], "status": "passed"}'
LOOP = ["ci", "loop", "{tmp}/summary.json", "--repo", "{repo}", "--open-pr", "--dry-run"]
KEPT = "demo/.versions/v1"


def _row(**fields: object) -> bytes:
    import json

    row = {"series": "demo", "target": "t", "onto": "base", "rebase": "applied", **fields}
    return json.dumps({"status": "passed", "rows": [row], "out": "x"}).encode()


def _at(rel: str, data: bytes) -> Mutate:
    """A file beside the series folder ({tmp}/REL)."""
    def go(root: Path) -> None:
        (root.parent / rel).write_bytes(data)
    return go


def _kept(edit: Callable[[Path, Path], None]) -> Mutate:
    """Change the version kept outside git (`.versions/v1`); `edit` gets it and a folder
    outside the series."""
    def go(root: Path) -> None:
        outside = root.parent / "outside"
        outside.mkdir(exist_ok=True)
        edit(root / KEPT, outside)
    return go


def _link_out(rel: str) -> Mutate:
    """Move `rel` (under the kept version's series) out of it and link to where it went."""
    def edit(kept: Path, outside: Path) -> None:
        src = kept.parent.parent / rel
        dst = outside / Path(rel).name
        shutil.move(src, dst)
        src.symlink_to(dst)
    return _kept(edit)


def _f13_cases() -> list[Case]:
    """The classes an attack found: 3,000-deep documents, summaries of the wrong types, FIFOs,
    links out of a series, numbers int() refuses, URLs urllib refuses, names a `$` anchor
    let through, and credentials in a --repo URL."""
    deep_manifest = "\nx = " + "[" * 3000 + "]" * 3000 + "\n"
    deep_table = "\nx = " + "{a = " * 3000 + "1" + "}" * 3000 + "\n"
    cases = [Case(f"f13 manifest deep {label} {cmd[0]}", cmd, _append_manifest(text))
             for label, text in (("array", deep_manifest), ("table", deep_table))
             for cmd in (CHECK, SHOW, APPLY, ["status", "demo"])]
    cases += [
        Case("f13 ledger deep matrix", ["ci", "matrix", "--repo", "{repo}", "--ledger",
                                        "{tmp}/l.json"], _at("l.json", DEEP)),
        Case("f13 ledger deep releases", RELEASES + ["--ledger", "{tmp}/l.json"],
             _at("l.json", DEEP)),
        Case("f13 ledger deep merge", ["ci", "merge-ledger", "{tmp}/l.json", "--ledger",
                                       "{tmp}/mine.json"], _at("l.json", DEEP)),
        Case("f13 ledger fifo matrix", ["ci", "matrix", "--repo", "{repo}", "--ledger",
                                        "{tmp}/l.json"], fifo=("l.json", LEDGER)),
        Case("f13 ledger fifo releases", RELEASES + ["--ledger", "{tmp}/l.json"],
             fifo=("l.json", LEDGER)),
        Case("f13 summary deep", LOOP, _at("summary.json", DEEP)),
        Case("f13 summary rows deep", LOOP,
             _at("summary.json", b'{"rows": ' + DEEP + b"}")),
        Case("f13 summary series null", LOOP, _at("summary.json", _row(series=None))),
        Case("f13 summary series list", LOOP, _at("summary.json", _row(series=["demo"]))),
        Case("f13 summary series int", LOOP, _at("summary.json", _row(series=5))),
        Case("f13 summary fifo", LOOP, fifo=("summary.json", b'{"rows": []}')),
        Case("f13 report deep", PR + ["--dry-run", "--validation", "{tmp}/report.json"],
             _report(DEEP)),
        Case("f13 report fifo", PR + ["--dry-run", "--validation", "{tmp}/r.json"],
             fifo=("r.json", REPORT)),
        Case("f13 state deep continue", ["rebase", "demo", "--repo", "{repo}", "--continue"],
             git_file=("carry/rebase/demo/base.json", DEEP)),
        Case("f13 state deep status", ["status", "demo", "--repo", "{repo}"],
             git_file=("carry/rebase/demo/base.json", DEEP)),
        Case("f13 index deep", RELEASES[:4] + ["--package", "vllm", "--index-url",
                                               "{gh}/simple"],
             http=(200, b'{"files": ' + DEEP + b"}")),
        Case("f13 since 5000 digits", RELEASES + ["--since", "1" * 5000]),
        Case("f13 index ipv6 bracket", RELEASES[:4] + ["--package", "vllm", "--index-url",
                                                       "http://[::1/simple"]),
        Case("f13 api ipv6 bracket pr", PR + ["--dry-run"],
             env={"GITHUB_API_URL": "http://[::1/api"}),
        Case("f13 api ipv6 bracket supersede", SUPERSEDE,
             env={"GITHUB_API_URL": "http://[::1/api"}),
        Case("f13 range-diff v-superscript", ["range-diff", "demo", "v\u00b2", "--repo",
                                              "{repo}"]),
        Case("f13 range-diff v5000 digits", ["range-diff", "demo", "v" + "1" * 5000,
                                             "--repo", "{repo}"]),
        Case("f13 kept manifest not toml", RANGE,
             _kept(lambda k, o: (k / "series.toml").write_text("name = [\n"))),
        Case("f13 kept manifest deep", RANGE,
             _kept(lambda k, o: (k / "series.toml").write_text(
                 (k / "series.toml").read_text() + deep_manifest))),
        Case("f13 kept manifest latin1", RANGE,
             _kept(lambda k, o: (k / "series.toml").write_bytes(b"title = 'caf\xe9'\n"))),
        Case("f13 kept versions link out", RANGE, _link_out(".versions")),
        Case("f13 kept manifest link out", RANGE, _link_out(".versions/v1/series.toml")),
        Case("f13 kept patches link out", RANGE, _link_out(".versions/v1/patches")),
    ]
    for cmd in (SUPERSEDE, PR + ["--dry-run"]):
        for bad in ("../../x", "lab/fork\n", "lab/.."):
            args = [a if a != "lab/fork" else bad for a in cmd]
            cases.append(Case(f"f13 forge-repo {bad!r} {cmd[0]}", args, needle="OWNER/REPO"))
    for flag in ("--upstream", "--fork"):
        args = ["init", "fresh", "--upstream", "o/u", "--fork", "o/f"]
        args[args.index(flag) + 1] = "a/b\n"  # `^...$` took it: `$` matches before a newline
        cases.append(Case(f"f13 init {flag} newline", args))
    url = f"https://x:{URL_TOKEN}@127.0.0.1:9/r.git"
    for cmd in (["status", "demo", "--repo", url],
                ["init", "fresh", "--upstream", "o/u", "--fork", "o/f", "--repo", url],
                ["apply", "demo", "--repo", url, "--onto", "base", "--branch", "n"],
                ["check", "demo", "--against-repo", url],
                SUPERSEDE + ["--repo", url],
                ["validate", "demo", "--repo", url, "--onto", "base", "--engine", "local"],
                ["rebase", "demo", "--repo", url, "--onto", "base"],
                ["range-diff", "demo", "v1", "--repo", url],
                ["releases", "demo", "--repo", url]):
        cases.append(Case(f"f13 repo url token {cmd[0]}", cmd, absent=URL_TOKEN))
    return cases


def _cases() -> list[Case]:
    cases: list[Case] = []
    for n in BAD_NAMES:
        for cmd in NAME_COMMANDS:
            cases.append(Case(f"name {n[:12]!r} {cmd[0]}", [a.replace("{n}", n) for a in cmd]))
    for label, mutate in MANIFESTS.items():
        for cmd in (CHECK, APPLY, SHOW, REBASE, IMPORT):
            cases.append(Case(f"manifest {label} {cmd[0]}", cmd, mutate))
    for label, mutate in FILES.items():
        for cmd in (CHECK, APPLY):
            cases.append(Case(f"files {label} {cmd[0]}", cmd, mutate))
    for cmd in (REBASE, PR + ["--dry-run"], RANGE):
        for label in ("patch-cut-after-index", "patch-dir", "cover-latin1", "manifest-dir"):
            cases.append(Case(f"files {label} {cmd[0]}", cmd, (FILES | MANIFESTS)[label]))
    refs = [
        ("apply onto nope", ["apply", "demo", "--repo", "{repo}", "--onto", "nope", "--branch",
                             "n"]),
        ("apply onto empty", ["apply", "demo", "--repo", "{repo}", "--onto", "", "--branch",
                              "n"]),
        ("apply onto a tree", ["apply", "demo", "--repo", "{repo}", "--onto", "base^{tree}",
                               "--branch", "n"]),
        ("apply branch a..b", ["apply", "demo", "--repo", "{repo}", "--onto", "base", "--branch",
                               "a..b"]),
        ("apply branch -x", ["apply", "demo", "--repo", "{repo}", "--onto", "base",
                             "--branch=-x"]),
        ("apply branch exists", ["apply", "demo", "--repo", "{repo}", "--onto", "base",
                                 "--branch", "feature"]),
        ("apply branch lock", ["apply", "demo", "--repo", "{repo}", "--onto", "base", "--branch",
                               "x.lock"]),
        ("rebase onto nope", ["rebase", "demo", "--repo", "{repo}", "--onto", "nope"]),
        ("rebase branch -x", ["rebase", "demo", "--repo", "{repo}", "--onto", "base",
                              "--branch=-x"]),
        ("rebase unknown target", ["rebase", "demo", "--repo", "{repo}", "--target", "nope"]),
        ("rebase continue nothing", ["rebase", "demo", "--repo", "{repo}", "--continue"]),
        ("rebase abort nothing", ["rebase", "demo", "--repo", "{repo}", "--abort"]),
        ("rebase skip nothing", ["rebase", "--repo", "{repo}", "--skip"]),
        ("import range nope", ["import", "demo", "--repo", "{repo}", "--range", "base..nope"]),
        ("import range three dots", ["import", "demo", "--repo", "{repo}", "--range",
                                     "base...feature"]),
        ("import range no dots", ["import", "demo", "--repo", "{repo}", "--range", "feature"]),
        ("import range empty", ["import", "demo", "--repo", "{repo}", "--range", "feature..base"]),
        ("import range option", ["import", "demo", "--repo", "{repo}", "--range=--all..x"]),
        ("import two sources", ["import", "demo", "--repo", "{repo}", "--range", "base..feature",
                                "--branch", "feature"]),
        ("import no source", ["import", "demo", "--repo", "{repo}"]),
        ("import branch no base", ["import", "new", "--repo", "{repo}", "--branch", "feature"]),
        ("import branch nope", ["import", "demo", "--repo", "{repo}", "--branch", "nope",
                                "--base", "base"]),
        ("import pr no remote", ["import", "demo", "--repo", "{repo}", "--pr", "7", "--base",
                                 "base"]),
        ("import pr negative", ["import", "demo", "--repo", "{repo}", "--pr", "-7", "--base",
                                "base"]),
        ("import url nothing", ["import", "demo", "--repo", "file:///nonexistent/x",
                                "--range", "a..b"]),
        ("range-diff v9", ["range-diff", "demo", "v9", "--repo", "{repo}"]),
        ("range-diff vX", ["range-diff", "demo", "vX", "--repo", "{repo}"]),
        ("range-diff against nope", ["range-diff", "demo", "v1", "--repo", "{repo}",
                                     "--against", "nope..x"]),
        ("validate onto and commit", ["validate", "demo", "--repo", "{repo}", "--onto", "base",
                                      "--commit", "feature"]),
        ("validate commit not on onto", ["validate", "demo", "--repo", "{repo}", "--commit",
                                         "feature..base"]),
        ("validate neither", ["validate", "demo", "--repo", "{repo}", "--engine", "local"]),
        ("validate engine lxc", ["validate", "demo", "--repo", "{repo}", "--onto", "base",
                                 "--engine", "lxc"]),
        ("validate python nope", ["validate", "demo", "--repo", "{repo}", "--onto", "base",
                                  "--engine", "local", "--python", "/nonexistent/python"]),
        ("check against nope", ["check", "demo", "--against-repo", "/nonexistent/repo"]),
        ("ci no repo", ["ci"]),
        ("ci out /dev/null/x", ["ci", "--repo", "{repo}", "--out", "/dev/null/x", "--engine",
                                "local", "--onto", "base"]),
        ("ci run unknown target", ["ci", "run", "demo", "nope", "--repo", "{repo}"]),
        ("ci matrix bad ledger", ["ci", "matrix", "--repo", "{repo}", "--ledger", "{afile}"]),
        ("ci merge-ledger nope", ["ci", "merge-ledger", "/nonexistent/l.json", "--ledger",
                                  "{tmp}/ledger.json"]),
        ("releases bad ledger", RELEASES + ["--ledger", "{afile}"]),
        ("init twice", ["init", "demo", "--upstream", "o/u", "--fork", "o/f"]),
        ("init bad repo", ["init", "fresh", "--upstream", "o/u", "--fork", "o/f", "--repo",
                           "/nonexistent/r"]),
        ("usage missing option", ["apply", "demo"]),
        ("usage unknown option", ["check", "demo", "--bogus"]),
        ("usage extra argument", ["check", "demo", "extra"]),
        ("usage unknown command", ["frobnicate"]),
        ("usage bad int", ["supersede", "demo", "--by", "many", "--forge-repo", "o/r"]),
        ("series-dir file check", ["check", "demo", "--series-dir", "{afile}"]),
        ("series-dir file list", ["series", "list", "--series-dir", "{afile}"]),
        ("series-dir file import", IMPORT + ["--series-dir", "{afile}"]),
        ("series-dir file rebase", REBASE + ["--series-dir", "{afile}"]),
        ("series-dir file init", ["init", "x", "--upstream", "o/u", "--fork", "o/f",
                                  "--series-dir", "{afile}"]),
        ("series-dir file apply", APPLY + ["--series-dir", "{afile}"]),
    ]
    cases += [Case(f"refs {label}", args) for label, args in refs]
    for cmd in (IMPORT, APPLY, REBASE, RANGE, VALIDATE,
                ["check", "demo", "--against-repo", "{sha256}"]):
        args = [a if a != "{repo}" else "{sha256}" for a in cmd]
        cases.append(Case(f"sha256 {cmd[0]}", args, needle="SHA-1 repositories"))
    for where in ("{plain}", "{afile}", "/nonexistent/repo"):
        for cmd in (IMPORT, APPLY, REBASE, RANGE):
            cases.append(Case(f"repo {where} {cmd[0]}",
                              [a if a != "{repo}" else where for a in cmd]))
    for label, img in (("privileged", f"--privileged@sha256:{HEX}"), ("tag", "vllm:latest"),
                       ("short digest", "x@sha256:abc"), ("upper", f"A/B@sha256:{HEX}"),
                       ("space", f"a b@sha256:{HEX}")):
        cases.append(Case(f"image {label}", ["validate", "demo", "--repo", "{repo}", "--onto",
                                             "base", "--engine", "podman"], _image(img)))
    api = [("notaurl", "notaurl"), ("ftp", "ftp://127.0.0.1/x"), ("no scheme", "127.0.0.1:9"),
           ("file", "file:///etc/passwd"), ("empty host", "http:///api")]
    for label, url in api:
        for cmd in (SUPERSEDE, PR):
            cases.append(Case(f"api {label} {cmd[0]}", cmd, env={"GITHUB_API_URL": url}))
    tokens = [("non-latin1", "t\u20ac\u2603okenvalue"), ("latin1", "tökenvalue"),
              ("newline", "token\nvalue"), ("space", "token value")]
    for label, tok in tokens:
        for cmd in (SUPERSEDE, PR):
            cases.append(Case(f"token {label} {cmd[0]}", cmd, env={"GITHUB_TOKEN": tok}))
    for cmd in (SUPERSEDE, PR):
        cases.append(Case(f"token unset {cmd[0]}", cmd, env={"GITHUB_TOKEN": ""}))
        cases.append(Case(f"token-env unset {cmd[0]}", cmd + ["--token-env", "NOPE_TOKEN"]))
    answers = [("html", 200, b"<html>a proxy</html>"), ("list", 200, b"[1, 2, 3]"),
               ("string", 200, b'"hello"'), ("empty object", 200, b"{}"),
               ("null", 200, b"null"), ("truncated", 200, b'{"id": '),
               ("html 500", 500, b"<html>oops</html>"), ("401", 401, b'{"message": "no"}'),
               ("404", 404, b'{"message": "Not Found"}'), ("422", 422, b'{"errors": 5}')]
    for label, status, raw in answers:
        for cmd in (SUPERSEDE, PR):
            cases.append(Case(f"http {label} {cmd[0]}", cmd, http=(status, raw)))
    reports = [("steps not objects", b'{"steps": [1, "x"]}'), ("list of ints", b"[1]"),
               ("not json", b"{steps"), ("steps str", b'{"steps": "all"}'),
               ("status int", b'{"steps": [{"kind": "k", "name": "n", "status": 3}]}'),
               ("baseline str", b'{"steps": [], "baseline": "x"}'), ("empty list", b"[]"),
               ("binary", b"\xff\xfe")]
    for label, data in reports:
        cases.append(Case(f"validation {label}", PR + ["--dry-run", "--validation",
                                                        "{tmp}/report.json"],
                          _report(data)))
    cases.append(Case("validation missing", PR + ["--dry-run", "--validation",
                                                   "/nonexistent/r.json"]))
    cases.append(Case("validation dir", PR + ["--dry-run", "--validation", "/tmp"]))
    for label, mutate in (  # values the plan puts on pytest's and pre-commit's command line
            ("suite -p", _edit_manifest("[test]\n", '[test]\nsuites = ["-p", "os"]\n')),
            ("suite --co", _edit_manifest("[test]\n", '[test]\nsuites = ["--co"]\n')),
            ("hook id", _append_manifest('\n[[test.hook]]\nid = "--config=x.yaml"\n')),
            ("hook fallback", _append_manifest('\n[[test.hook]]\nid = "x"\n'
                                               'fallback = "-c"\n'))):
        cases.append(Case(f"plan {label}", VALIDATE, mutate, needle="starts with '-'"))
    return cases + _forge_cases() + _option_cases() + _f13_cases()


# -- who carry may act on (the double's lab/walk* repositories, seeded in `world`) ------------

MARK = "<!-- carry:series=demo -->"
PR_ON = ["pr", "demo", "--repo", "{repo}", "--branch", "carried", "--base", "main", "--remote",
         "{origin}", "--forge-repo"]
SUPERSEDE_IN = ["supersede", "demo", "--forge-repo", "lab/walk3", "--by"]
USER_ANSWERS = [("html", 200, b"<html>a proxy</html>"), ("list", 200, b"[1]"),
                ("empty", 200, b"{}"), ("login int", 200, b'{"login": 5}'),
                ("500", 500, b'{"message": "Server Error"}'), ("404", 404, b'{"message": "x"}')]
INTEGRATION = (r"^/user$", 403, b'{"message": "Resource not accessible by integration"}')
VIEWER_ANSWERS = [("viewer null", 200, b'{"data": {"viewer": null}}'),
                  ("graphql errors", 200, b'{"errors": [{"message": "no"}]}'),
                  ("graphql html", 200, b"<html/>"),
                  ("graphql 401", 401, b'{"message": "Bad credentials"}')]


def _seed(gh: github_server.RunningServer) -> None:
    """lab/walk: mallory's PR from the fork's `carried` branch, with carry's marker.
    lab/walk2: carry's own PR for demo. lab/walk3: carry's #30, alice's #31 that it would
    close, and mallory's #32 with the marker."""
    add = gh.state.add_pull
    add("lab/walk", 1, title="steer", body=MARK, head="carried", head_sha="1" * 40,
        base="main", user="mallory", draft=False)
    add("lab/walk2", 1, title="carry's", body=MARK, head="other", head_sha="2" * 40,
        base="main", user="carry-bot", draft=False)
    for n, user in ((30, "carry-bot"), (31, "alice"), (32, "mallory")):
        add("lab/walk3", n, title=f"#{n}", body=MARK, head=f"h{n}", head_sha="3" * 40,
            base="main", user=user, draft=False)


def _forge_cases() -> list[Case]:
    cases = [Case("forge foreign PR on the branch", PR_ON + ["lab/walk"],
                  needle="is the head of open PR #1 by mallory"),
             Case("forge foreign --by", SUPERSEDE_IN + ["32"],
                  needle="#32 is not carry's PR for series demo"),
             Case("forge read-only series", SUPERSEDE_IN + ["30", "--apply"],
                  _append_manifest('\n[[provenance]]\npr = "lab/walk3#31"\nrole = '
                                   '"superseded"\npatches = [1]\n'), read_only=True,
                  needle="cannot write series demo")]
    answers = [(label, ((r"^/user$", status, raw),)) for label, status, raw in USER_ANSWERS]
    answers += [(label, (INTEGRATION, (r"^/api/graphql$", status, raw)))
                for label, status, raw in VIEWER_ANSWERS]
    for label, faults in answers:
        cases.append(Case(f"forge user {label} pr", PR_ON + ["lab/walk2"], faults=faults))
        cases.append(Case(f"forge user {label} supersede", SUPERSEDE_IN + ["30"],
                          faults=faults))
    return cases


REMOTE_OPTIONS = ["--upload-pack=touch {mark}", "--exec=touch {mark}",
                  "--receive-pack=touch {mark}", "-u", "--upload-pack"]


def _option_cases() -> list[Case]:
    """A remote that is a git option, from a flag or the manifest: on pr, supersede and the
    CI loop (whose job holds the write token), dry runs too."""
    cases = []
    pr = PR[:-2]  # without its --remote
    sup = SUPERSEDE + ["--repo", "{repo}"]
    for opt in REMOTE_OPTIONS:
        for label, args in (("pr", pr), ("pr dry-run", pr + ["--dry-run"]),
                            ("supersede", sup), ("supersede apply", sup + ["--apply"]),
                            ("ci", ["ci", "--repo", "{repo}", "--onto", "base", "--engine",
                                    "local", "--open-pr", "--forge-repo", "lab/fork",
                                    "--dry-run"])):
            cases.append(Case(f"remote {opt[:15]} {label}", args + ["--remote", opt]))
        cases.append(Case(f"manifest fork remote {opt[:15]} ci loop",
                          ["ci", "loop", "{tmp}/summary.json", "--repo", "{repo}",
                           "--open-pr"], _loop_summary(opt)))
    return cases


def _image(image: str) -> Mutate:
    def go(root: Path) -> None:
        p = root / "demo" / "series.toml"
        text = p.read_text()
        p.write_text(text.replace("[test]\n", f'[test]\nimage = "{image}"\nsuites = ["t"]\n', 1))
    return go


def _report(data: bytes) -> Mutate:
    def go(root: Path) -> None:
        (root.parent / "report.json").write_bytes(data)
    return go


# -- running ---------------------------------------------------------------------------------


def _snapshot(root: Path, repo: Path) -> dict[str, bytes]:
    """The series folder's bytes (lock files aside: they are never written) and every ref."""
    out: dict[str, bytes] = {}
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            if p.is_symlink():
                out[str(p)] = os.readlink(p).encode()
            elif p.is_file() and not p.name.endswith(".lock"):
                out[str(p)] = p.read_bytes()
            elif p.is_dir():
                out[str(p)] = b"<dir>"
    # refs/carry/cache/ is content-addressed (a version built as commits, which any run may
    # write): it never moves a ref of the user's.
    refs = git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
    out["refs"] = "\n".join(r for r in refs if not r.startswith("refs/carry/cache/")).encode()
    out["HEAD"] = git(repo, "symbolic-ref", "-q", "HEAD", check=False).encode()
    remote = repo.parent / "origin.git"
    out["remote refs"] = git(remote, "for-each-ref").encode() if remote.exists() else b""
    return out


@pytest.fixture
def world(upstream: CommitBuilder, tmp_path: Path) -> Iterator[World]:
    upstream.commit("Change\n\nSigned-off-by: A U Thor <author@example.com>\n",
                    {"src/core.py": "def f():\n    return 2\n"})
    upstream.branch("feature")
    pristine = tmp_path / "pristine"
    env = dict(os.environ)
    for args in (IMPORT, ["apply", "demo", "--repo", "{repo}", "--onto", "base", "--branch",
                          "carried"]):
        cmd = [a.replace("{repo}", str(upstream.path)) for a in args]
        subprocess.run([sys.executable, "-m", "carry", *cmd, "--series-dir", str(pristine)],
                       env=env, check=True, capture_output=True)
    git(tmp_path, "init", "-q", "--bare", "origin.git")
    sha256 = tmp_path / "sha256"
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", str(sha256))
    (sha256 / "a").write_text("a\n")
    git(sha256, "add", "a")
    git(sha256, "commit", "-qm", "init", env={"GIT_AUTHOR_NAME": "A U Thor",
                                              "GIT_AUTHOR_EMAIL": "author@example.com"})
    git(sha256, "tag", "base")
    git(sha256, "branch", "feature")
    plain = tmp_path / "plain"
    plain.mkdir()
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    gh = github_server.start(FORGE_TOKEN)
    gh.state.repo("lab/fork")
    _seed(gh)
    carried = git(upstream.path, "rev-parse", "carried")
    for number, user in ((3, "carry-bot"), (4, "alice")):  # supersede --by 3 closes #4
        gh.state.add_pull("lab/fork", number, title=f"pr {number}", head=f"b{number}",
                          body="<!-- carry:series=demo -->\n", head_sha=carried, base="main",
                          user=user, draft=False)
    yield World(upstream, pristine, tmp_path, gh, sha256, plain, afile)
    gh.stop()


def _run(w: World, i: int, case: Case) -> str | None:
    """Run one case on a fresh copy of the series; the reason it is not clean, or None."""
    root = w.tmp / f"s{i}" / "series"
    shutil.copytree(w.pristine, root, symlinks=True)
    if case.mutate:
        case.mutate(root)
    subs = {"{mark}": str(_mark(root)), "{repo}": str(w.up.path),
            "{origin}": str(w.tmp / "origin.git"),
            "{sha256}": str(w.sha256), "{plain}": str(w.plain), "{afile}": str(w.afile),
            "{tmp}": str(root.parent), "{gh}": w.gh.url}
    git_file = w.up.path / ".git" / case.git_file[0] if case.git_file else None
    if git_file is not None and case.git_file is not None:
        git_file.parent.mkdir(parents=True, exist_ok=True)
        git_file.write_bytes(case.git_file[1])
    feeder = None
    if case.fifo:
        tree = git(w.up.path, "rev-parse", "carried^{tree}").encode()
        feeder = _feed(root.parent / case.fifo[0], case.fifo[1].replace(b"{carried_tree}", tree))
    args = []
    for a in case.args:
        for key, value in subs.items():
            a = a.replace(key, value)
        args.append(a)
    if "--series-dir" not in args and args[:2] != ["ci", "merge-ledger"]:
        args += ["--series-dir", str(root)]
    w.gh.state.faults.clear()
    if case.http:
        w.gh.state.fault(case.http[0], times=10_000, raw=case.http[1])
    for path, status, raw in case.faults:
        w.gh.state.fault(status, times=10_000, path=path, raw=raw)
    writes = len(w.gh.state.writes())
    env = dict(os.environ, GH_TOKEN="", GITHUB_TOKEN=FORGE_TOKEN, GITHUB_API_URL=w.gh.url,
               PIP_INDEX_URL="http://127.0.0.1:9/simple")
    env.update(case.env)
    before = _snapshot(root, w.up.path)
    prefix = _read_only(root) if case.read_only else []
    proc = subprocess.run([*prefix, sys.executable, "-m", "carry", *args], env=env,
                          capture_output=True, text=True, cwd=root.parent,
                          stdin=subprocess.DEVNULL)
    lines = proc.stderr.splitlines()
    why = None
    if proc.returncode != 2:
        why = f"exit {proc.returncode}"
    elif len(lines) != 1 or not lines[0].startswith("carry: error: "):
        why = f"{len(lines)} stderr lines"
    elif "Traceback" in proc.stderr or "internal error" in proc.stderr:
        why = "traceback or internal error"
    elif case.needle and case.needle not in lines[0]:
        why = f"no {case.needle!r}"
    elif (after := _snapshot(root, w.up.path)) != before:
        why = "series or refs changed" + repr(sorted(
            k for k in set(after) | set(before) if after.get(k) != before.get(k)))
    elif len(w.gh.state.writes()) != writes:
        why = f"wrote to GitHub: {w.gh.state.writes()[writes:]}"
    elif _mark(root).exists():
        why = "an input given as a git option ran a command"
    elif case.absent and case.absent in proc.stdout + proc.stderr:
        why = f"{case.absent!r} printed"
    if feeder is not None and case.fifo is not None:
        feeder(root.parent / case.fifo[0])
    if git_file is not None:
        git_file.unlink()
    shutil.rmtree(root.parent, ignore_errors=True)
    if why:
        return f"{case.label}: {why}: {args[:6]} -> {proc.stderr.strip()[:300]!r}"
    return None


def _read_only(root: Path) -> list[str]:
    """A prefix that runs the command with `root` mounted read-only, in a mount namespace of
    its own: nothing to undo, whatever happens to the command."""
    return ["unshare", "-m", "sh", "-c", 'mount --bind "$0" "$0" && '
            'mount -o remount,bind,ro "$0" "$0" && exec "$@"', str(root)]


def _can_mount() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(
        ["unshare", "-m", "true"], capture_output=True).returncode == 0


def _feed(path: Path, data: bytes) -> Callable[[Path], None]:
    """Make a FIFO at `path` and a thread that writes `data` into it once a reader opens it
    (a carry that reads the FIFO gets a valid document and goes on, so it fails the walk
    instead of hanging it); the function returned ends the thread, read or not."""
    import threading

    os.mkfifo(path)

    def write() -> None:
        try:
            with open(path, "wb") as fh:  # blocks until a reader opens the FIFO
                fh.write(data)
        except (BrokenPipeError, FileNotFoundError):
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()

    def release(p: Path) -> None:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # a reader: a waiting open returns
        try:
            thread.join()
        finally:
            os.close(fd)

    return release


def _walk(world: World, cases: list[Case]) -> None:
    if not _can_mount():
        cases = [c for c in cases if not c.read_only]
    failures = [f for i, c in enumerate(cases) if (f := _run(world, i, c)) is not None]
    print(f"\nbad-input walk: {len(cases)} inputs tried, {len(cases) - len(failures)} clean "
          f"errors")
    assert not failures, "\n".join(failures)


@pytest.mark.slow
def test_bad_input_walk(world: World) -> None:
    cases = _cases()
    assert len(cases) >= 150
    _walk(world, cases)


def test_bad_input_walk_sample(world: World) -> None:
    """The default tier: every fourth input of the walk, which covers each family."""
    _walk(world, _cases()[::4])


def test_bad_input_walk_of_who_carry_may_act_on(world: World) -> None:
    """Every input of that family, in the default tier: a PR, an issue or an account that
    is not carry's, and answers about the token's account that are not GitHub's."""
    _walk(world, _forge_cases())
