"""Thin wrappers over the Linux facilities the faults and the node resources touch: processes, mounts and loop
devices, cgroups (v1 and v2), swap files, the machine's memory, and the command-line tools behind them."""
