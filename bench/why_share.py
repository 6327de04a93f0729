"""What a replay's root causes cost against the replay: `replay_target` of the series in
one process with `replay.why` in the foreground (not on its thread), the why work timed
apart. Prints the seconds, the git processes the why work started (by command), each
conflicting patch's answer as one JSON line (`answers`), and, last, why's seconds over the
rest's. With `--answers FILE` the answers are also written there, or, when FILE exists,
checked against it (exit 1 on a difference): a faster why must give the same answers.

Usage: python bench/why_share.py REPO SERIES_DIR ONTO_REF [--answers FILE]
(PYTHONPATH: this tooling/)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from carry.git import Repo
from carry.replay import engine
from carry.replay import why as whymod
from carry.replay.chain import load_chain
from carry.replay.targets import ResolvedTarget
from carry.series import store


def main() -> None:
    repo_path, series_dir, onto_ref = sys.argv[1:4]
    keep = Path(sys.argv[5]) if sys.argv[4:5] == ["--answers"] else None
    spent, inside = [0.0], [False]
    started: Counter[str] = Counter()
    init, add, finish = whymod.Why.__init__, whymod.Why.add, whymod.Why.finish
    popen = subprocess.Popen

    def foreground(self: Any, repo: Repo, steps: Any, onto: str, background: bool = True
                   ) -> None:
        init(self, repo, steps, onto, background=False)

    def timed(fn: Any) -> Any:
        def run(self: Any, *args: Any) -> Any:
            t0 = time.perf_counter()
            inside[0] = True
            try:
                return fn(self, *args)
            finally:
                inside[0] = False
                spent[0] += time.perf_counter() - t0
        return run

    class Counted(popen):  # type: ignore[valid-type,misc]
        def __init__(self, args: Any, *rest: Any, **kw: Any) -> None:
            if inside[0] and isinstance(args, list) and args[:1] == ["git"]:
                started[next((a for a in args[1:] if not a.startswith("-") and "=" not in a),
                             "?")] += 1
            super().__init__(args, *rest, **kw)

    whymod.Why.__init__ = foreground  # type: ignore[method-assign]
    whymod.Why.add, whymod.Why.finish = timed(add), timed(finish)  # type: ignore[method-assign]
    subprocess.Popen = Counted  # type: ignore[misc]
    repo = Repo.open(Path(repo_path))
    series = store.load(Path(series_dir))
    t0 = time.perf_counter()
    base, carried = load_chain(series, repo)
    onto = repo.rev_parse(onto_ref)
    done = engine.replay_target(series, repo, base, carried,
                                ResolvedTarget("upstream-main", onto_ref, onto),
                                repo.committer_ident())
    total = time.perf_counter() - t0
    answers = [{"file": p.file, "status": p.status, "cause": p.cause,
                "builds_on": p.builds_on, "look": p.look}
               for p in done.result.patches if p.status in whymod.CONFLICTING]
    print("answers " + json.dumps(answers, sort_keys=True))
    if keep is not None and keep.exists():
        if json.loads(keep.read_text()) != answers:
            raise SystemExit(f"the answers differ from {keep}")
        print(f"same answers as {keep}")
    elif keep is not None:
        keep.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    roots = sum(1 for p in done.result.patches if p.cause)
    print("why's git processes: " + ", ".join(f"{n} {cmd}" for cmd, n in started.most_common()))
    print(f"replay {total - spent[0]:.3f} s, why {spent[0]:.3f} s ({roots} root causes) "
          f"{spent[0] / (total - spent[0]):.3f}")


if __name__ == "__main__":
    main()
