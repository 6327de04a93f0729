"""A shallow clone: a range whose base lies below the cut is refused, not imported as one
patch that adds the whole tree."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import CommitBuilder, git, run_carry


def test_a_base_beyond_the_shallow_boundary_is_refused(upstream: CommitBuilder,
                                                       series_root: Path,
                                                       tmp_path: Path) -> None:
    for i in range(3):
        upstream.commit(f"Feature {i}\n", {f"f{i}": f"{i}\n"})
    upstream.branch("feature")
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", "--no-single-branch",
        f"file://{upstream.path}", str(clone))
    git(clone, "fetch", "-q", "--depth", "1", "origin", "refs/tags/base:refs/tags/base")
    assert git(clone, "rev-parse", "--is-shallow-repository") == "true"
    r = run_carry("import", "demo", "--repo", str(clone), "--range", "base..origin/feature",
                  "--series-dir", str(series_root))
    assert r.code == 2, r
    assert len(r.err.splitlines()) == 1, r.err
    assert "beyond the shallow clone's history" in r.err
    assert "git fetch --unshallow" in r.err.replace(f"-C {clone} ", "")
    assert not (series_root / "demo").exists()
    # Deepened, the same range is the three patches it always was.
    git(clone, "fetch", "-q", "--unshallow", "origin")
    r = run_carry("import", "demo", "--repo", str(clone), "--range", "base..origin/feature",
                  "--series-dir", str(series_root))
    assert r.code == 0, r.err
    assert len(list((series_root / "demo" / "patches").iterdir())) == 3
