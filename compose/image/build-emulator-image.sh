#!/usr/bin/env bash
# Builds the rmq-chaos test image `rmq-chaos/rocketmq-emulator:<version>` on this machine without any registry:
#   1. a Debian bookworm tree from `debootstrap --variant=minbase --include=python3` (cached in $RMQ_IMAGE_CACHE);
#   2. our `remoting` and `emulator` packages and the scripts `mqnamesrv`, `mqbroker`, `mqcontroller`,
#      `docker-entrypoint.sh` laid
#      out as in the official apache/rocketmq image: user `rocketmq` uid/gid 3000,
#      ROCKETMQ_HOME=/home/rocketmq/rocketmq-<version>, WORKDIR $ROCKETMQ_HOME/bin, store /home/rocketmq/store,
#      logs /home/rocketmq/logs/rocketmqlogs;
#   3. `docker import` with the official ENV / USER / WORKDIR / ENTRYPOINT, so the compose files in compose/ start it
#      exactly as they start apache/rocketmq:<version>.
# An image whose label `rmq-chaos.source` matches the current sources is kept (use --force to rebuild).
#
# usage: compose/image/build-emulator-image.sh [--force] VERSION...      e.g. 4.9.1 5.3.0
# env:   RMQ_IMAGE_CACHE (default /var/cache/rmq-chaos/image), DEBIAN_MIRROR (default: the one apt uses here),
#        RMQ_EMULATOR_IMAGE (default rmq-chaos/rocketmq-emulator), DOCKER (default docker)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
CACHE=${RMQ_IMAGE_CACHE:-/var/cache/rmq-chaos/image}
REPOSITORY=${RMQ_EMULATOR_IMAGE:-rmq-chaos/rocketmq-emulator}
DOCKER=${DOCKER:-docker}
INCLUDE=python3

die() { echo "build-emulator-image.sh: $*" >&2; exit 2; }
# shellcheck source=compose/image/lib.sh
. "$HERE/lib.sh"

force=""
versions=()
for arg in "$@"; do
  case "$arg" in
    --force) force=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) die "unknown option $arg; allowed: --force" ;;
    *) check_version "$arg"
       versions+=("$arg") ;;
  esac
done
[ ${#versions[@]} -gt 0 ] || die "give at least one version, e.g. 4.9.1"
require_build_tools
MIRROR=$(debian_mirror "$SUITE")

# --- 1. the Debian tree (cached) -------------------------------------------------------------------------------
base="$CACHE/rootfs-$SUITE"
stamp="debootstrap --variant=minbase --include=$INCLUDE $SUITE $MIRROR; user rocketmq $IMAGE_UID"
if [ ! -f "$base.stamp" ] || [ "$(cat "$base.stamp")" != "$stamp" ] || [ ! -x "$base/usr/bin/python3" ]; then
  debootstrap_tree "$base" "$INCLUDE" "$stamp"
fi

# --- 2. what the image carries of ours, and its fingerprint ---------------------------------------------------------
sources=$(cd "$REPO" && find remoting emulator -name '*.py' -type f | LC_ALL=C sort)
fingerprint=$( (cd "$REPO" && echo "$sources" | xargs sha256sum; cd "$HERE" && sha256sum build-emulator-image.sh lib.sh \
  scripts/*; echo "$stamp") | sha256sum | cut -c1-16)

for version in "${versions[@]}"; do
  tag="$REPOSITORY:$version"
  have=$("$DOCKER" image inspect --format '{{index .Config.Labels "rmq-chaos.source"}}' "$tag" 2>/dev/null || true)
  if [ -z "$force" ] && [ "$have" = "$fingerprint" ]; then
    echo "build-emulator-image.sh: $tag is up to date ($fingerprint)"
    continue
  fi
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  home="/home/rocketmq/rocketmq-$version"
  mkdir -p "$stage/home"
  cp -a "$base/home/rocketmq" "$stage/home/rocketmq"
  mkdir -p "$stage$home/bin" "$stage$home/lib/python" "$stage$home/conf" \
    "$stage/home/rocketmq/store" "$stage/home/rocketmq/logs"
  (cd "$REPO" && echo "$sources" | tar -c -T - | tar -x -C "$stage$home/lib/python")
  install -m 0755 "$HERE"/scripts/* "$stage$home/bin/"
  chown -R "$IMAGE_UID:$IMAGE_UID" "$stage/home/rocketmq"
  echo "build-emulator-image.sh: docker import $tag"
  tar --numeric-owner -c -C "$base" --exclude=./home/rocketmq . -C "$stage" home/rocketmq | "$DOCKER" import \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV LANG=C.UTF-8" \
    --change "ENV ROCKETMQ_VERSION=$version" \
    --change "ENV ROCKETMQ_HOME=$home" \
    --change "LABEL rmq-chaos.source=$fingerprint rmq-chaos.image=emulator rmq-chaos.program=emulator" \
    --change "EXPOSE 9876 10909 10911 10912" \
    --change "USER rocketmq" \
    --change "WORKDIR $home/bin" \
    --change 'ENTRYPOINT ["./docker-entrypoint.sh"]' \
    - "$tag" >/dev/null
  rm -rf "$stage"
  trap - EXIT
  echo "build-emulator-image.sh: built $tag ($fingerprint)"
done
