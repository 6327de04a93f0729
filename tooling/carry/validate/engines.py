"""Where the steps run: the local interpreter, or a podman/docker container pinned by digest.

A container engine only ever runs the exact image the plan names: the reference must carry
`@sha256:`, runs use `--pull=never`, and the local image's digests are checked before the
container starts. One container serves a whole validation (`run -d` then one `exec` per step),
so a requirement installed by the first step is there for pytest, and every step still gets
its own exit code and log.

The steps run the target's code: they get carry's environment without git's locating variables
and without any credential (`childenv.untrusted_env`), in a container only the variables named
here, and locally they die with carry (`groups`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from carry.base.childenv import untrusted_env
from carry.base.errors import CarryError
from carry.validate.groups import Groups

ENGINES = ("local", "podman", "docker")
# An image reference as registries define it: [DOMAIN[:PORT]/]PATH, lower-case path parts.
# Anything else (`--privileged@sha256:...`) would reach the engine's command line as an option.
_PATH_PART = r"[a-z0-9]+(?:[._-]+[a-z0-9]+)*"
_DIGEST = re.compile(
    rf"^(?P<name>(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?(?::[0-9]+)?/)?{_PATH_PART}"
    rf"(?:/{_PATH_PART})*)@(?P<digest>sha256:[0-9a-f]{{64}})\Z")
# Worktrees are owned by the host user, so git inside a container must not call them dubious;
# pip must not ask PyPI about its own version in the middle of a step.
_STEP_ENV = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
             "GIT_CONFIG_VALUE_0": "*", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


# What differs between two shells of one user and never changes a test's outcome: left out of
# the local engine's key, so a new terminal still finds the cache.
_VOLATILE = re.compile(r"PWD|OLDPWD|SHLVL|_|TERM(_.*)?|COLORTERM|COLUMNS|LINES|SSH_.*|DISPLAY|"
                       r"WINDOWID|TMUX(_.*)?|STY|XDG_SESSION_.*|XDG_RUNTIME_DIR|DBUS_.*|MAIL|"
                       r"LS_COLORS|PS[1-4]|HIST.*|PYTEST_CURRENT_TEST")

_NAME = "carry-validate-"  # a container's name: carry-validate-HOST-PID-RANDOM


def host_tag() -> str:
    """This host, as a container name may spell it."""
    return re.sub(r"[^a-zA-Z0-9_.]+", "_", os.uname().nodename)[:40] or "host"


class EngineError(CarryError):
    """The engine cannot run the plan: not installed, not running, or not the pinned image."""


@dataclass(frozen=True)
class Mount:
    """A host path bind-mounted at the same path, so git's worktree links resolve inside."""

    path: Path
    read_only: bool = False


class Session(Protocol):
    def run(self, argv: Sequence[str], cwd: Path, log: Path) -> int: ...


class Engine(Protocol):
    name: str
    python: str

    def identity(self) -> str:
        """What the results depend on besides the tree and the plan; no container starts."""
        ...

    def check(self) -> None: ...

    def session(self, mounts: Sequence[Mount]) -> AbstractContextManager[Session]: ...


def _write_log(log: Path, argv: Sequence[str], cwd: Path) -> None:
    import shlex

    from carry.base import atomic

    atomic.write_text(log, f"# cwd: {cwd}\n$ {shlex.join(argv)}\n")


@contextmanager
def _output(log: Path) -> Iterator[IO[bytes]]:
    """Where a step writes its output: a file with no name (a kill leaves nothing to read),
    copied into the step's log through the scrubber once the step ends, so what the code
    under test prints reaches no file with a token in it."""
    import tempfile

    from carry.base import redact

    with tempfile.TemporaryFile(dir=log.parent) as raw:
        yield raw
        raw.seek(0)
        with open(log, "ab") as fh:
            redact.copy_scrubbed(raw, fh)


def _path_with(python: str, path: str) -> str:
    """Put the interpreter's bin directory first, so `pre-commit` and hooks' `python` are the
    plan's (as `/opt/venv/bin` is in the pinned vLLM image)."""
    if "/" not in python:
        return path
    return os.pathsep.join([os.path.dirname(python), path]) if path else os.path.dirname(python)


@dataclass
class LocalSession:
    env: dict[str, str]
    groups: Groups

    def run(self, argv: Sequence[str], cwd: Path, log: Path) -> int:
        _write_log(log, argv, cwd)
        with _output(log) as fh:
            try:
                return self.groups.run(argv, cwd, self.env, fh)
            except FileNotFoundError as exc:
                fh.write(f"carry: cannot run {argv[0]}: {exc.strerror}\n".encode())
                return 127


@dataclass
class LocalEngine:
    """The steps on this machine with a given interpreter: for development and carry's tests."""

    python: str
    name: str = "local"
    env: dict[str, str] = field(default_factory=dict)  # the plan's [test].env

    def _resolved(self) -> str:
        found = shutil.which(self.python)
        if not found:
            raise EngineError(f"interpreter {self.python!r} not found on this machine",
                              hint="pass --python PATH for --engine local")
        return os.path.realpath(found)

    def identity(self) -> str:
        """The interpreter, its installed packages (a site-packages directory changes its mtime
        whenever a distribution is added, removed or upgraded) and the environment the steps
        see (HF_HOME set in the shell changes what a test finds), as a digest."""
        import hashlib

        path = self._resolved()
        prefix = Path(shutil.which(self.python) or path).parent.parent
        stamps = [f"{path}:{os.stat(path).st_size}:{os.stat(path).st_mtime_ns}"]
        for site in sorted(prefix.glob("lib/python*/site-packages")):
            stamps.append(f"{site}:{site.stat().st_mtime_ns}")
        env = sorted((k, v) for k, v in self.step_env().items() if not _VOLATILE.fullmatch(k))
        stamps.append("env:" + hashlib.sha256(repr(env).encode()).hexdigest()[:16])
        return "local:" + ";".join(stamps)

    def check(self) -> None:
        self._resolved()

    def step_env(self) -> dict[str, str]:
        """What the steps see: no credential and no git locating variable."""
        return untrusted_env({**self.env,
                              "PATH": _path_with(self.python, os.environ.get("PATH", "")),
                              "PIP_DISABLE_PIP_VERSION_CHECK": "1"})

    @contextmanager
    def session(self, mounts: Sequence[Mount]) -> Iterator[Session]:
        with Groups() as groups:
            yield LocalSession(self.step_env(), groups)


def parse_image(image: str) -> tuple[str, str]:
    """(name, sha256:digest); anything not pinned by digest is refused."""
    m = _DIGEST.match(image.strip())
    if not m:
        raise EngineError(
            f"image {image!r} is not pinned by digest; carry runs container images by digest only",
            hint="write [test].image as NAME@sha256:<64 hex digits>")
    return m.group("name"), m.group("digest")


def _first_line(data: bytes) -> str:
    for line in data.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line:
            return line.removeprefix("Error: ").removeprefix("error: ")
    return "no output"


def _same_repository(a: str, b: str) -> bool:
    """podman files `carry-test` as `localhost/carry-test`, docker `x` as `docker.io/library/x`."""
    def norm(n: str) -> str:
        for prefix in ("docker.io/library/", "docker.io/", "localhost/"):
            n = n.removeprefix(prefix)
        return n

    return norm(a) == norm(b)


@dataclass
class ContainerSession:
    exe: str
    cid: str
    env: dict[str, str]

    def run(self, argv: Sequence[str], cwd: Path, log: Path) -> int:
        _write_log(log, argv, cwd)
        cmd = [self.exe, "exec", "-w", str(cwd)]
        for k, v in self.env.items():
            cmd += ["-e", f"{k}={v}"]
        with _output(log) as fh:
            proc = subprocess.run([*cmd, self.cid, *argv], stdout=fh, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, env=untrusted_env())
        return proc.returncode


@dataclass
class ContainerEngine:
    """podman or docker, by digest only; the steps run inside one container per validation."""

    name: str  # podman | docker
    image: str
    python: str
    env: dict[str, str] = field(default_factory=dict)  # the plan's [test].env
    _image_path: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        self.repository, self.digest = parse_image(self.image)

    def identity(self) -> str:
        return f"{self.name}:{self.digest}"

    def _exe(self) -> str:
        exe = shutil.which(self.name)
        if not exe:
            hint = ("apt-get install podman runc (see ci/container/setup-podman.sh)"
                    if self.name == "podman" else "install docker, or use --engine podman")
            raise EngineError(f"{self.name} is not installed (not found on PATH)", hint=hint)
        return exe

    def _cmd(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([self._exe(), *args], capture_output=True,
                              stdin=subprocess.DEVNULL, env=untrusted_env())

    def _engine_down(self, stderr: bytes) -> EngineError | None:
        text = stderr.decode("utf-8", "replace")
        if "Cannot connect to the Docker daemon" in text or "daemon running" in text or (
                "connect:" in text and ".sock" in text):
            where = os.environ.get("DOCKER_HOST") or os.environ.get("CONTAINER_HOST") or ""
            at = f" at {where}" if where else ""
            return EngineError(f"the {self.name} daemon is not running{at}: "
                               f"{_first_line(stderr)}",
                               hint=f"start it (e.g. systemctl start {self.name}), or use "
                                    "--engine podman / --engine local")
        return None

    def check(self) -> None:
        proc = self._cmd("image", "inspect", "--format",
                         "{{json .RepoDigests}}\t{{json .Config.Env}}", self.image)
        if proc.returncode == 0:
            digests_json, _, env_json = proc.stdout.decode().strip().partition("\t")
            self._verify(digests_json)
            self._image_path = _image_path(env_json)
            return
        down = self._engine_down(proc.stderr)
        if down:
            raise down
        text = proc.stderr.decode("utf-8", "replace").lower()
        if "no such" not in text and "not known" not in text and "not found" not in text:
            raise EngineError(f"{self.name} cannot inspect images: {_first_line(proc.stderr)}",
                              hint="check the engine works: "
                                   f"{self.name} info (podman here needs CONTAINERS_CONF, "
                                   "see ci/container/setup-podman.sh)")
        present = self._local_digests()
        short = self.digest[:19]
        if present:
            shown = ", ".join(sorted({d[:19] for d in present}))
            raise EngineError(
                f"image {self.repository} is present only with digest {shown}, "
                f"not the pinned {short}…; carry will not run a different image",
                hint="load the pinned image, or update [test].image if the pin is wrong")
        raise EngineError(
            f"image {self.image} is not present in {self.name}'s local images; "
            "carry never pulls",
            hint=f"fetch or build it first (e.g. {self.name} pull {self.image})")

    def _verify(self, digests_json: str) -> None:
        from carry.base import untrusted

        try:
            repo_digests = untrusted.loads_json(digests_json, list)
        except ValueError:
            repo_digests = []
        if not any(str(d).endswith("@" + self.digest) for d in repo_digests):
            raise EngineError(f"{self.name} resolved {self.image} to an image without that "
                              "digest; carry will not run a different image",
                              hint=f"{self.name} image inspect {self.image}")

    def _local_digests(self) -> list[str]:
        proc = self._cmd("images", "--no-trunc", "--format", "{{.Repository}} {{.Digest}}")
        out = []
        for line in proc.stdout.decode().splitlines():
            repo, _, digest = line.partition(" ")
            if _same_repository(repo, self.repository) and digest.startswith("sha256:"):
                out.append(digest)
        return out

    def step_env(self) -> dict[str, str]:
        """What the steps see (`exec -e`), and all they see of this machine's environment:
        only these names, never a token."""
        env = {**self.env, **_STEP_ENV}
        env["PATH"] = _path_with(self.python, self._image_path)
        if self.name == "docker" and os.getuid() != 0:
            env["HOME"] = "/tmp"
        return env

    @contextmanager
    def session(self, mounts: Sequence[Mount]) -> Iterator[Session]:
        if not self._image_path:
            self.check()
        self._sweep()
        name = f"{_NAME}{host_tag()}-{os.getpid()}-{os.urandom(4).hex()}"
        cmd = ["run", "-d", "--rm", "--name", name, "--pull=never", "--entrypoint", "sleep"]
        env = self.step_env()
        if self.name == "docker" and os.getuid() != 0:
            # files written into the bind mounts must stay the user's; HOME must be writable
            cmd += ["--user", f"{os.getuid()}:{os.getgid()}"]
        for m in mounts:
            cmd += ["-v", f"{m.path}:{m.path}:{'ro' if m.read_only else 'rw'}"]
        proc = self._cmd(*cmd, self.image, "infinity")
        if proc.returncode != 0:
            raise self._engine_down(proc.stderr) or EngineError(
                f"{self.name} cannot start {self.image}: {_first_line(proc.stderr)}",
                hint=f"try: {self.name} run --rm --pull=never {self.image} true")
        cid = proc.stdout.decode().strip().splitlines()[-1]
        try:
            yield ContainerSession(self._exe(), cid, env)
        finally:
            self._remove(cid)

    def _remove(self, cid: str) -> None:
        self._cmd(*(["rm", "-f", cid] if self.name == "docker" else ["rm", "-f", "-t", "0", cid]))

    def _sweep(self) -> None:
        """Remove the containers of validations on this host whose carry is gone: one killed
        with -9 cannot stop its `sleep infinity` container. The name says which host and
        process made it; another host's (a shared daemon) or a live one's is left alone."""
        from carry.base import scratch

        proc = self._cmd("ps", "-a", "--filter", f"name={_NAME}", "--format", "{{.Names}}")
        stem = f"{_NAME}{host_tag()}-"
        for name in proc.stdout.decode("utf-8", "replace").split():
            if scratch.maker_dead(name, stem):
                self._remove(name)


def _image_path(env_json: str) -> str:
    from carry.base import untrusted

    default = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    try:
        env = untrusted.loads_json(env_json, list)  # the image's own config: not carry's
    except ValueError:
        return default
    for item in env:
        if str(item).startswith("PATH="):
            return str(item)[5:]
    return default


def make(engine: str, image: str, python: str, env: dict[str, str] | None = None) -> Engine:
    """The engine, with the plan's own environment for every step (`[test].env`)."""
    if engine not in ENGINES:
        raise CarryError(f"unknown engine {engine!r}", hint="use " + ", ".join(ENGINES))
    if engine == "local":
        return LocalEngine(python, env=dict(env or {}))
    if not image:
        raise EngineError(f"--engine {engine} needs [test].image in the manifest",
                          hint="pin it as NAME@sha256:<digest>, or use --engine local")
    return ContainerEngine(engine, image, python, env=dict(env or {}))
