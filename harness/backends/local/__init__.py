"""The local backend (`cluster.backend: local`): the topology's nodes as processes on this machine. `backend.py` is
`LocalBackend`; `hosted_node.py` makes one node as a process in its cgroups with its store (the ssh backend's agents
make theirs the same way on their hosts), `node.py` is that process's control (start, stop, readiness)."""
