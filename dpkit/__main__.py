"""``python -m dpkit``: the command line (``dpkit/cli/main.py``)."""

import sys

from dpkit.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
