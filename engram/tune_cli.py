"""``engram tune``: fit a user's ranking weights to their retrieval feedback (see :mod:`engram.tune`), or
report an A/B test of strategy weights (:mod:`engram.experiments`)."""

from __future__ import annotations

import json

import click

from engram.cli.common import DB_HELP, open_memory
from engram.cli.output import plural
from engram.errors import ValidationError
from engram.experiments import ExperimentReport
from engram.tune import DEFAULT_HOLDOUT, MIN_EXAMPLES, TuneReport

__all__ = ["tune_command"]


@click.command(
    name="tune",
    help="Fit per-strategy ranking weights to a user's feedback; weights are kept only where they beat "
    "the defaults on held-back (newest) feedback.",
    epilog="""\b
Examples:
  engram tune --user alice --dry-run
  engram tune --experiment weights-2026-11""",
)
@click.option("--user", "user_id", default=None, envvar="ENGRAM_USER", help="Whose feedback to learn from.")
@click.option("--experiment", default=None,
              help="Report this A/B test instead: each variant's users, retrievals with feedback, and the NDCG, "
                   "reciprocal rank and share used of what they were served.")
@click.option("--holdout", type=float, default=DEFAULT_HOLDOUT, show_default=True,
              help="Share of each strategy's newest feedback held back to check the fit.")
@click.option("--min-examples", type=int, default=MIN_EXAMPLES, show_default=True,
              help="Retrievals with feedback a strategy needs before it is tuned.")
@click.option("--dry-run", is_flag=True, help="Report what would be kept without saving.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: one line per strategy; json: the report as one JSON object.")
@click.option("--db", default=None, help=DB_HELP)
def tune_command(user_id: str | None, experiment: str | None, holdout: float, min_examples: int, dry_run: bool,
                 fmt: str, db: str | None) -> None:
    if experiment is not None:
        with open_memory(db, create=False) as memory:
            compared = memory.experiment_report(experiment)
        click.echo(json.dumps(compared.to_dict(), indent=2) if fmt == "json" else render_experiment(compared))
        return
    if user_id is None:
        raise ValidationError("user", "name whose feedback to learn from (--user), or an A/B test to report "
                              "(--experiment)")
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


def render_experiment(report: ExperimentReport) -> str:
    if not report.variants:
        return f"no retrieval with feedback ran under experiment {report.experiment!r}"
    lines = [f"experiment {report.experiment}: each variant on the feedback to what it served"]
    for v in report.variants:
        lines.append(f"{v.variant}: {plural(v.users, 'user')}, {plural(v.retrievals, 'retrieval')}, "
                     f"NDCG {v.ndcg:.3f} ± {v.ndcg_error:.3f}, reciprocal rank {v.reciprocal_rank:.3f}, "
                     f"used {v.used_share:.1%} of what was returned")
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
