"""The compose backend (`cluster.backend: compose`): the topology's nodes as containers of one compose project per
run. `backend.py` is `ComposeBackend`; `layout.py` and `controller_layout.py` render the conf and compose files of
either mode, `groups.py` the services of several broker groups, `project.py` runs the real `docker compose`,
`node.py` a container as a node, `image.py` checks the image and the engine, `netns.py` the run's network namespace,
`stats.py` / `status.py` the Docker API's figures and states."""
