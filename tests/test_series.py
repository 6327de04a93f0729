"""The series format: validation with one clear error per bad field, atomic saves, listing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from carry.base import atomic
from carry.base.errors import CarryError
from carry.series import store as seriesmod
from carry.series.store import ManifestError
from tests.conftest import run_carry

REPO = Path(__file__).resolve().parent.parent
FLAGSHIP = REPO / "series" / "mamba-sparse-retention"

MINIMAL = 'schema = 1\nname = "demo"\ntitle = "Demo"\nversion = 1\n'


def write(root: Path, text: str, name: str = "demo") -> Path:
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "series.toml").write_text(text, encoding="utf-8")
    return d


def manifest_with(extra: str) -> str:
    """MINIMAL with one top-level key set, or with tables appended."""
    top = {"schema": "1", "name": '"demo"', "title": '"Demo"', "version": "1"}
    tables = ""
    if extra.startswith("["):
        tables = extra
    else:
        key, _, value = extra.partition(" = ")
        top[key] = value
    return "".join(f"{k} = {v}\n" for k, v in top.items()) + tables + "\n"


BAD_FIELDS = [
    # (extra TOML, the key named in the error, what the error says was expected)
    ('version = "1"', "version", "expected an integer, got '1'"),
    ("version = -1", "version", "expected an integer >= 0, got -1"),
    ("version = true", "version", "expected an integer, got True"),
    ('title = 3', "title", "expected a string, got 3"),
    ("schema = 2", "schema", "expected 1, got 2"),
    ('upstream = "vllm"', "upstream", "expected a table, got 'vllm'"),
    ('[upstream]\nrepo = 1', "upstream.repo", "expected a string, got 1"),
    ('[base]\ncommit = "not-hex"', "base.commit", "expected a hex commit id"),
    ('[[target]]\nname = "t"\nref = "main"\ntags = "v*"', "target[0].ref",
     "exactly one of 'ref' or 'tags'"),
    ('[[target]]\nname = "t"', "target[0].ref", "exactly one of 'ref' or 'tags'"),
    ('[[target]]\nref = "main"', "target[0].name", "is missing"),
    ('[[target]]\nname = "t"\ntags = "v*"\nlatest = "2"', "target[0].latest",
     "expected an integer"),
    ('target = ["main"]', "target[0]", "expected a table, got 'main'"),
    ('[[provenance]]\npr = "o/r#1"\nrole = "friend"', "provenance[0].role",
     "expected one of origin, superseded"),
    ('[[provenance]]\npr = "#556"\nrole = "origin"', "provenance[0].pr",
     "expected owner/repo#number"),
    ('[[provenance]]\npr = "o/r#1"\nrole = "origin"\npatches = ["1"]',
     "provenance[0].patches", "expected a list of patch numbers"),
    ('[[provenance]]\npr = "o/r#1"\nrole = "origin"\ndraft = "no"', "provenance[0].draft",
     "expected true or false"),
    ('[[provenance]]\nrole = "origin"', "provenance[0].pr", "is missing"),
    ('[policy]\nrequired = "Signed-off-by"', "policy.required", "expected a list"),
    ('[policy]\nrequired = [1]', "policy.required", "expected a list of strings"),
    ('[policy]\nrequried = ["Signed-off-by"]', "policy.requried", "is not known"),
    ('[[policy.exception]]\npatch = 3\ntrailers = ["Signed-off-by"]',
     "policy.exception[0].reason", "is missing"),
    ('[[policy.exception]]\npatch = "3"\nreason = "r"', "policy.exception[0].patch",
     "expected an integer"),
    ('[[expect]]\npatch = true\nauthor = "x"', "expect[0].patch", "expected an integer"),
    ('[[expect]]\npatch = 1', "expect[0].author", "is missing"),
    ('[test]\ndiff_check = "yes"', "test.diff_check", "expected true or false"),
    ('[test]\nsuites = "tests/"', "test.suites", "expected a list"),
    ('[test]\nhook = ["mypy"]', "test.hook[0]", "expected a table, got 'mypy'"),
    ('[[test.hook]]\nid = 5', "test.hook[0].id", "expected a string, got 5"),
    ('[[test.hook]]\nname = "mypy"', "test.hook[0].name", "is not known"),
    ('[[changelog]]\ndate = "2026-12-03"', "changelog[0].version", "is missing"),
    ('colour = "blue"', "colour", "is not known"),
]


@pytest.mark.parametrize("extra, key, expected", BAD_FIELDS, ids=[b[1] for b in BAD_FIELDS])
def test_bad_field_is_one_clear_error(series_root: Path, extra: str, key: str,
                                      expected: str) -> None:
    d = write(series_root, manifest_with(extra))
    with pytest.raises(ManifestError) as info:
        seriesmod.load(d)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{d / 'series.toml'}: key '{key}'")
    assert expected in message


def test_missing_name_and_title(series_root: Path) -> None:
    d = write(series_root, 'schema = 1\ntitle = "x"\n')
    with pytest.raises(ManifestError, match="key 'name' is missing"):
        seriesmod.load(d)
    d = write(series_root, 'schema = 1\nname = "demo"\n')
    with pytest.raises(ManifestError, match="key 'title' is missing"):
        seriesmod.load(d)


def test_name_must_match_directory(series_root: Path) -> None:
    d = write(series_root, MINIMAL, name="other")
    with pytest.raises(ManifestError, match=r"key 'name': expected 'other' \(the directory\)"):
        seriesmod.load(d)


def test_toml_that_does_not_parse(series_root: Path) -> None:
    d = write(series_root, MINIMAL + "[base\nref = 1\n")
    with pytest.raises(ManifestError, match="not valid TOML") as info:
        seriesmod.load(d)
    assert str(info.value).startswith(str(d / "series.toml"))
    (d / "series.toml").write_bytes(b'name = "\xff"\n')
    with pytest.raises(ManifestError, match="not UTF-8"):
        seriesmod.load(d)


def test_bad_patch_file_names(series_root: Path) -> None:
    d = write(series_root, MINIMAL)
    (d / "patches").mkdir()
    (d / "patches" / "0001-a.patch").write_text("x")
    (d / "patches" / "0001-b.patch").write_text("x")
    with pytest.raises(CarryError, match="two patch files share a number"):
        seriesmod.load(d)
    (d / "patches" / "0001-b.patch").rename(d / "patches" / "first.patch")
    with pytest.raises(CarryError, match="first.patch: not a patch file name"):
        seriesmod.load(d)


def test_flagship_manifest_round_trips() -> None:
    s = seriesmod.load(FLAGSHIP)
    text = seriesmod.dump_manifest(s.manifest)
    assert seriesmod.parse_manifest(Path("x"), tomllib.loads(text)) == s.manifest
    m = s.manifest
    assert (m.fork.repo, m.fork.branch) == ("local-inference-lab/vllm", "dev/jovian-judgement")
    assert m.upstream.repo == "vllm-project/vllm"
    assert m.policy.required == ["Signed-off-by"]
    assert m.policy.ai_attribution == "Assisted-by"
    assert [(e.patch, e.reason) for e in m.policy.exceptions] == [
        (3, "published without trailers; left unamended to preserve published history")]
    assert [e.author for e in m.expected] == ["Toby Mao"] * 2 + ["logprobz"] * 4
    roles = {p.pr: p.role for p in m.provenance}
    assert roles == {
        "local-inference-lab/vllm#556": "origin",
        "local-inference-lab/vllm#643": "superseded",
        "local-inference-lab/vllm#669": "consolidated",
        "vllm-project/vllm#54713": "upstream-equivalent",
        "vllm-project/vllm#53802": "related",
    }
    assert next(p for p in m.provenance if p.role == "consolidated").merged_as == "86acae98f0"
    assert m.test.image.startswith("voipmonitor/vllm@sha256:284784e6")
    assert (m.test.python, m.test.requirements) == ("/opt/venv/bin/python", ["tblib"])
    assert len(m.test.suites) == 6 and m.test.diff_check
    assert m.test.pytest_args == ["-q", "-p", "no:cacheprovider"]
    assert [(h.id, h.stage) for h in m.test.hooks] == [("", ""), ("mypy-3.12", "manual")]


def test_save_is_atomic_and_reloads_identically(series_root: Path) -> None:
    shutil.copytree(FLAGSHIP, series_root / "mamba-sparse-retention")
    s = seriesmod.find(series_root, "mamba-sparse-retention")
    s.manifest.version = 1
    s.manifest.test.pytest_args = []
    patch = b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
    assert seriesmod.write_series(s.root, s.manifest, {"0001-a.patch": patch})
    again = seriesmod.find(series_root, "mamba-sparse-retention")
    assert again.manifest == s.manifest
    assert again.cover == s.cover
    assert [p.read() for p in again.patches()] == [patch]
    # Writing the same state again changes nothing, not even a modification time.
    mtime = (again.root / "series.toml").stat().st_mtime_ns
    assert not seriesmod.write_series(again.root, again.manifest, {"0001-a.patch": patch})
    assert (again.root / "series.toml").stat().st_mtime_ns == mtime
    assert sorted(p.name for p in series_root.iterdir()) == ["mamba-sparse-retention"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_failed_save_leaves_the_old_directory(series_root: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(FLAGSHIP, series_root / "mamba-sparse-retention")
    s = seriesmod.find(series_root, "mamba-sparse-retention")
    before = _tree(s.root)
    s.manifest.version = 9

    # A failure in the middle of writing the new state (here: the disk sync).
    def boom(d: Path) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(atomic, "_flush", boom)
    with pytest.raises(OSError, match="disk full"):
        seriesmod.write_series(s.root, s.manifest, {"0001-a.patch": b"x"})
    monkeypatch.undo()
    assert _tree(s.root) == before
    assert sorted(p.name for p in series_root.iterdir()) == ["mamba-sparse-retention"]

    # Data that does not validate is refused before anything is written.
    s.manifest.provenance[0].role = "friend"
    with pytest.raises(ManifestError, match="provenance"):
        seriesmod.write_series(s.root, s.manifest, None)
    s.manifest.provenance[0].role = "origin"
    with pytest.raises(CarryError, match="not a NNNN-slug.patch name"):
        seriesmod.write_series(s.root, s.manifest, {"../escape.patch": b"x"})
    assert _tree(s.root) == before
    assert sorted(p.name for p in series_root.iterdir()) == ["mamba-sparse-retention"]


def test_unwritable_directory_leaves_the_old_state(series_root: Path) -> None:
    """The write runs in a child without the capabilities that let root ignore permission
    bits (setpriv drops them from its bounding set), so CI, which runs as root, runs it too."""
    shutil.copytree(FLAGSHIP, series_root / "mamba-sparse-retention")
    root = series_root / "mamba-sparse-retention"
    before = _tree(root)
    series_root.chmod(0o555)
    drop = (["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
            if os.geteuid() == 0 else [])
    script = ("import sys; from pathlib import Path; from carry.series import store as s; "
              "x = s.find(Path(sys.argv[1]), 'mamba-sparse-retention'); "
              "s.write_series(x.root, x.manifest, {'0001-a.patch': b'x'})")
    try:
        child = subprocess.run([*drop, sys.executable, "-c", script, str(series_root)],
                               capture_output=True, text=True)
    finally:
        series_root.chmod(0o755)
    assert child.returncode != 0
    assert "PermissionError" in child.stderr, child.stderr
    assert _tree(root) == before


# -- locating and listing ---------------------------------------------------------------------


def test_series_dir_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = tmp_path / "checkout"
    (checkout / ".git").mkdir(parents=True)
    (checkout / "sub").mkdir()
    monkeypatch.chdir(checkout / "sub")
    assert seriesmod.series_dir() == checkout / "series"
    monkeypatch.setenv("CARRY_SERIES_DIR", str(tmp_path / "env"))
    assert seriesmod.series_dir() == tmp_path / "env"
    assert seriesmod.series_dir(tmp_path / "flag") == tmp_path / "flag"


def _two_series(root: Path) -> None:
    shutil.copytree(FLAGSHIP, root / "mamba-sparse-retention")
    write(root, MINIMAL + '[base]\nref = "main"\ncommit = "0123456789ab"\n'
          '[[target]]\nname = "main"\nref = "upstream/main"\n')
    (root / "demo" / "patches").mkdir()
    (root / "demo" / "patches" / "0001-x.patch").write_text("x")
    (root / ".demo.new-123").mkdir()  # a leftover temporary directory is not a series


def test_series_list_json_and_table(tmp_path: Path) -> None:
    root = tmp_path / "elsewhere"
    _two_series(root)
    for args, env in (((("--series-dir", str(root))), None),
                      ((), {"CARRY_SERIES_DIR": str(root)})):
        r = run_carry("series", "list", "--json", *args, env=env, cwd=tmp_path)
        assert r.code == 0, r.err
        data = json.loads(r.out)
        assert [(d["name"], d["version"], d["patches"], d["expected"]) for d in data] == [
            ("demo", 1, 1, 0), ("mamba-sparse-retention", 0, 0, 6)]
        assert data[0]["base"] == {"ref": "main", "commit": "0123456789ab"}
        assert data[1]["targets"] == ["upstream-main", "upstream-release", "fork-dev"]
    r = run_carry("series", "list", "--series-dir", str(root))
    assert r.code == 0, r.err
    assert "mamba-sparse-retention" in r.out and "0/6" in r.out and "demo" in r.out
    assert "upstream-main" in r.out


def test_series_list_defaults_to_this_checkout() -> None:
    r = run_carry("series", "list", "--json", cwd=REPO / "tooling")
    assert r.code == 0, r.err
    assert "mamba-sparse-retention" in [d["name"] for d in json.loads(r.out)]


def test_series_show(tmp_path: Path) -> None:
    root = tmp_path / "s"
    _two_series(root)
    r = run_carry("series", "show", "mamba-sparse-retention", "--json", "--series-dir",
                  str(root))
    assert r.code == 0, r.err
    data = json.loads(r.out)
    assert data["name"] == "mamba-sparse-retention"
    assert data["patch_files"] == []
    assert data["policy"]["exceptions"][0]["patch"] == 3
    assert data["cover"].startswith("# Mamba sparse retention")
    assert len(data["expected"]) == 6
    r = run_carry("series", "show", "mamba-sparse-retention", "--series-dir", str(root))
    assert r.code == 0, r.err
    assert "patches not imported yet: 6 expected" in r.out
    assert "consolidated: local-inference-lab/vllm#669 merged as 86acae98f0" in r.out
    r = run_carry("series", "show", "demo", "--series-dir", str(root))
    assert "0001-x.patch" in r.out


def test_a_writer_killed_between_the_fallback_renames_loses_nothing(
        series_root: Path) -> None:
    """Without renameat2 the swap is two renames; a kill between them leaves no series
    directory and the old one aside under a dead pid: the next reader or writer puts it
    back instead of sweeping it away."""
    shutil.copytree(FLAGSHIP, series_root / "mamba-sparse-retention")
    before = _tree(series_root / "mamba-sparse-retention")
    dead = subprocess.Popen(["true"])
    dead.wait()
    aside = series_root / f".mamba-sparse-retention.new-{dead.pid}-abc.old"
    (series_root / "mamba-sparse-retention").rename(aside)
    (series_root / f".mamba-sparse-retention.new-{dead.pid}-abc").mkdir()  # its staging
    s = seriesmod.find(series_root, "mamba-sparse-retention")
    assert _tree(s.root) == before
    s.manifest.version += 1
    seriesmod.write_series(s.root, s.manifest, None)
    assert sorted(p.name for p in series_root.iterdir()) == ["mamba-sparse-retention"]
    assert seriesmod.find(series_root, "mamba-sparse-retention").manifest.version == \
        s.manifest.version


def test_a_target_named_tip_is_refused(tmp_path: Path) -> None:
    """F16 #10: `carry/NAME/tip` is the CI loop's branch; a target named `tip` would write
    the same branch."""
    d = tmp_path / "s"
    d.mkdir()
    (d / "series.toml").write_text('schema = 1\nname = "s"\ntitle = "t"\n'
                                   '[[target]]\nname = "tip"\nref = "upstream/main"\n')
    with pytest.raises(CarryError, match="other than 'tip'"):
        seriesmod.load(d)
