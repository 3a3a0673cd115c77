"""Faults on the containers of the compose backend, through the Docker API: `freeze` as pause/unpause, `kill` as a
container kill (restart through the node's control), `memory_pressure` as `container.update` of the memory and swap
limits plus a hog inside the container; the undo operations they journal (`docker_unpause`, `docker_update`,
`compose_down`); and the engine helpers (client, containers, the `docker compose` v2 binary). The other faults act on
a container's node unchanged, on the host resources the backend gives it (store loop mount, cgroups, HA relay).
The Docker SDK is imported only when a Docker fault or operation runs."""
