"""`ClusterError`: the cluster could not be stood up (or taken down) as asked. Its own module so that the backends,
the modes (harness/backends/master_slave_mode.py, controller_mode.py) and the base class raise the one error without
importing each other."""
from __future__ import annotations


class ClusterError(RuntimeError):
    """The cluster could not be stood up (or taken down) as asked (one line)."""
