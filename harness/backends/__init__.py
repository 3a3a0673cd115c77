"""Backends stand a cluster up and take it down: `local` (processes on this machine, each node with its own
loop-mounted store and cgroups). A backend gives the runner `NodeTarget`s for faults, addresses for the load and
the admin calls, and log directories for the collectors."""
