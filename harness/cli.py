"""The `rmq-chaos` command line (placeholder until the harness lands)."""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    print("rmq-chaos: the harness is not built yet", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
