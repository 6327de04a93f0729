"""What a replay's root causes cost against the replay: `replay_target` of the series in
one process with `replay.why` in the foreground (not on its thread), the why work timed
apart. Prints the seconds and, last, why's seconds over the rest's.

Usage: python bench/why_share.py REPO SERIES_DIR ONTO_REF   (PYTHONPATH: this tooling/)
"""

from __future__ import annotations

import sys
import time
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
    spent = [0.0]
    init, add, finish = whymod.Why.__init__, whymod.Why.add, whymod.Why.finish

    def foreground(self: Any, repo: Repo, steps: Any, onto: str, background: bool = True
                   ) -> None:
        init(self, repo, steps, onto, background=False)

    def timed(fn: Any) -> Any:
        def run(self: Any, *args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(self, *args)
            finally:
                spent[0] += time.perf_counter() - t0
        return run

    whymod.Why.__init__ = foreground  # type: ignore[method-assign]
    whymod.Why.add, whymod.Why.finish = timed(add), timed(finish)  # type: ignore[method-assign]
    repo = Repo.open(Path(repo_path))
    series = store.load(Path(series_dir))
    t0 = time.perf_counter()
    base, carried = load_chain(series, repo)
    onto = repo.rev_parse(onto_ref)
    done = engine.replay_target(series, repo, base, carried,
                                ResolvedTarget("upstream-main", onto_ref, onto),
                                repo.committer_ident())
    total = time.perf_counter() - t0
    roots = sum(1 for p in done.result.patches if p.cause)
    print(f"replay {total - spent[0]:.3f} s, why {spent[0]:.3f} s ({roots} root causes) "
          f"{spent[0] / (total - spent[0]):.3f}")


if __name__ == "__main__":
    main()
