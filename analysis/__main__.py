"""`python -m analysis RUN_DIR...`: the same job as `rmq-chaos report`."""
from __future__ import annotations

import sys

from analysis.job import main

sys.exit(main())
