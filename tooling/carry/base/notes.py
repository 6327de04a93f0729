"""Notes for the user that are not the result: one line on stderr, so stdout stays
parseable. Any stage may leave one (a foreign PR ignored, a retry); `cli.main` wraps stderr
in the scrubber, so a note can never print a token."""

from __future__ import annotations

import sys


def warn(text: str) -> None:
    sys.stderr.write(f"carry: note: {text}\n")
