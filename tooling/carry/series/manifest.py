"""The manifest, `series/<name>/series.toml`: its dataclasses, reading and writing it. Reading
is strict: every key is checked for its type, and a key the reader never asked for (a misspelt
`requried`) is an error, not a silent default. Writing leaves out what is empty, so that a
hand-written manifest and a rewritten one look alike."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from carry.base.errors import CarryError
from carry.series.linearized import Linearized
from carry.series.names import check_name as check_name  # its readers name it here too
from carry.series.names import check_repo as check_repo

SCHEMA = 1
T = TypeVar("T")


class ManifestError(CarryError):
    """A manifest field is wrong; the message names the file, the key and what was expected."""


@dataclass
class Repository:
    repo: str
    url: str = ""
    remote: str = ""
    branch: str = ""
    package: str = ""  # the package-index name of its releases (vLLM: "vllm")


@dataclass
class Base:
    ref: str = ""
    commit: str = ""


@dataclass
class Target:
    """Where the series should apply: one ref, or the newest tags matching a pattern."""

    name: str
    ref: str = ""
    tags: str = ""
    latest: int = 1
    kind: str = ""  # informational: main | release | dev
    prereleases: bool = False  # tag targets: also rc/dev/alpha/beta versions


@dataclass
class Provenance:
    pr: str
    role: str  # origin | superseded | consolidated | upstream-equivalent | related
    title: str = ""
    author: str = ""
    state: str = ""
    draft: bool = False
    patches: list[int] = field(default_factory=list)
    merged_as: str = ""
    into: str = ""
    superseded_by: str = ""
    note: str = ""


ROLES = ("origin", "superseded", "consolidated", "upstream-equivalent", "related")


@dataclass
class TrailerException:
    patch: int
    trailers: list[str]
    reason: str


@dataclass
class Policy:
    required: list[str] = field(default_factory=lambda: ["Signed-off-by"])
    ai_attribution: str = "Assisted-by"
    person_trailers: list[str] = field(
        default_factory=lambda: ["Signed-off-by", "Co-authored-by", "Reviewed-by", "Acked-by"]
    )
    exceptions: list[TrailerException] = field(default_factory=list)
    auto_resolve: bool = True  # conflicts whose three texts decide them resolve themselves

    def exception_for(self, number: int, trailer: str) -> TrailerException | None:
        for exc in self.exceptions:
            if exc.patch == number and trailer in exc.trailers:
                return exc
        return None


@dataclass
class Expected:
    """A patch the manifest knows should exist, before (or to check) an import."""

    patch: int
    author: str
    trailers: list[str] = field(default_factory=list)
    note: str = ""


@dataclass
class Hook:
    """One `pre-commit run` step. An empty id runs every hook of the stage."""

    id: str = ""
    stage: str = ""
    fallback: str = ""


@dataclass
class TestPlan:
    image: str = ""
    python: str = "python"
    requirements: list[str] = field(default_factory=list)
    pytest_args: list[str] = field(default_factory=lambda: ["-q", "-p", "no:cacheprovider"])
    suites: list[str] = field(default_factory=list)
    hooks: list[Hook] = field(default_factory=list)
    diff_check: bool = True
    env: dict[str, str] = field(default_factory=dict)  # what every step sees; never a secret
    allow_empty: list[str] = field(default_factory=list)  # suites that may select no test


@dataclass
class SupersedeConfig:
    label: str = ""  # added to each PR `carry supersede --apply` closes


@dataclass
class CiConfig:
    open_limit: int = 0  # at most this many PRs and issues opened per CI run; 0: no limit


@dataclass
class ChangelogEntry:
    version: int
    date: str
    summary: str


@dataclass
class Manifest:
    name: str
    title: str
    version: int = 0
    upstream: Repository = field(default_factory=lambda: Repository(repo=""))
    fork: Repository = field(default_factory=lambda: Repository(repo=""))
    base: Base = field(default_factory=Base)
    targets: list[Target] = field(default_factory=list)
    provenance: list[Provenance] = field(default_factory=list)
    policy: Policy = field(default_factory=Policy)
    expected: list[Expected] = field(default_factory=list)
    test: TestPlan = field(default_factory=TestPlan)
    changelog: list[ChangelogEntry] = field(default_factory=list)
    supersede: SupersedeConfig = field(default_factory=SupersedeConfig)
    ci: CiConfig = field(default_factory=CiConfig)
    linearized: list[Linearized] = field(default_factory=list)

    def target(self, name: str) -> Target:
        for t in self.targets:
            if t.name == name:
                return t
        from carry.base.suggest import did_you_mean

        names = [t.name for t in self.targets]
        raise CarryError(f"unknown target {name!r} for series {self.name} (known: "
                         f"{', '.join(names) or 'none'})", hint=did_you_mean(name, names))


class _Reader:
    """Typed access to a TOML table that names the file and key in every error.

    Every reader remembers the keys it was asked for, so that a misspelt key (`requried`)
    is reported instead of silently falling back to a default.
    """

    def __init__(self, path: Path, table: dict[str, Any], where: str = "",
                 family: list[_Reader] | None = None) -> None:
        self.path, self.table, self.where = path, table, where
        self.seen: set[str] = set()
        self.family = family if family is not None else []
        self.family.append(self)

    def reject_unknown(self) -> None:
        for reader in self.family:
            for key in reader.table:
                if key not in reader.seen:
                    known = ", ".join(sorted(reader.seen)) or "none"
                    raise ManifestError(f"{self.path}: key '{reader._key(key)}' is not known "
                                        f"(known here: {known})")

    def _key(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, expected: str, got: object) -> ManifestError:
        shown = repr(got) if not isinstance(got, dict) else "a table"
        return ManifestError(f"{self.path}: key '{self._key(key)}': expected {expected}, got "
                             f"{shown}")

    def get(self, key: str, kind: type[T], default: T | None = None, required: bool = False) -> T:
        self.seen.add(key)
        if key not in self.table:
            if required or default is None:
                raise ManifestError(f"{self.path}: key '{self._key(key)}' is missing")
            return default
        value = self.table[key]
        if kind is int and isinstance(value, bool) or not isinstance(value, kind):
            raise self.fail(key, _describe(kind), value)
        return value

    def text(self, key: str, default: str = "", required: bool = False) -> str:
        return self.get(key, str, default, required)

    def strs(self, key: str, default: list[str] | None = None) -> list[str]:
        value = self.get(key, list, list(default or []))
        if not all(isinstance(v, str) for v in value):
            raise self.fail(key, "a list of strings", value)
        return list(value)

    def ints(self, key: str) -> list[int]:
        value = self.get(key, list, [])
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.fail(key, "a list of patch numbers", value)
        return list(value)

    def sub(self, key: str) -> _Reader:
        return _Reader(self.path, self.get(key, dict, {}), self._key(key), self.family)

    def subs(self, key: str) -> list[_Reader]:
        out = []
        for i, item in enumerate(self.get(key, list, [])):
            if not isinstance(item, dict):
                raise self.fail(f"{key}[{i}]", "a table", item)
            out.append(_Reader(self.path, item, self._key(f"{key}[{i}]"), self.family))
        return out


def _describe(kind: type) -> str:
    return {str: "a string", int: "an integer", bool: "true or false", list: "a list",
            dict: "a table"}.get(kind, kind.__name__)


def parse_manifest(path: Path, data: dict[str, Any]) -> Manifest:
    r = _Reader(path, data)
    schema = r.get("schema", int, SCHEMA)
    if schema != SCHEMA:
        raise r.fail("schema", f"{SCHEMA}", schema)
    name = r.text("name", required=True)
    try:
        check_name(name)
    except CarryError:
        raise r.fail("name", "a series name (letters, digits, '.', '_', '-')", name) from None
    version = r.get("version", int, 0)
    if version < 0:
        raise r.fail("version", "an integer >= 0", version)
    m = Manifest(name=name, title=r.text("title", required=True), version=version)
    m.upstream = _repository(r.sub("upstream"))
    m.fork = _repository(r.sub("fork"))
    b = r.sub("base")
    m.base = Base(ref=b.text("ref"), commit=b.text("commit"))
    if m.base.commit and not re.fullmatch(r"[0-9a-f]{7,40}", m.base.commit):
        raise b.fail("commit", "a hex commit id", m.base.commit)
    for t in r.subs("target"):
        target = Target(name=t.text("name", required=True), ref=t.text("ref"), tags=t.text("tags"),
                        latest=t.get("latest", int, 1), kind=t.text("kind"),
                        prereleases=t.get("prereleases", bool, False))
        if re.sub(r"[^A-Za-z0-9._-]+", "-", target.name).strip("-.") == "tip":  # the CI's
            raise t.fail("name", "a name other than 'tip' (carry/NAME/tip)", target.name)
        if bool(target.ref) == bool(target.tags):
            raise t.fail("ref", "exactly one of 'ref' or 'tags'", target.ref or None)
        m.targets.append(target)
    for p in r.subs("provenance"):
        prov = Provenance(
            pr=p.text("pr", required=True), role=p.text("role", required=True),
            title=p.text("title"), author=p.text("author"), state=p.text("state"),
            draft=p.get("draft", bool, False), patches=p.ints("patches"),
            merged_as=p.text("merged_as"), into=p.text("into"),
            superseded_by=p.text("superseded_by"), note=p.text("note"),
        )
        if prov.role not in ROLES:
            raise p.fail("role", "one of " + ", ".join(ROLES), prov.role)
        if not re.fullmatch(r"[\w.-]+/[\w.-]+#[0-9]{1,10}", prov.pr, re.ASCII):
            raise p.fail("pr", "owner/repo#number", prov.pr)
        m.provenance.append(prov)
    pol = r.sub("policy")
    m.policy = Policy(
        required=pol.strs("required", ["Signed-off-by"]),
        ai_attribution=pol.text("ai_attribution", "Assisted-by"),
        person_trailers=pol.strs("person_trailers", Policy().person_trailers),
        auto_resolve=pol.get("auto_resolve", bool, True),
    )
    for e in pol.subs("exception"):
        m.policy.exceptions.append(TrailerException(
            patch=e.get("patch", int, required=True), trailers=e.strs("trailers"),
            reason=e.text("reason", required=True)))
    for e in r.subs("expect"):
        m.expected.append(Expected(patch=e.get("patch", int, required=True),
                                   author=e.text("author", required=True),
                                   trailers=e.strs("trailers"), note=e.text("note")))
    t = r.sub("test")
    m.test = TestPlan(
        image=t.text("image"), python=t.text("python", "python"),
        requirements=t.strs("requirements"), suites=t.strs("suites"),
        pytest_args=t.strs("pytest_args", TestPlan().pytest_args),
        diff_check=t.get("diff_check", bool, True), env=t.get("env", dict, {}),
        allow_empty=t.strs("allow_empty"))
    if not all(isinstance(v, str) for v in m.test.env.values()):  # a name is a TOML string
        raise t.fail("env", "a table of strings", m.test.env)
    m.test.hooks = [Hook(id=h.text("id"), stage=h.text("stage"), fallback=h.text("fallback"))
                    for h in t.subs("hook")]
    for c in r.subs("changelog"):
        m.changelog.append(ChangelogEntry(version=c.get("version", int, required=True),
                                          date=c.text("date"), summary=c.text("summary")))
    m.supersede = SupersedeConfig(label=r.sub("supersede").text("label"))
    m.ci = CiConfig(open_limit=(ci := r.sub("ci")).get("open_limit", int, 0))
    if m.ci.open_limit < 0:
        raise ci.fail("open_limit", "an integer >= 0", m.ci.open_limit)
    m.linearized = [Linearized.read(x) for x in r.subs("linearized")]
    r.reject_unknown()
    return m


def _repository(r: _Reader) -> Repository:
    from carry.git import check_remote

    remote = r.text("remote")
    try:
        if remote:
            check_remote(remote)  # it reaches git fetch, ls-remote and push
    except CarryError:
        raise r.fail("remote", "a git remote name (not starting with '-')", remote) from None
    repo = Repository(repo=r.text("repo"), url=r.text("url"), remote=remote,
                      branch=r.text("branch"), package=r.text("package"))
    if repo.repo:
        try:
            check_repo(repo.repo)
        except CarryError:
            raise r.fail("repo", "OWNER/REPO", repo.repo) from None
    return repo


def dump_manifest(m: Manifest) -> str:
    import tomli_w

    def prune(d: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in d.items() if v not in ("", [], None, {}) and v is not False}

    doc: dict[str, Any] = {"schema": SCHEMA, "name": m.name, "title": m.title,
                           "version": m.version}
    for key, repo in (("upstream", m.upstream), ("fork", m.fork)):
        if repo.repo:
            doc[key] = prune(vars(repo).copy())
    doc["base"] = {"ref": m.base.ref, "commit": m.base.commit}
    if m.targets:
        doc["target"] = [prune({**vars(t), "latest": t.latest if t.tags else None})
                         for t in m.targets]
    if m.provenance:
        doc["provenance"] = [prune(vars(p).copy()) for p in m.provenance]
    pol: dict[str, Any] = {"required": m.policy.required,
                           "ai_attribution": m.policy.ai_attribution,
                           "person_trailers": m.policy.person_trailers}
    if not m.policy.auto_resolve:
        pol["auto_resolve"] = False
    if m.policy.exceptions:
        pol["exception"] = [vars(e).copy() for e in m.policy.exceptions]
    doc["policy"] = pol
    if m.expected:
        doc["expect"] = [prune(vars(e).copy()) for e in m.expected]
    test = prune({k: v for k, v in vars(m.test).items() if k != "hooks"})
    test["diff_check"] = m.test.diff_check
    test["pytest_args"] = m.test.pytest_args  # an explicit [] must not fall back to the default
    if m.test.hooks:
        test["hook"] = [prune(vars(h).copy()) for h in m.test.hooks]
    doc["test"] = test
    if m.changelog:
        doc["changelog"] = [vars(c).copy() for c in m.changelog]
    if m.supersede.label:
        doc["supersede"] = {"label": m.supersede.label}
    doc.update({"ci": {"open_limit": m.ci.open_limit}} if m.ci.open_limit else {})
    doc.update({"linearized": [vars(x).copy() for x in m.linearized]} if m.linearized else {})
    text = tomli_w.dumps(doc)
    if not (m.test.suites or m.test.hooks):  # say how to fill it in, on every rewrite
        text = text.replace("\n[test]\n", "\n" + TEST_PLAN_HELP + "[test]\n", 1)
    return text


TEST_PLAN_HELP = """\
# The test plan names no suites: `carry validate` fails until it does (or is given
# --allow-no-tests). For example:
#   image = "registry/name@sha256:<digest>"   # the container, pinned by digest
#   python = "/opt/venv/bin/python"
#   requirements = ["tblib"]                   # installed before pytest runs
#   suites = ["tests/test_feature.py"]         # run as: python -m pytest <pytest_args> <suites>
#   [[test.hook]]                              # pre-commit run --files <changed files>
#   id = ""                                    # "" runs every hook; `fallback` maps a renamed id
"""

