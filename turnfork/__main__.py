"""``python -m turnfork``: the ``turnfork`` command."""

import sys

from .shell.cli import main

if __name__ == "__main__":
    sys.exit(main())
