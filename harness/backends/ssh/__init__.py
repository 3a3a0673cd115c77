"""The ssh backend (`cluster.backend: ssh`): the topology's nodes as processes on an inventory's hosts, each made and
driven by the host's agent over OpenSSH. `backend.py` is `SshBackend`; `remote_node.py` a node on its host as the
control node sees it."""
