"""Property: random series over random upstream histories. Every patch is accounted for
(applied or dropped with a reason, or the one conflict and what follows it), and the applied
commits keep their authors, dates, messages and trailers byte for byte."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from carry.git import Repo
from carry.intake import importer
from carry.replay.engine import PatchResult, replay, run_steps
from carry.series import store as seriesmod

FILES = 3
LINES = 10
AUTHORS = ["A U Thor <author@example.com>", "Toby Mao <toby@example.com>",
           "Zoë Ünïcode <zoe@example.com>", "logprobz <logprobz@example.com>"]
TRAILERS = ["Signed-off-by: A U Thor <author@example.com>", "Assisted-by: OpenAI Codex",
            "Change-Id: I{n:040x}", "Co-authored-by: Toby Mao <toby@example.com>"]


@dataclass(frozen=True)
class Edit:
    file: int
    line: int


@dataclass(frozen=True)
class PatchSpec:
    edit: Edit
    author: int
    date: int
    tz: str
    trailers: tuple[int, ...]
    body: str


@dataclass(frozen=True)
class UpstreamSpec:
    kind: str  # take: the same change as a patch | touch: any line | other: an unrelated file
    target: int
    edit: Edit


edits = st.builds(Edit, st.integers(0, FILES - 1), st.integers(0, LINES - 1))
patch_specs = st.builds(
    PatchSpec, edits, st.integers(0, len(AUTHORS) - 1), st.integers(1_600_000_000, 1_900_000_000),
    st.sampled_from(["+0000", "+0200", "-0730", "+0545"]),
    st.lists(st.integers(0, len(TRAILERS) - 1), max_size=3).map(tuple),
    st.sampled_from(["", "Why: because.\n", "Two  spaces, trailing space \n\nand a second "
                     "paragraph.\n"]))
upstream_specs = st.builds(UpstreamSpec, st.sampled_from(["take", "touch", "other"]),
                           st.integers(0, 7), edits)


def content(values: dict[tuple[int, int], str], f: int) -> bytes:
    return "".join(values.get((f, n), f"file {f} line {n}") + "\n" for n in range(LINES)).encode()


def build(root: Path, patches: list[PatchSpec], ups: list[UpstreamSpec]) -> Path:
    """One fast-import stream: `base`, the `feature` series, and `main` upstream."""
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    out: list[bytes] = []
    mark = [0]
    clock = [1_700_000_000]

    def commit(ref: str, author: str, date: str, msg: bytes, values: dict[tuple[int, int], str],
               files: list[int], parent: str | None) -> str:
        mark[0] += 1
        clock[0] += 10
        out.append(f"commit {ref}\nmark :{mark[0]}\nauthor {author} {date}\n"
                   f"committer C O Mitter <committer@example.com> {clock[0]} +0000\n".encode())
        out.append(b"data %d\n" % len(msg) + msg + b"\n")
        if parent:
            out.append(f"from {parent}\n".encode())
        for f in files:
            data = content(values, f)
            out.append(f"M 100644 inline f{f}.txt\n".encode() + b"data %d\n" % len(data) + data
                       + b"\n")
        out.append(b"\n")
        return f":{mark[0]}"

    base = commit("refs/heads/main", AUTHORS[0], "1600000000 +0000", b"base\n", {},
                  list(range(FILES)), None)
    out.append(f"reset refs/tags/base\nfrom {base}\n\n".encode())
    series_values: dict[tuple[int, int], str] = {}
    parent: str | None = base
    for i, p in enumerate(patches):
        series_values[(p.edit.file, p.edit.line)] = f"patch {i}"
        tr = "\n".join(TRAILERS[t].format(n=i) for t in dict.fromkeys(p.trailers))
        msg = f"Patch {i}\n\n{p.body}" + (f"\n{tr}\n" if tr else "")
        commit("refs/heads/feature", AUTHORS[p.author], f"{p.date} {p.tz}",
               msg.replace("\n\n\n", "\n\n").encode(), series_values, [p.edit.file], parent)
        parent = None
    up_values: dict[tuple[int, int], str] = {}
    parent = base
    for j, u in enumerate(ups):
        if u.kind == "take" and patches:
            i = u.target % len(patches)
            key, value = (patches[i].edit.file, patches[i].edit.line), f"patch {i}"
            files = [patches[i].edit.file]
        elif u.kind == "touch":
            key, value, files = (u.edit.file, u.edit.line), f"upstream {j}", [u.edit.file]
        else:
            key, value, files = (FILES, u.edit.line), f"upstream {j}", [FILES]
        up_values[key] = value
        commit("refs/heads/main", AUTHORS[0], f"{1_650_000_000 + j} +0000",
               f"Upstream {j}\n".encode(), up_values, files, parent)
        parent = None
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(out), check=True)
    return repo


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(patch_specs, min_size=1, max_size=4), st.lists(upstream_specs, max_size=5))
def test_every_patch_accounted_for_and_identities_survive(patches: list[PatchSpec],
                                                         ups: list[UpstreamSpec]) -> None:
    with tempfile.TemporaryDirectory(prefix="carry-prop-") as tmp:
        root = Path(tmp)
        repo_path = build(root, patches, ups)
        (root / "series").mkdir()
        importer.run(root / "series", "prop",
            importer.Source(str(repo_path), branch="feature", base="base"), title="Property")
        s = seriesmod.find(root / "series", "prop")
        repo = Repo.open(repo_path)
        originals = repo.rev_list("base", "feature")
        res = replay(s, repo, "main")
        statuses = [p.status for p in res.patches]
        assert len(res.patches) == len(patches) == len(originals)
        if res.status == "applied":
            assert set(statuses) <= {"applied", "dropped"}
        else:
            assert res.status == "conflict" and statuses.count("conflict") == 1
            stop = statuses.index("conflict")
            assert set(statuses[:stop]) <= {"applied", "dropped"}
            assert set(statuses[stop + 1:]) <= {"pending", "dropped", "would-conflict"}
            assert res.conflict is not None and res.conflict.paths
        parent = res.onto
        for p, sha in zip(res.patches, originals, strict=True):
            if p.status == "dropped":
                assert p.reason and not p.commit
                continue
            if p.status != "applied":
                continue
            old, new = repo.read_commit(sha), repo.read_commit(p.commit)
            assert new.author == old.author and new.message == old.message
            assert new.parents == (parent,)
            assert (new.committer.name, new.committer.email) == ("C O Mitter",
                                                                 "committer@example.com")
            parent = new.sha
        if res.status == "applied":
            assert res.head == parent
            # every applied patch's line is in the result, unless a later patch rewrote it
            for i, spec in enumerate(patches):
                later = [j for j in range(i + 1, len(patches))
                         if patches[j].edit == spec.edit]
                if later or res.patches[i].status != "applied":
                    continue
                text = (repo.show_file(res.head, f"f{spec.edit.file}.txt") or b"").decode()
                assert text.splitlines()[spec.edit.line] == f"patch {i}"
        repo.close()


# -- one merge for a run of patches gives what one merge per patch gives ----------------------

ops = st.tuples(st.sampled_from(["edit", "edit", "add", "delete", "rename"]),
                st.integers(0, 5), st.integers(0, LINES - 1))


def _apply_op(files: dict[str, list[str]], op: tuple[str, int, int], tag: str) -> None:
    kind, n, line = op
    names = sorted(files)
    if kind == "add" or not names:
        files[f"d{n % 2}/new-{tag}.txt"] = [f"{tag} {i}" for i in range(LINES)]
        return
    name = names[n % len(names)]
    if kind == "edit":
        files[name][line] = f"{tag} edit"
    elif kind == "delete":
        del files[name]
    else:
        files[f"d{(n + 1) % 2}/moved-{tag}.txt"] = files.pop(name)


def _history(root: Path, series_ops: list[tuple[str, int, int]],
             upstream_ops: list[tuple[str, int, int]]) -> Path:
    """Whole trees per commit (fast-import `deleteall`), so renames and deletions are easy."""
    repo = root / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    out: list[bytes] = []
    n = [0]

    def commit(ref: str, files: dict[str, list[str]], parent: str | None, msg: str) -> str:
        n[0] += 1
        out.append(f"commit {ref}\nmark :{n[0]}\nauthor A U Thor <author@example.com> "
                   f"{1_700_000_000 + n[0]} +0100\ncommitter C <c@example.com> "
                   f"{1_700_000_000 + n[0]} +0000\n".encode())
        out.append(b"data %d\n%s\n" % (len(msg), msg.encode()))
        if parent:
            out.append(f"from {parent}\n".encode())
        out.append(b"deleteall\n")
        for name, lines in sorted(files.items()):
            data = "".join(x + "\n" for x in lines).encode()
            out.append(f"M 100644 inline {name}\n".encode() + b"data %d\n" % len(data) + data
                       + b"\n")
        out.append(b"\n")
        return f":{n[0]}"

    start = {f"d{i % 2}/f{i}.txt": [f"file {i} line {k}" for k in range(LINES)]
             for i in range(4)}
    base = commit("refs/heads/main", start, None, "base")
    out.append(f"reset refs/tags/base\nfrom {base}\n\n".encode())
    for ref, oplist, tag in (("refs/heads/feature", series_ops, "p"),
                             ("refs/heads/main", upstream_ops, "u")):
        files = {k: list(v) for k, v in start.items()}
        parent: str | None = base
        for i, op in enumerate(oplist):
            _apply_op(files, op, f"{tag}{i}")
            commit(ref, files, parent, f"{tag}{i}")
            parent = None
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=b"".join(out), check=True)
    return repo


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(ops, min_size=2, max_size=5), st.lists(ops, max_size=4))
def test_batched_merge_equals_one_merge_per_patch(series_ops: list[tuple[str, int, int]],
                                                  upstream_ops: list[tuple[str, int, int]]
                                                  ) -> None:
    from carry.git import Ident

    with tempfile.TemporaryDirectory(prefix="carry-batch-") as tmp:
        repo_path = _history(Path(tmp), series_ops, upstream_ops)
        repo = Repo.open(repo_path)
        shas = repo.rev_list("base", "feature")
        if len(shas) < 2:
            return
        who = Ident("C O Mitter", "committer@example.com", "1790000000 +0000")
        outcomes = []
        for batch in (True, False):
            steps = [PatchResult(i, f"{i:04d}.patch", "", "", source=s)
                     for i, s in enumerate(shas, 1)]
            head, stop, paths = run_steps(repo, steps, repo.rev_parse("main"), who,
                                          batch=batch)
            outcomes.append((head if stop is None else "", stop, paths,
                             [(p.status, p.commit) for p in steps]))
        assert outcomes[0] == outcomes[1]
        repo.close()
