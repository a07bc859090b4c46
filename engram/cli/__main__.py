"""``python -m engram.cli``: the ``engram`` command."""

from engram.cli import main

main()
