"""``python -m llmmath``: see :mod:`llmmath.cli`."""

import sys

from .cli import main

sys.exit(main())
