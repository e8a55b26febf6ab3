"""``python -m benchmarks``: see :mod:`benchmarks.run` and BENCHMARKS.md."""

import sys

from .run import main

sys.exit(main())
