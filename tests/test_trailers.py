"""trailers.py against real `git interpret-trailers` on the same messages."""

from __future__ import annotations

import subprocess

import pytest

from carry.series import trailers

MESSAGES = {
    "simple": "S\n\nbody\n\nSigned-off-by: A <a@b>\n",
    "nobody": "S\n\nSigned-off-by: A <a@b>\n",
    "subject-only-trailer": "Signed-off-by: A <a@b>\n",
    "no-blank": "S\nSigned-off-by: A <a@b>\n",
    "cont": "S\n\nb\n\nLink: http://x\n  continued here\n\tand tab\nAcked-by: B <b@c>\n",
    "cherry": "S\n\nb\n\n(cherry picked from commit abc)\n",
    "cherry-mixed": "S\n\nb\n\nSigned-off-by: A <a@b>\n(cherry picked from commit abc)\n",
    "mixed-25": "S\n\nb\n\nthis is prose\nSigned-off-by: A <a@b>\n",
    "mixed-less": "S\n\nb\n\nprose one\nprose two\nprose three\nprose four\n"
                  "Signed-off-by: A <a@b>\n",
    "mixed-no-git": "S\n\nb\n\nprose\nAssisted-by: X\n",
    "space-before-colon": "S\n\nb\n\nSigned-off-by : A <a@b>\n",
    "no-space": "S\n\nb\n\nKey:value\n",
    "url": "S\n\nb\n\nsee http://example.com\n",
    "url-line": "S\n\nb\n\nhttp://example.com\n",
    "comment": "S\n\nb\n\n# comment\nSigned-off-by: A <a@b>\n",
    "crlf": "S\r\n\r\nb\r\n\r\nSigned-off-by: A <a@b>\r\n",
    "trailing-blank": "S\n\nb\n\nSigned-off-by: A <a@b>\n\n\n",
    "dashes": "S\n\nb\n---\nnot trailers\n\nSigned-off-by: A <a@b>\n",
    "underscore": "S\n\nb\n\nKey_x: v\n",
    "empty-value": "S\n\nb\n\nKey:\n",
    "leading-cont": "S\n\nb\n\n  indented first\nSigned-off-by: A <a@b>\n",
    "lowercase-sob": "S\n\nb\n\nprose\nsigned-off-by: A <a@b>\n",
    "blank-subject": "\n\nS\n\nSigned-off-by: A <a@b>\n",
    "assisted": "S\n\nb\n\nAssisted-by: OpenAI Codex\nSigned-off-by: logprobz <l@e>\n",
    "multi": "S\n\nb\n\nSigned-off-by: A <a@b>\nSigned-off-by: B <b@c>\nCo-authored-by: C <c@d>\n",
    "value-colon": "S\n\nb\n\nFixes: 123 (\"a: b\")\n",
    "token-digits": "S\n\nb\n\nX-1: y\n",
    "token-dash-start": "S\n\nb\n\n-X: y\n",
    "only-blank-para": "S\n\n\n\n",
    "scissors": "S\n\nb\n\nSigned-off-by: A <a@b>\n# " + "-" * 24 + " >8 " + "-" * 24 + "\nfoo\n",
    "space-lines": "S\n\nb\n   \nSigned-off-by: A <a@b>\n",
    "whitespace-only-line-in-block": "S\n\nb\n\nA: 1\n \nB: 2\n",
    "cont-after-prose": "S\n\nb\n\nprose\n  more\nSigned-off-by: A <a@b>\n",
    "comment-no-signoff": "S\n\nb\n\n# c\nAssisted-by: X\n",
    "cherry-and-prose": "S\n\nb\n\nprose\n(cherry picked from commit abc)\nAcked-by: B <b@c>\n",
    "key-with-space": "S\n\nb\n\nReported by: X\n",
    "tab-before-colon": "S\n\nb\n\nFixes\t: 1234\n",
    "value-spaces": "S\n\nb\n\nKey:   spaced value   \n",
    "non-ascii-value": "S\n\nb\n\nSigned-off-by: Jörg Ångström <j@e>\n",
    "flagship": "[BugFix] Follow-up\n\nWhy.\n\nAssisted-by: OpenAI Codex\n"
                "Signed-off-by: logprobz <logprobz@example.com>\n",
    "flagship-bare": "[BugFix] Follow-up published without trailers\n\nWhy.\n",
}


def git_trailers(message: str) -> list[tuple[str, str]]:
    """What git itself parses; `--no-divider` because these are commit messages, as git log's
    %(trailers) reads them, not mails where `---` starts the patch."""
    out = subprocess.run(["git", "interpret-trailers", "--parse", "--no-divider"],
                         input=message.encode(), capture_output=True, check=True).stdout
    pairs = []
    for line in out.decode().splitlines():
        key, _, value = line.partition(":")
        pairs.append((key, value.strip()))
    return pairs


@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_parse_agrees_with_git(name: str) -> None:
    message = MESSAGES[name]
    assert [(t.key, t.value) for t in trailers.parse(message)] == git_trailers(message)


def test_bytes_and_crlf() -> None:
    msg = b"S\r\n\r\nbody \xff\r\n\r\nSigned-off-by: A U Thor <author@example.com>\r\n"
    assert trailers.parse(msg) == [trailers.Trailer("Signed-off-by",
                                                    "A U Thor <author@example.com>")]


def test_continuation_is_unfolded() -> None:
    (link,) = trailers.find(trailers.parse(MESSAGES["cont"]), "link")
    assert link.value == "http://x continued here and tab"


def test_cherry_picked_from() -> None:
    msg = MESSAGES["cherry-mixed"] + "(cherry picked from commit " + "a" * 40 + ")\n"
    msg = msg.replace("commit abc)", "commit abcd123)")
    assert trailers.cherry_picked_from(msg) == ["abcd123", "a" * 40]
    assert trailers.cherry_picked_from("S\n\nno note\n") == []


@pytest.mark.parametrize("value, ok", [
    ("A U Thor <author@example.com>", True),
    ("logprobz <logprobz@example.com>", True),
    ("Jörg Ångström <j@example.com>", True),
    ("logprobz", False),
    ("<author@example.com>", False),
    ("A U Thor author@example.com", False),
    ("A U Thor <author>", False),
    ("A <a@b> trailing", False),
    ("", False),
])
def test_is_person(value: str, ok: bool) -> None:
    assert trailers.is_person(value) is ok
