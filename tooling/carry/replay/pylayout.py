"""What of a Python fragment is layout, for `autoresolve`'s re-format class: its tokens with
line breaks and spaces inside brackets left out (a re-wrap, a trailing comma), but the
indentation of every line that starts outside the fragment's own brackets kept, since there
it says which block a statement is in (`b()` moved into an `if` is a change, not a layout);
and the lines of the strings that span lines, where layout is content."""

from __future__ import annotations

import io
import tokenize

Lines = tuple[bytes, ...]
_CLOSING = {")", "]", "}"}
_OPENING = {"(", "[", "{"}
_SKIP = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
_DEPTH = 64  # open brackets put before a fragment, so that it tokenizes from any line


def tokens(lines: Lines) -> list[str] | None:
    """The fragment's tokens without layout, each line that starts at the fragment's own
    bracket depth 0 or less marked by its indentation ("\\n" + the indent), or None when it
    does not tokenize on its own (a string left open)."""
    try:
        text = "(" * _DEPTH + b"".join(lines).decode("utf-8")
    except UnicodeDecodeError:
        return None
    out: list[str] = []
    depth, row, seen = 0, 0, 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _SKIP:
                continue
            seen += 1
            if seen <= _DEPTH:  # the brackets put before it
                continue
            if tok.start[0] != row and tok.type != tokenize.COMMENT:
                row = tok.start[0]
                if depth <= 0:
                    out.append("\n" + tok.line[_DEPTH if row == 1 else 0:tok.start[1]])
            out.append(tok.string)
            depth += (tok.string in _OPENING) - (tok.string in _CLOSING) \
                if tok.type == tokenize.OP else 0
    except tokenize.TokenError as exc:
        if "statement" not in str(exc.args[0]):
            return None  # a string left open: its text was not read
        # else the open brackets never close: the end of the fragment
    except (SyntaxError, ValueError):
        return None
    return [s for k, s in enumerate(out)
            if not (s == "," and k + 1 < len(out) and out[k + 1] in _CLOSING)]


def long_strings(data: bytes) -> list[tuple[int, int]] | None:
    """The first and last lines of each string of a file that spans lines (None: it does not
    tokenize). A hunk inside one reads as code to `tokens`, its words as names."""
    try:
        return [(tok.start[0], tok.end[0]) for tok in tokenize.tokenize(io.BytesIO(data).readline)
                if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]]
    except (tokenize.TokenError, SyntaxError, ValueError):
        return None
