"""The rmq-chaos host agent: what the harness runs on each host of an `ssh` cluster (`python -m harness.agent`),
over an SSH channel from the control node. `server` is its loop and lease, `ops` what it does, `checks` what a host
must have (standard library only, also run before the harness is put on the host)."""
