"""Which image and compose file a compose run uses, and whether everything it needs is here before anything starts.

Image: `cluster.image` (the scenario, or `--image`), else `$ROCKETMQ_IMAGE`, else `apache/rocketmq:<version>`;
`{version}` in the name becomes the scenario's version, so `ROCKETMQ_IMAGE=rmq-chaos/rocketmq-emulator:{version}`
serves every version. Nothing is pulled (these machines cannot): an image that is not present is a one-line error
saying how to get it. Compose file: `compose/rocketmq-4.yml` for 4.9.x, `compose/rocketmq-5.yml` for 5.x
(`$RMQ_COMPOSE_DIR` moves the directory). An image whose `ROCKETMQ_VERSION` differs from `cluster.version` is
refused: the run would record one version and run another."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

IMAGE_ENV = "ROCKETMQ_IMAGE"
DEFAULT_IMAGE = "apache/rocketmq:{version}"
COMPOSE_DIR_ENV = "RMQ_COMPOSE_DIR"
COMPOSE_DIR = Path(__file__).resolve().parents[3] / "compose"
COMPOSE_FILES = {"4": "rocketmq-4.yml", "5": "rocketmq-5.yml"}
BUILD_SCRIPT = "compose/image/build-emulator-image.sh"
VERSION_ENV = "ROCKETMQ_VERSION"
"""The official images (and ours) say which release they run in this variable."""
PROGRAM_LABEL = "rmq-chaos.program"
"""Our images say what they run: `emulator` (build-emulator-image.sh) or `apache` (build-jvm-image.sh, a real JVM
broker); an image without it (the official apache/rocketmq) is taken for a real broker."""


class ComposeSetupError(RuntimeError):
    """The compose backend cannot run here (one line that says what is missing and how to get it)."""


def image_for(cluster: Any) -> str:
    """The image of a scenario's cluster (see the module docstring for the order)."""
    name = cluster.image or os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
    return name.replace("{version}", cluster.version)


def image_program(labels: dict[str, str] | None) -> str:
    """`emulator` for our test image, else `apache` (our JVM image, the official image, any other)."""
    labels = labels or {}
    if labels.get(PROGRAM_LABEL) == "emulator" or labels.get("rmq-chaos.image") == "emulator":
        return "emulator"
    return "apache"


def compose_dir() -> Path:
    return Path(os.environ.get(COMPOSE_DIR_ENV) or COMPOSE_DIR)


def compose_file_for(version: str) -> Path:
    path = compose_dir() / COMPOSE_FILES[version.split(".", 1)[0]]
    if not path.is_file():
        raise ComposeSetupError(f"compose file {path} is missing (set ${COMPOSE_DIR_ENV} to the repository's compose/)")
    return path


def check_setup(cluster: Any) -> dict[str, Any]:
    """Engine, compose binary, compose file and image are all here; returns what was found. Raises
    `ComposeSetupError` (one line) otherwise. Starts nothing."""
    from faults.docker import engine
    from faults.errors import FaultError

    try:
        client = engine.client()
        binary = engine.compose_binary()
    except FaultError as err:
        raise ComposeSetupError(f"cluster.backend compose: {err}") from None
    image = image_for(cluster)
    import docker

    try:
        found = client.images.get(image)
    except docker.errors.ImageNotFound:
        hint = (f"build the test image with `sudo {BUILD_SCRIPT} {cluster.version}`, or `docker pull {image}` "
                f"where a registry is reachable")
        raise ComposeSetupError(f"image {image} is not present on this Docker engine (nothing is pulled); {hint}; "
                                f"choose another with cluster.image, --image or ${IMAGE_ENV}") from None
    env = dict(e.split("=", 1) for e in (found.attrs.get("Config") or {}).get("Env") or [] if "=" in e)
    runs = env.get(VERSION_ENV)
    if runs is not None and runs != cluster.version:
        raise ComposeSetupError(f"image {image} runs RocketMQ {runs} (its {VERSION_ENV}), the scenario asks for "
                                f"{cluster.version}; allowed: an image of {cluster.version} (e.g. a name with "
                                "'{version}'), or cluster.version " + runs)
    return {"image": image, "image_id": found.id, "labels": found.labels or {},
            "program": image_program(found.labels), "compose_binary": binary,
            "compose_file": str(compose_file_for(cluster.version)), "engine": engine.engine_address()}
