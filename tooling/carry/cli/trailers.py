"""`carry trailers`: parse, call, print; the work is in `carry.intake.signoff` and
`carry.series.dco`. Its printing lives here, beside the command, to keep `views` small."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer

from carry.cli.app import Json, Name, SeriesDir, _root, app

if TYPE_CHECKING:
    from carry.intake.signoff import SignoffResult


@app.command()
def trailers(
    name: Name,
    signoff: Annotated[bool, typer.Option(
        "--signoff", "-s",
        help="Add your Signed-off-by to the patches you authored that lack one.")] = False,
    repo: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--repo", envvar="CARRY_REPO", show_envvar=True, metavar="PATH",
        help="Sign as git's user.name and user.email of this repository (default: of the "
             "series checkout).")] = None,
    force: Annotated[bool, typer.Option(
        help="Also sign your patches that a policy exception keeps unamended.")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would change; write "
                                                            "nothing.")] = False,
    series_dir: SeriesDir = None,
    json: Json = False,
) -> None:
    """Sign off your own patches; name who must sign the others.

    A sign-off certifies the signer's own right to submit a change, so carry adds one only
    in your name, to the patches whose author email is yours, keeping every other byte and
    the author dates; every other patch is listed with the author who must sign it. The
    result is the next version of the series: commit it (the command to do so is printed).
    Without --signoff, lists what each patch has and needs.

    Example: carry trailers my-fix --signoff --dry-run
    """
    from carry.git import Repo
    from carry.intake import signoff as signmod

    result = signmod.run(_root(series_dir), name, Repo.open(repo) if repo else None, signoff,
                         force, dry_run)
    if json:
        from carry.cli import render

        render.emit_json(result)
    else:
        show(result)


_WORDS = {"added": "adds", "signed": "signed off by its author", "yours": "yours to sign",
          "others": "needs its author's own sign-off", "excepted": "left unamended"}


def show(r: SignoffResult) -> None:
    from carry.cli import render

    what = "dry run: " if r.dry_run else ""
    render.say(f"{what}{r.series}: signing off as {r.signer}" if r.signoff else
               f"{r.series} v{r.version}: sign-offs (you are {r.signer})")
    for p in r.patches:
        word = _WORDS.get(p.action, p.action)
        if p.action == "added" and not r.dry_run:
            word = "added"
        note = f": {p.note}" if p.note and p.action not in ("yours",) else ""
        render.say(f"  {p.file}  {p.author} <{p.email}>  {word}{note}")
    if r.changed:
        render.say(f"{r.series} is now v{r.version}" + (f" (tag {r.tag})" if r.tag else ""))
        if r.commit:
            render.say(f"commit it: {r.commit}")
    elif r.signoff and not r.dry_run:
        render.say(f"{r.series}: nothing of yours to sign; unchanged at v{r.version}")
    if r.missing:
        render.say("still without their author's sign-off: " + ", ".join(
            f"{p.file} ({p.author})" for p in r.missing))
