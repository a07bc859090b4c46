"""``python -m engram.cli``: the ``engram`` command."""

from engram.cli import main

if __name__ == "__main__":  # not when a tool walks the package importing every module
    main()
