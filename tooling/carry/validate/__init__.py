"""`carry validate`: run a series' test plan against a target, the way its PR's Test Plan ran.

plan.py resolves the manifest's plan against the target tree (hook drift included), engines.py
runs steps locally or in a container pinned by digest, steps.py runs the plan's steps and says
why each failed, results.py holds what a run found and reads JUnit XML, cache.py keys finished
reports, baseline.py commits the target without the fix and judges which of the series' tests
prove it, and run.py ties them together. Imports base, git, series and replay.
"""
