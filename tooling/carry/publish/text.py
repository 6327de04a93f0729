"""What carry may send GitHub as a body: at most GitHub's 65,536 characters (a longer one is
a 422, and the issue or PR never opens), and text from elsewhere (test output, assertion
messages, upstream subjects) made inert: no `@mention` that pings a team, no raw HTML (`<!--`
would hide the rest of the body, `<img onerror>` is anyone's markup).
"""

from __future__ import annotations

LIMIT = 65_536  # GitHub's longest body, counted here in UTF-16 units (an emoji counts two)
ZWJ = "\u200d"


def size(text: str) -> int:
    """The length GitHub counts: UTF-16 code units, so never less than Python's len()."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def bounded(text: str, limit: int = LIMIT) -> str:
    """`text`, cut to `limit` with a last line saying how much was not shown; the last
    resort for every body carry sends (the callers drop whole rows first)."""
    if size(text) <= limit:
        return text
    room = limit - 200
    cut = text[:room]
    while size(cut) > room:
        cut = cut[: len(cut) - (size(cut) - room)]
    rest = len(text) - len(cut)
    return (f"{cut}\n\n_[{rest} more characters not shown: GitHub keeps at most {limit} "
            "in a body]_\n")


def inert(text: str) -> str:
    """Text from elsewhere, safe in Markdown prose or a table cell: `@` cannot mention (a
    zero-width joiner follows it), `<` and `>` open no tag or comment, `|` ends no cell, and
    it stays on one line."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("@", "@" + ZWJ).replace("|", "\\|").replace("\r", "")
            .replace("\n", " "))


def code(text: str) -> str:
    """`text` in a code span (where nothing is a mention or a tag), or inert when a backtick
    would end the span."""
    return f"`{text}`" if text and "`" not in text and "\n" not in text else inert(text)
