"""python -m gradwire: the gradwire command line (gradwire.cli, docs/cli.md)."""

import sys

from .cli import main

sys.exit(main())
