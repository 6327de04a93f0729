"""The fail-before proof of `validate --baseline`: the series' test files on the unfixed base.

`baseline_commit` builds that tree (its identity and date are fixed, so the same inputs give the
same commit and cache key); `judge` reads both runs. Only a test the series adds or changes is
proof: an existing test of a module that fails to import on the base (it imports what the fix
adds) fails there for that reason alone, and is named as such instead.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence

from carry.git import Ident, Repo
from carry.validate.results import Baseline, Outcome, TestRun, summary_line

_CARRY = Ident("carry validate", "carry@localhost", "0 +0000")
MESSAGE = b"carry validate --baseline: the series' test files on the unfixed base\n"
_DEF = re.compile(rb"^\s*(?:async\s+)?def\s+(\w+)", re.M)


def baseline_commit(repo: Repo, onto: str, head: str, files: Sequence[str]) -> str:
    """`onto` with `files` as they are in `head`."""
    tree = repo.overlay_tree(onto, head, files)
    return repo.write_commit(tree, [onto], MESSAGE, _CARRY, _CARRY)


def definitions(text: bytes | None) -> dict[str, str]:
    """Each test function or method of a module ("Class::name" for a method) with its code,
    decorators included, comments not: two versions that differ here differ in behaviour.
    A module that does not parse gives its function names with no code (so all differ)."""
    if text is None:
        return {}
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {m.decode(): "" for m in _DEF.findall(text)}
    out: dict[str, str] = {}

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                out[prefix + node.name] = ast.unparse(node)
            elif isinstance(node, ast.ClassDef):
                walk(node.body, f"{prefix}{node.name}::")

    walk(tree.body, "")
    return out


def _qualname(test: str) -> tuple[str, str]:
    """(module path, "Class::func") of a node id, without its parameters."""
    module, _, rest = test.partition("::")
    return module, rest.split("[", 1)[0]


def judge(repo: Repo, onto: str, head_commit: str, commit: str, files: list[str],
          modules: list[str], head: TestRun | None, base: TestRun | None) -> Baseline:
    """Which tests the series adds or changes fail without the fix and pass with it."""
    if not modules:
        return Baseline(commit, files, None, "", [], [], [], True,
                        "the series changes no test module inside the planned suites")
    if base is None or head is None:
        which = "baseline" if base is None else "series' own"
        return Baseline(commit, files, base, "", [], [], [], True,
                        f"the {which} pytest run wrote no JUnit XML; see its log")
    before = {m: definitions(repo.show_file(onto, m)) for m in modules}
    after = {m: definitions(repo.show_file(head_commit, m)) for m in modules}

    def changed(test: str) -> bool:
        """Defined in the module with the series, and new there or different: a test it
        inherits or generates is not the series' own (conservative: no over-claim)."""
        module, name = _qualname(test)
        old, new = before.get(module, {}), after.get(module, {})
        return name in new and (name not in old or old[name] != new[name])

    proven: list[str] = []
    passes: list[str] = []
    both: list[str] = []
    broken: list[str] = []
    why = {f.test: f.message for f in base.failures}
    for test, outcome in base.outcomes.items():
        if "::" not in test and outcome is Outcome.ERROR:
            # The whole module did not collect on the base: its tests never ran there.
            mine = [h for h in head.outcomes if h.split("::", 1)[0] == test]
            ours = [h for h in mine if changed(h)]
            for h in ours:
                (proven if head.outcomes[h] is Outcome.PASSED else both).append(h)
            if not mine:
                both.append(test)
            broken.append(f"{test} did not import on the unfixed base"
                          + (f" ({why[test]})" if why.get(test) else "")
                          + f": none of its {len(mine)} tests ran there; "
                          + f"{len(ours)} of them the series adds or changes")
            continue
        if not changed(test):
            continue
        if outcome.bad:
            (proven if head.outcomes.get(test) is Outcome.PASSED else both).append(test)
        elif outcome is Outcome.PASSED:
            passes.append(test)
    flagged = not proven
    note = ("no test of the series fails without the fix: its tests do not prove it"
            if flagged else "")
    return Baseline(commit, files, base, summary_line(base, len(modules), "test module"),
                    proven, passes, both, flagged, note, broken)
