"""``python -m systolic.cli``: the same as the ``systolic`` command."""

import sys

from systolic.cli import main

sys.exit(main())
