"""Every CLI command has help and is documented; every setting is documented."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from engram.cli import cli
from engram.config import AdminMemorySettings, Limits, RetrievalConfig

ROOT = Path(__file__).resolve().parent.parent


def test_every_cli_command_has_help_and_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    runner = CliRunner()
    for name, command in cli.commands.items():
        assert command.help, name
        assert f"engram {name}" in readme, f"README does not document `engram {name}`"
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)


def test_every_setting_is_documented() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    for cls in (RetrievalConfig, AdminMemorySettings, Limits):
        for name in cls.__dataclass_fields__:
            assert f"`{name}`" in doc, f"{cls.__name__}.{name} is not in docs/configuration.md"
