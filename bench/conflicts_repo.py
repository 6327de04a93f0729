"""A repository that looks like vLLM, with a carried series that conflicts the way real ones do:
the generator behind `bench_conflicts.py`.

Deterministic for a given `Params` (one `random.Random(seed)`), written with one `git
fast-import`:

- `base` history: one import of every file (Python-like text, 5-50 KB each, log-uniform, in a
  few hundred directories), then `history` small upstream commits; the tag `base` is its tip;
- `refs/remotes/upstream/main`: `upstream` more commits (squash-merge subjects ending in
  `(#N)`), one to six files each, several hundred files in all;
- `refs/remotes/fork/dev/bench`: the series on `base`, by two authors with trailers, files
  shared between patches, two `fixup!` commits. Its conflicts after the upstream move:
  ROOT patches edit lines that an upstream commit also changed; DEPENDENT patches change lines
  that an earlier conflicting patch introduced, so they conflict only because that one is left
  out; DROP patches were taken upstream as they are (a skip for git, a drop for carry).

Every edit replaces a region ("slot") of a file's base lines with lines no other edit writes,
and slots of different owners stay GAP lines apart, so a merge conflicts exactly where the
design says; `design.json` beside the repository records it (which patch is which kind, what a
dependent builds on, which upstream commit a root or a drop comes from).
"""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

GEN_VERSION = 1  # bump when the output changes: it is part of the cache key
GAP = 8  # base lines between slots of different owners: merges next to each other stay clean
HEADER = 12  # lines at the top of each file that no slot takes (licence, imports)
THOR = "A U Thor <author@example.com>"
MITTER = "C O Mitter <committer@example.com>"
UPSTREAM_AUTHORS = ("U Pstream <upstream@example.com>", "R Eviewer <reviewer@example.com>",
                    "K Ernel <kernel@example.com>", "S Pec <spec@example.com>")
START = 1_760_000_000  # the first commit's date; every later commit is an hour on

WORDS = ("block", "cache", "token", "request", "layer", "state", "batch", "model", "config",
         "sampler", "worker", "scheduler", "seq", "hidden", "attn", "spec", "draft", "prefix",
         "mamba", "kv", "page", "slot", "step", "chunk", "rank", "expert", "router", "lora",
         "quant", "weight", "scale", "group", "head", "stream", "event", "buffer", "table",
         "boundary", "replay", "manager", "pool", "metadata", "output", "input", "logits",
         "prompt", "encoder", "decoder", "graph", "kernel", "tensor", "shape", "offset",
         "length", "window", "queue", "budget", "policy", "hash", "entry")
VERBS = ("get", "set", "compute", "build", "update", "free", "alloc", "merge", "split", "load",
         "save", "check", "prepare", "apply", "reset", "find", "sync", "pad", "gather", "scatter")
DONE = ("built", "merged", "split", "loaded", "saved", "checked", "reset", "synced", "padded")
DIRS_TOP = ("vllm", "vllm", "vllm", "vllm", "tests", "tests", "benchmarks", "examples", "csrc",
            "tools", "docs")
TAGS = ("[BugFix]", "[Core]", "[V1]", "[Spec Decode]", "[Perf]", "[Misc]", "[Kernel]",
        "[Model]", "[Hybrid]", "[KV Connector]")


@dataclass(frozen=True)
class Params:
    files: int = 5000
    dirs: int = 300
    history: int = 300
    upstream: int = 200
    patches: int = 50
    roots: int = 3
    dependents: int = 17
    drops: int = 2
    seed: int = 1

    def key(self) -> str:
        return f"v{GEN_VERSION}-" + "-".join(f"{k}{v}" for k, v in asdict(self).items())


@dataclass
class Patch:
    """One patch of the design; `builds_on` and `upstream` are patch and upstream indexes."""

    number: int
    kind: str  # clean | root | dependent | drop
    subject: str
    author: str
    builds_on: int | None = None
    upstream: int | None = None
    fixup: bool = False
    slots: list[tuple[str, int]] = field(default_factory=list)


# -- text -----------------------------------------------------------------------------------------


def _template(rng: random.Random) -> str:
    """A function of 10-50 lines; every line but blanks holds `@` (the chunk's id in the
    file) and its own number, so no line repeats within a file."""
    w = lambda: rng.choice(WORDS)  # noqa: E731
    lines = [f"def {rng.choice(VERBS)}_{w()}_{w()}_@(self, {w()}_n: int, "
             f"{w()}: torch.Tensor | None = None) -> {rng.choice(('None', 'int', 'bool'))}:",
             f'    """{rng.choice(VERBS).capitalize()} the {w()} {w()} for each {w()} (@)."""']
    depth = 1
    for j in range(rng.randint(10, 50)):
        ind = "    " * depth
        r = rng.random()
        if r < 0.06:
            lines.append("")
            continue
        if depth < 3 and r < 0.22:
            lines.append(rng.choice((f"{ind}if {w()}_@_{j} is None or {w()}_@_{j} > {j}:",
                                     f"{ind}for {w()}_@_{j} in range(self.num_{w()}_{w()}):")))
            depth += 1
            continue
        lines.append(rng.choice((
            f"{ind}{w()}_{w()}_@_{j} = self.{w()}_{w()}({w()}_@_{j}, {w()}={j})",
            f"{ind}# {w().capitalize()} the {w()} {w()} before the {w()} is freed (@.{j}).",
            f"{ind}self.{w()}_{w()}_@_{j}.append({w()}_@_{j})",
            f'{ind}logger.debug("{w()} %s {w()} %d", {w()}_@_{j}, {j})',
            f"{ind}{w()}_@_{j} = torch.empty(({w()}_n, {j}), dtype=torch.int32)",
        )))
        if depth > 1 and rng.random() < 0.3:
            depth -= 1
    lines.append(f"    return {w()}_@_{j}" if lines[-1] else f"    return {w()}_@")
    return "\n".join(lines) + "\n\n\n"


def _header(rng: random.Random, path: str) -> str:
    mod = path.removesuffix(".py").replace("/", ".")
    lines = ["# SPDX-License-Identifier: Apache-2.0",
             "# SPDX-FileCopyrightText: Copyright contributors to the vLLM project",
             f'"""{rng.choice(VERBS).capitalize()} {rng.choice(WORDS)} helpers of {mod}."""',
             "", "from __future__ import annotations", "", "import torch", "",
             f"from vllm.{rng.choice(WORDS)} import {rng.choice(WORDS).capitalize()}",
             "from vllm.logger import init_logger", "", "logger = init_logger(__name__)", "", ""]
    return "\n".join(lines) + "\n"


def _file(rng: random.Random, templates: list[str], fid: int, path: str) -> str:
    want = int(math.exp(rng.uniform(math.log(5_000), math.log(50_000))))
    parts, size, c = [_header(rng, path)], 0, 0
    while size < want:
        chunk = rng.choice(templates).replace("@", f"{fid}_{c}")
        parts.append(chunk)
        size += len(chunk)
        c += 1
    return "".join(parts)


def _paths(rng: random.Random, files: int, dirs: int) -> list[str]:
    tree = ["vllm", "tests"]
    while len(tree) < dirs:
        parent = rng.choice(tree) if rng.random() < 0.7 else rng.choice(DIRS_TOP)
        child = f"{parent}/{rng.choice(WORDS)}" + ("" if rng.random() < 0.6 else
                                                    f"_{rng.choice(WORDS)}")
        if child not in tree:
            tree.append(child)
    out: set[str] = set()
    while len(out) < files:
        d = rng.choice(tree)
        stem = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}"
        out.add(f"{d}/{'test_' if d.startswith('tests') else ''}{stem}.py")
    return sorted(out)


# -- slots: a file's state as its base lines with regions replaced --------------------------------


class Files:
    """Base lines of the files edits touch, the slots taken in each, and each side's overlay."""

    def __init__(self, rng: random.Random, base: dict[str, str]) -> None:
        self.rng, self.base = rng, base
        self.lines: dict[str, list[str]] = {}
        self.taken: dict[str, list[tuple[int, int]]] = {}

    def of(self, path: str) -> list[str]:
        if path not in self.lines:
            self.lines[path] = self.base[path].splitlines(keepends=True)
        return self.lines[path]

    def take(self, path: str, length: int) -> int | None:
        """A free slot of `length` lines in `path`, GAP lines from any other; None if full."""
        n = len(self.of(path))
        used = self.taken.setdefault(path, [])
        for _ in range(40):
            start = self.rng.randrange(HEADER, max(HEADER + 1, n - length - GAP))
            if all(start + length + GAP <= a or b + GAP <= start for a, b in used):
                used.append((start, start + length))
                return start
        return None


@dataclass
class Side:
    """One line of development over the base (the series, or upstream): each slot's lines and
    which patch (or upstream commit) wrote each of them."""

    files: Files
    slots: dict[str, dict[int, tuple[int, list[tuple[str, int]]]]] = field(default_factory=dict)

    def write(self, path: str, start: int, length: int, lines: list[tuple[str, int]]) -> None:
        self.slots.setdefault(path, {})[start] = (length, lines)

    def lines(self, path: str, start: int) -> list[tuple[str, int]]:
        return self.slots[path][start][1]

    def render(self, path: str) -> bytes:
        base, out, at = self.files.of(path), [], 0
        for start, (length, lines) in sorted(self.slots.get(path, {}).items()):
            out += base[at:start]
            out += [text for text, _ in lines]
            at = start + length
        out += base[at:]
        return "".join(out).encode()


def _new_lines(rng: random.Random, tag: str, n: int) -> list[str]:
    """`n` lines of code that exist nowhere else (`tag` names the writer)."""
    out = []
    for m in range(n):
        a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(VERBS)
        out.append(rng.choice((
            f"        {a}_{tag}_{m} = self.{c}_{b}({a}_{b}_{tag}, n={m})\n",
            f"        if {a}_{tag}_{m} is not None:  # {c} the {b} ({tag})\n",
            f"        self.{a}_{b}_{tag}_{m}.extend({b}_{tag})\n",
        )))
    return out


# -- the design ------------------------------------------------------------------------------------


def _subjects(rng: random.Random, n: int) -> list[str]:
    seen: set[str] = set()
    out = []
    while len(out) < n:
        s = (f"{rng.choice(TAGS)} {rng.choice(VERBS).capitalize()} the {rng.choice(WORDS)} "
             f"{rng.choice(WORDS)} {rng.choice(('under', 'for', 'in', 'after'))} "
             f"{rng.choice(WORDS)} {rng.choice(WORDS)}")
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def design(rng: random.Random, p: Params) -> list[Patch]:
    """Which patch is which kind and what each dependent builds on."""
    n = p.patches
    if p.roots < 1 or p.roots + p.dependents + p.drops + 2 > n:
        raise SystemExit(f"cannot design {p.roots} roots, {p.dependents} dependents and "
                         f"{p.drops} drops in {n} patches")
    span = max(p.roots, n * 2 // 3 - 1)
    width = span // p.roots
    roots = [1 + i * width + rng.randrange(max(1, width // 2)) for i in range(p.roots)]
    free = [i for i in range(roots[0] + 1, n) if i not in roots]
    dependents = sorted(rng.sample(free, p.dependents))
    rest = [i for i in range(n) if i not in roots and i not in dependents]
    drops = sorted(rng.sample(rest, p.drops))
    subjects = _subjects(rng, n)
    out = []
    for i in range(n):
        kind = ("root" if i in roots else "dependent" if i in dependents else
                "drop" if i in drops else "clean")
        author = THOR if rng.random() < 0.6 else MITTER
        out.append(Patch(i + 1, kind, subjects[i], author))
    return out


def _message(rng: random.Random, patch: Patch) -> str:
    if patch.fixup:
        return f"{patch.subject}\n\nSigned-off-by: {patch.author}\n"
    body = (f"The {rng.choice(WORDS)} {rng.choice(WORDS)} was freed before the "
            f"{rng.choice(WORDS)} {rng.choice(WORDS)}\nwas {rng.choice(DONE)}, so the "
            f"{rng.choice(WORDS)} {rng.choice(WORDS)} lost its {rng.choice(WORDS)}.\n")
    trailers = []
    if rng.random() < 0.3:
        trailers.append("Assisted-by: OpenAI Codex")
    if rng.random() < 0.2:
        trailers.append(f"Co-authored-by: {MITTER if patch.author == THOR else THOR}")
    trailers.append(f"Signed-off-by: {patch.author}")
    return f"{patch.subject}\n\n{body}\n" + "\n".join(trailers) + "\n"


# -- the stream ------------------------------------------------------------------------------------


class Stream:
    """A fast-import stream with marks: every commit of the repository in one process."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.mark = 0
        self.clock = START

    def commit(self, ref: str, author: str, committer: str, message: str,
               files: dict[str, bytes], parent: str | None = None) -> str:
        self.mark += 1
        self.clock += 3600
        msg = message.encode()
        self.parts.append(f"commit {ref}\nmark :{self.mark}\n"
                          f"author {author} {self.clock} +0200\n"
                          f"committer {committer} {self.clock + 60} +0000\n"
                          f"data {len(msg)}\n".encode() + msg + b"\n")
        if parent:
            self.parts.append(f"from {parent}\n".encode())
        for name, payload in files.items():
            self.parts.append(f"M 100644 inline {name}\ndata {len(payload)}\n".encode())
            self.parts.append(payload + b"\n")
        self.parts.append(b"\n")
        return f":{self.mark}"

    def ref(self, ref: str, mark: str) -> None:
        self.parts.append(f"reset {ref}\nfrom {mark}\n\n".encode())


def _git(repo: Path, *args: str, input: bytes | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_COMMITTER_NAME": "C O Mitter",
           "GIT_COMMITTER_EMAIL": "committer@example.com"}
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args[:3])} failed: {proc.stderr.decode()[:500]}")
    return proc.stdout.decode().strip()


def generate(p: Params, repo: Path) -> dict[str, object]:
    """Write the repository at `repo` (which must not exist); returns the design as JSON."""
    rng = random.Random(p.seed)
    templates = [_template(rng) for _ in range(256)]
    paths = _paths(rng, p.files, p.dirs)
    base = {path: _file(rng, templates, i, path) for i, path in enumerate(paths)}
    s = Stream()
    pr = [52_000]

    def up_author() -> str:
        return rng.choice(UPSTREAM_AUTHORS)

    def up_subject(what: str) -> str:
        pr[0] += rng.randint(1, 40)
        return f"{rng.choice(TAGS)} {what} (#{pr[0]})"

    head = s.commit("refs/heads/main", UPSTREAM_AUTHORS[0], UPSTREAM_AUTHORS[0],
                    "Initial import\n", {k: v.encode() for k, v in base.items()})
    # the base history: small edits in place, each line replaced by one that exists nowhere else
    for h in range(p.history):
        files: dict[str, bytes] = {}
        for _ in range(rng.randint(1, 3)):
            path = rng.choice(paths)
            lines = base[path].splitlines(keepends=True)
            at = rng.randrange(HEADER, len(lines))
            lines[at] = f"    # {rng.choice(WORDS)} {rng.choice(WORDS)} (history {h}.{at})\n"
            base[path] = "".join(lines)
            files[path] = base[path].encode()
        head = s.commit("refs/heads/main", up_author(), up_author(),
                        up_subject(f"{rng.choice(VERBS).capitalize()} {rng.choice(WORDS)} "
                                   f"{rng.choice(WORDS)}") + "\n", files)
    s.ref("refs/tags/base", head)

    fs = Files(rng, base)
    series, upstream = Side(fs), Side(fs)
    plan = design(rng, p)
    big = [x for x in paths if x.startswith("vllm/") and len(base[x]) > 8_000]
    touched = rng.sample(big, min(len(big), max(8, p.patches * 3 // 5)))
    last: dict[tuple[str, int], int] = {}  # slot -> the patch that wrote it last
    conflicting: set[int] = set()

    def fresh(owner: Patch) -> tuple[str, int, int] | None:
        for _ in range(10):
            path = rng.choice(touched)
            length = rng.randint(1, 4)
            start = fs.take(path, length)
            if start is not None:
                series.write(path, start, length, [(t, owner.number) for t in
                                                   _new_lines(rng, f"p{owner.number}",
                                                              rng.randint(1, 6))])
                return path, start, length
        return None

    def follow(owner: Patch, slot: tuple[str, int]) -> None:
        """Replace some of the lines the slot's last writer introduced."""
        path, start = slot
        lines = series.lines(path, start)
        writer = last[slot]
        mine = [k for k, (_, who) in enumerate(lines) if who == writer]
        a = rng.choice(mine)
        b = a
        while b + 1 < len(lines) and lines[b + 1][1] == writer and rng.random() < 0.5:
            b += 1
        new = [(t, owner.number) for t in _new_lines(rng, f"p{owner.number}",
                                                      rng.randint(1, 3))]
        series.write(path, start, series.slots[path][start][0], lines[:a] + new + lines[b + 1:])

    drop_hunks: dict[int, list[tuple[str, int, int, list[tuple[str, int]]]]] = {}
    root_slots: dict[int, tuple[str, int, int]] = {}
    fixups = {"clean": False, "dependent": False}
    parent = "refs/tags/base"
    marks: dict[str, str] = {}
    for patch in plan:
        i = patch.number
        own: list[tuple[str, int]] = []
        clean_slots = [slot for slot, w in last.items() if plan[w - 1].kind == "clean"]
        if patch.kind == "dependent":
            open_ = [(slot, w) for slot, w in last.items() if w in conflicting]
            on_root = [x for x in open_ if plan[x[1] - 1].kind == "root"]
            slot, patch.builds_on = rng.choice(on_root if on_root and rng.random() < 0.6
                                               else open_)
            if not fixups["dependent"] and plan[patch.builds_on - 1].kind == "root":
                fixups["dependent"] = patch.fixup = True
                patch.subject = f"fixup! {plan[patch.builds_on - 1].subject}"
            follow(patch, slot)
            own.append(slot)
        elif patch.kind == "clean" and clean_slots and (
                rng.random() < 0.3 or (not fixups["clean"] and i > 3)):
            slot = rng.choice(clean_slots)
            if not fixups["clean"]:
                fixups["clean"] = patch.fixup = True
                patch.subject = f"fixup! {plan[last[slot] - 1].subject}"
            follow(patch, slot)
            own.append(slot)
        count = 0 if patch.fixup else rng.randint(0, 1) if own else rng.randint(1, 3)
        for _ in range(count):
            got = fresh(patch)
            if got:
                if patch.kind == "root" and i not in root_slots:
                    root_slots[i] = got
                own.append(got[:2])
        if not own or (patch.kind == "root" and i not in root_slots):
            raise SystemExit(f"patch {i}: no room for a slot; use fewer patches or more files")
        for slot in own:
            last[slot] = i
        if patch.kind in ("root", "dependent"):
            conflicting.add(i)
        if patch.kind == "drop":
            drop_hunks[i] = [(x, a, *series.slots[x][a]) for x, a in own]
        patch.slots = own
        files = {x: series.render(x) for x in sorted({x for x, _ in own})}
        marks[f"patch{i}"] = s.commit("refs/remotes/fork/dev/bench", patch.author, MITTER,
                                      _message(rng, patch), files, parent=parent)
        parent = ""
    # upstream: its own edits, the root causes and the drops at chosen places
    causes = rng.sample(range(p.upstream), p.roots + p.drops)
    root_at = dict(zip(causes[:p.roots], [q for q in plan if q.kind == "root"], strict=True))
    drop_at = dict(zip(causes[p.roots:], [q for q in plan if q.kind == "drop"], strict=True))
    up_slots: list[tuple[str, int]] = []
    parent = "refs/tags/base"
    for j in range(p.upstream):
        files = {}
        if j in drop_at:
            q = drop_at[j]
            q.upstream = j
            for path, start, length, lines in drop_hunks[q.number]:
                upstream.write(path, start, length, [(t, -j - 1) for t, _ in lines])
                files[path] = upstream.render(path)
            mark = s.commit("refs/heads/main", up_author(), up_author(),
                            f"{q.subject} (#{pr[0] + 3})\n", files, parent=parent)
            pr[0] += 5
            parent = ""
            marks[f"upstream{j}"] = mark
            continue
        if j in root_at:
            q = root_at[j]
            q.upstream = j
            path, start, length = root_slots[q.number]
            cut = rng.randrange(length)  # change at least one of the lines the patch replaces
            upstream.write(path, start + cut, 1, [(t, -j - 1) for t in
                                                  _new_lines(rng, f"u{j}", rng.randint(1, 3))])
            files[path] = upstream.render(path)
        for _ in range(rng.randint(1, 6)):
            if up_slots and rng.random() < 0.2:  # upstream follows up on its own change
                path, start = rng.choice(up_slots)
                length = upstream.slots[path][start][0]
            else:
                path = rng.choice(touched) if rng.random() < 0.25 else rng.choice(paths)
                length = rng.randint(1, 5)
                got = fs.take(path, length)
                if got is None:
                    continue
                start = got
                up_slots.append((path, start))
            upstream.write(path, start, length, [(t, -j - 1) for t in
                                                 _new_lines(rng, f"u{j}", rng.randint(1, 8))])
            files[path] = upstream.render(path)
        if rng.random() < 0.05:
            new = f"{rng.choice(paths).rsplit('/', 1)[0]}/{rng.choice(WORDS)}_u{j}.py"
            files[new] = _file(rng, templates, 100_000 + j, new).encode()
        what = f"{rng.choice(VERBS).capitalize()} the {rng.choice(WORDS)} {rng.choice(WORDS)}"
        mark = s.commit("refs/heads/main", up_author(), up_author(), up_subject(what) + "\n",
                        files, parent=parent)
        parent = ""
        marks[f"upstream{j}"] = mark
    s.ref("refs/remotes/upstream/main", marks[f"upstream{p.upstream - 1}"])

    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for k, v in (("user.name", "C O Mitter"), ("user.email", "committer@example.com"),
                 ("gc.auto", "0")):
        _git(repo, "config", k, v)
    for remote, slug in (("upstream", "vllm-project/vllm"), ("fork", "lab/vllm")):
        # a path that does not exist: nothing here ever fetches, and no URL leaves the machine
        _git(repo, "config", f"remote.{remote}.url", f"/nonexistent/{slug}.git")
        _git(repo, "config", f"remote.{remote}.fetch",
             f"+refs/heads/*:refs/remotes/{remote}/*")
    marks_file = repo.parent / "marks"
    _git(repo, "fast-import", "--quiet", f"--export-marks={marks_file}", input=b"".join(s.parts))
    sha = dict(line.split() for line in marks_file.read_text().splitlines())
    marks_file.unlink()
    _git(repo, "reset", "-q", "--hard", "refs/remotes/upstream/main")
    return {
        "params": asdict(p),
        "base": _git(repo, "rev-parse", "base"),
        "target": _git(repo, "rev-parse", "refs/remotes/upstream/main"),
        "patches": [{"number": q.number, "kind": q.kind, "subject": q.subject,
                     "author": q.author, "fixup": q.fixup, "builds_on": q.builds_on,
                     "upstream": sha[marks[f"upstream{q.upstream}"]] if q.upstream is not None
                     else None, "commit": sha[marks[f"patch{q.number}"]],
                     "paths": sorted({x for x, _ in q.slots})}
                    for q in plan],
    }


def ensure(p: Params, cache: Path) -> tuple[Path, bool]:
    """The generated repository for `p` under `cache`, built once: DIR/{repo,design.json},
    and whether this call built it. Built in a sibling folder and renamed into place, so a
    killed build is never reused."""
    done = cache / p.key()
    if (done / "design.json").exists():
        return done, False
    cache.mkdir(parents=True, exist_ok=True)
    tmp = cache / f"{p.key()}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    info = generate(p, tmp / "repo")
    (tmp / "design.json").write_text(json.dumps(info, indent=1) + "\n")
    shutil.rmtree(done, ignore_errors=True)
    os.rename(tmp, done)
    return done, True
