"""The container tier: `carry validate --engine podman` by digest, in a real podman.

The image comes from `ci/container/build-test-image.sh` (a debootstrap root filesystem with
/opt/venv holding pytest and pre-commit, `podman import`ed); `.ci/run` exports its reference
as CARRY_TEST_IMAGE=NAME@sha256:DIGEST. Without it, or without a working podman, these tests
skip and say why. Nothing here needs the network: the plan's one requirement is a wheel that
the synthetic project carries.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import synthetic

from carry.series import store as seriesmod
from carry.series.store import Hook
from carry.validate import engines

try:  # tests/ on sys.path (rootdir conftest), or tests/ as a package
    from conftest import CommitBuilder, Result, run_carry
except ImportError:
    from tests.conftest import CommitBuilder, Result, run_carry

pytestmark = pytest.mark.container

CONF = Path(__file__).resolve().parents[2] / "ci" / "container" / "containers.conf"
VENV_PYTHON = "/opt/venv/bin/python"


def _podman_env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(CONF))}


@pytest.fixture(scope="module")
def image() -> str:
    ref = os.environ.get("CARRY_TEST_IMAGE", "")
    if not ref:
        pytest.skip("CARRY_TEST_IMAGE is not set (build it: bash ci/container/build-test-image.sh"
                    "; .ci/run does)")
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed (bash ci/container/setup-podman.sh installs it)")
    proc = subprocess.run(["podman", "image", "inspect", ref], capture_output=True, text=True,
                          env=_podman_env())
    if proc.returncode != 0:
        pytest.skip(f"podman cannot see {ref}: {proc.stderr.strip().splitlines()[-1:]}")
    return ref


@pytest.fixture(autouse=True)
def _containers_conf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONTAINERS_CONF", _podman_env()["CONTAINERS_CONF"])


@pytest.fixture
def calc(tmp_path: Path) -> CommitBuilder:
    return synthetic.upstream_project(tmp_path / "calc")


def _validate(up: CommitBuilder, root: Path, name: str, *args: str,
              env: dict[str, str] | None = None) -> Result:
    return run_carry("validate", name, "--repo", str(up.path), "--engine", "podman",
                     "--series-dir", str(root), *args, env=env)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _series(up: CommitBuilder, root: Path, branch: str, image: str) -> None:
    synthetic.import_series(root, up.path, branch, branch, VENV_PYTHON,
                            requirements=[synthetic.WHEEL], image=image)


def test_podman_runs_the_plan_in_the_pinned_image(calc: CommitBuilder, tmp_path: Path,
                                                   image: str) -> None:
    root = tmp_path / "series"
    _series(calc, root, "fix", image)
    r = _validate(calc, root, "fix", "--onto", "v2", "--baseline", "--json")
    assert r.code == 0, r.out + r.err
    rep: dict[str, Any] = json.loads(r.out)
    assert rep["engine"] == "podman" and rep["image"] == image and rep["python"] == VENV_PYTHON
    assert [(s["kind"], s["status"]) for s in rep["steps"]] == [
        ("install", "passed"), ("pytest", "passed"), ("hook", "passed"), ("hook", "passed"),
        ("diff-check", "passed"), ("baseline", "passed")]
    assert rep["steps"][0]["command"] == (
        f"{VENV_PYTHON} -m pip install -q {synthetic.WHEEL}")
    # the wheel installed inside the container, so the dependency test ran instead of skipping
    assert rep["summary"] == "10 tests passed across the three suites"
    assert {s["suite"]: s["passed"] for s in rep["tests"]["suites"]} == {
        "tests/test_core.py": 4, "tests/unit": 4, "tests/test_util.py": 2}
    assert rep["steps"][3]["command"].startswith("pre-commit run typecheck --hook-stage manual")
    assert rep["baseline"]["proven"] == [
        "tests/test_core.py::test_retained_keeps_the_state_below_the_last_boundary"]
    # the wheel went into the image's venv, not into anything on the host
    assert subprocess.run([sys.executable, "-c", "import carry_tinydep"],
                          capture_output=True).returncode != 0
    assert "10 passed" in Path(rep["steps"][1]["log"]).read_text()

    # again, with podman not even on PATH: answered from the cache, no container started
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    again = _validate(calc, root, "fix", "--onto", "v2", "--baseline",
                      env={"PATH": str(bin_dir)})
    assert again.code == 0, again.err
    assert "[cached]" in again.out and "10 tests passed across the three suites" in again.out


def test_a_failing_test_inside_the_container(calc: CommitBuilder, tmp_path: Path,
                                             image: str) -> None:
    root = tmp_path / "series"
    _series(calc, root, "broken", image)
    r = _validate(calc, root, "broken", "--onto", "v1")
    assert r.code == 1, r.err
    assert ("FAILED tests/test_core.py::test_retained_keeps_three_states - "
            "assert [48, 64] == [32, 48, 64]") in r.out
    assert "1 failed, 9 passed across the three suites" in r.out


def _error_for(calc: CommitBuilder, tmp_path: Path, ref: str) -> str:
    root = tmp_path / "series"
    _series(calc, root, "fix", ref)
    r = _validate(calc, root, "fix", "--onto", "v1")
    assert r.code == 2, r.out + r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1
    return lines[0]


def test_a_wrong_digest_is_refused(calc: CommitBuilder, tmp_path: Path, image: str) -> None:
    name, digest = image.split("@")
    line = _error_for(calc, tmp_path, f"{name}@sha256:{'0' * 64}")
    assert line == (
        f"carry: error: image {name} is present only with digest {digest[:19]}, not the "
        "pinned sha256:000000000000…; carry will not run a different image (hint: load the "
        "pinned image, or update [test].image if the pin is wrong)")


def test_a_tag_without_digest_is_refused(calc: CommitBuilder, tmp_path: Path,
                                         image: str) -> None:
    name = image.split("@")[0]
    line = _error_for(calc, tmp_path, f"{name}:r1")
    assert line.startswith(f"carry: error: image '{name}:r1' is not pinned by digest")


def test_an_absent_image_is_never_pulled(calc: CommitBuilder, tmp_path: Path,
                                         image: str) -> None:
    ref = "localhost/carry-absent@sha256:" + "1" * 64
    line = _error_for(calc, tmp_path, ref)
    assert line == (f"carry: error: image {ref} is not present in podman's local images; "
                    f"carry never pulls (hint: fetch or build it first (e.g. podman pull "
                    f"{ref}))")


def test_a_container_a_killed_validation_left_is_removed_by_the_next(
        calc: CommitBuilder, tmp_path: Path, image: str) -> None:
    """A validation killed with -9 cannot stop its `sleep infinity` container; the next one on
    this host removes it, and leaves a live carry's and another host's alone."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    host = engines.host_tag()
    names = {"dead": f"carry-validate-{host}-{dead.pid}-dead0001",
             "live": f"carry-validate-{host}-{os.getpid()}-live0001",
             "other": f"carry-validate-elsewhere-{dead.pid}-other001"}
    for name in names.values():
        subprocess.run(["podman", "run", "-d", "--rm", "--name", name, "--pull=never",
                        "--entrypoint", "sleep", image, "infinity"], check=True,
                       capture_output=True, env=_podman_env())
    try:
        root = tmp_path / "series"
        _series(calc, root, "fix", image)
        r = _validate(calc, root, "fix", "--onto", "v2", "--no-cache")
        assert r.code == 0, r.out + r.err
        running = subprocess.run(["podman", "ps", "-a", "--format", "{{.Names}}"],
                                 capture_output=True, text=True, env=_podman_env()).stdout.split()
        assert names["dead"] not in running
        assert names["live"] in running and names["other"] in running
        # its own is gone too; other xdist workers' validations (live pids) may still run
        stem = f"carry-validate-{host}-"
        leaked = [n for n in running if n not in names.values() and n.startswith(stem)
                  and not _alive(int(n[len(stem):].split("-")[0]))]
        assert not leaked
    finally:
        subprocess.run(["podman", "rm", "-f", "-i", "-t", "0", *names.values()],
                       capture_output=True, env=_podman_env())


def test_the_plan_env_and_a_hook_install_failure_inside_the_container(
        calc: CommitBuilder, tmp_path: Path, image: str) -> None:
    """[test].env reaches a step in the container; a hook repository the container cannot
    fetch says so on its line, and pre-commit's log (inside the container) is kept."""
    gone = tmp_path / "no-such-hooks-repo"
    calc.checkout("v2")
    calc.commit("Release 3", {
        "tests/test_env.py": "import os\n\n\ndef test_mode():\n"
                             "    assert os.environ.get('CALC_MODE') == 'strict'\n",
        ".pre-commit-config.yaml": synthetic.CONFIG.format(typecheck="typecheck")
        + f"  - repo: file://{gone}\n    rev: v1.0.0\n    hooks:\n      - id: black\n"})
    calc.tag("v3")
    calc.checkout("main")
    root = tmp_path / "series"
    _series(calc, root, "fix", image)
    s = seriesmod.find(root, "fix")
    s.manifest.test.suites = [*synthetic.SUITES, "tests/test_env.py"]
    s.manifest.test.env = {"CALC_MODE": "strict"}
    s.manifest.test.hooks = [Hook()]
    seriesmod.save_manifest(s)
    r = _validate(calc, root, "fix", "--onto", "v3", "--json")
    rep: dict[str, Any] = json.loads(r.out)
    assert {x["suite"]: x["passed"] for x in rep["tests"]["suites"]}["tests/test_env.py"] == 1
    hook = next(x for x in rep["steps"] if x["kind"] == "hook")
    assert hook["status"] == "not-installed", hook
    kept = Path(hook["log"]).with_name(Path(hook["log"]).stem + "-pre-commit.log")
    assert "### error information" in kept.read_text()
