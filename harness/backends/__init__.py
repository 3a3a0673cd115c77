"""Backends stand a cluster up and take it down, one subpackage per place the nodes run: `local` (processes on this
machine, each node with its own loop-mounted store and cgroups), `compose` (containers of one compose project per
run) and `ssh` (processes on an inventory's hosts, through each host's agent). What they share sits here: the base
flow (`base.ClusterBackend`), the two modes (`master_slave_mode`, `controller_mode`: what differs by
`cluster.mode`, held by every backend as its `mode`), the confs, the controller's roles, ports and programs. A
backend gives the runner `NodeTarget`s for faults, addresses for the load and the admin calls, and log directories
for the collectors."""
