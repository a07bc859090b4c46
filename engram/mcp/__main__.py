"""``python -m engram.mcp``."""

from engram.mcp.server import main

if __name__ == "__main__":
    main()
