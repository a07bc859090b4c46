"""``engram tune``: fit a user's ranking weights to their retrieval feedback (see :mod:`engram.tune`)."""

from __future__ import annotations

import json

import click

from engram.cli.common import DB_HELP, open_memory
from engram.cli.output import plural
from engram.tune import DEFAULT_HOLDOUT, MIN_EXAMPLES, TuneReport

__all__ = ["tune_command"]


@click.command(
    name="tune",
    help="Fit per-strategy ranking weights to a user's feedback; weights are kept only where they beat "
    "the defaults on held-back (newest) feedback.",
    epilog="""\b
Example:
  engram tune --user alice --dry-run""",
)
@click.option("--user", "user_id", required=True, envvar="ENGRAM_USER", help="Whose feedback to learn from.")
@click.option("--holdout", type=float, default=DEFAULT_HOLDOUT, show_default=True,
              help="Share of each strategy's newest feedback held back to check the fit.")
@click.option("--min-examples", type=int, default=MIN_EXAMPLES, show_default=True,
              help="Retrievals with feedback a strategy needs before it is tuned.")
@click.option("--dry-run", is_flag=True, help="Report what would be kept without saving.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: one line per strategy; json: the report as one JSON object.")
@click.option("--db", default=None, help=DB_HELP)
def tune_command(user_id: str, holdout: float, min_examples: int, dry_run: bool, fmt: str, db: str | None) -> None:
    with open_memory(db, create=False) as memory:
        report = memory.tune(user_id=user_id, holdout=holdout, min_examples=min_examples, dry_run=dry_run)
    if fmt == "json":
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(render(report))


def render(report: TuneReport) -> str:
    lines = [f"{plural(report.logged, 'retrieval')} with feedback for {report.user_id}"]
    if not report.fits:
        return "\n".join([*lines, "no strategy has feedback yet: nothing to tune, nothing saved"])
    for fit in report.fits:
        held = f"held-back NDCG {fit.holdout_ndcg[0]:.3f} -> {fit.holdout_ndcg[1]:.3f}"
        verdict = "tuned" if fit.kept else "defaults"
        lines.append(
            f"{fit.strategy}: {verdict} ({fit.reason}; {fit.train_examples} train, {fit.holdout_examples} held back"
            + (f"; {held})" if fit.evaluated else ")")
        )
        if fit.kept:
            lines.append("  " + ", ".join(f"{k}={v:.3f}" for k, v in fit.weights.items()))
    lines.append(_outcome(report))
    return "\n".join(lines)


def _outcome(report: TuneReport) -> str:
    """The last line: what changed in the store, if anything."""
    tuned = [fit.strategy for fit in report.fits if fit.kept]
    reset = [fit.strategy for fit in report.fits if fit.evaluated and not fit.kept]
    if not report.saved:
        return "dry run: nothing saved"
    if not tuned and not reset:
        return "nothing saved: weights stay as they were"
    parts = ([f"tuned weights for {', '.join(tuned)}"] if tuned else []) + (
        [f"the defaults for {', '.join(reset)}"] if reset else [])
    return "saved " + " and ".join(parts)
