"""The replay engine, below every command that turns patches into commits. Imports base, git
and series only.

- `chain`: the series' patches as commits on its base (cached); `preimage` and `hunks` apply a
  patch in-process where git could only do the same;
- `targets`: what to replay onto; `drops`: what upstream already has;
- `engine`: the replay of one target, its forecast of later conflicts; `runs`: the series cut
  into runs of disjoint paths, one merge each;
- `furthest`: the newest commit of a target's line the series replays onto, bisected;
- `resolution`: a hand-resolved conflict becomes the patch's commit; `reuse`: a branch that
  already holds the replay keeps its commits;
- `audit`: what a cleanly applied patch breaks at the result (`pyfacts`, `pytext` read the
  Python files without importing them).
"""
