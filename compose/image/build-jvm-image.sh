#!/usr/bin/env bash
# Builds `rmq-chaos/rocketmq-jvm:<version>` on this machine without any registry, from an Apache RocketMQ binary
# distribution that is already here (an unpacked rocketmq-all-<version>-bin-release, downloaded or built by you:
# this script never fetches or compiles RocketMQ):
#   1. a Debian bookworm tree from `debootstrap --variant=minbase --include=<Debian's headless JRE 17>` (cached in
#      $RMQ_IMAGE_CACHE, like the emulator image's tree);
#   2. the distribution copied as it is to the official apache/rocketmq image's layout: user `rocketmq` uid/gid
#      3000, ROCKETMQ_HOME=/home/rocketmq/rocketmq-<version>, WORKDIR $ROCKETMQ_HOME/bin (`sh mqbroker` runs there),
#      store /home/rocketmq/store, logs /home/rocketmq/logs/rocketmqlogs, plus bin/docker-entrypoint.sh (the
#      official roles nameserver/broker/controller, else the command as given);
#   3. `docker import` with the official ENV / USER / WORKDIR / ENTRYPOINT / EXPOSE, so compose/rocketmq-*.yml
#      starts it exactly as it starts apache/rocketmq:<version>.
# The distribution's version (its lib/rocketmq-broker-<version>.jar) must be VERSION. Labels: rmq-chaos.image=jvm,
# rmq-chaos.program=apache (a real broker: the harness isolates it), rmq-chaos.dist (sha256 of the names and sizes
# of the distribution's lib/ files, 16 hex digits), rmq-chaos.dist-version, rmq-chaos.jre (the JRE package and its
# version), rmq-chaos.pid1 (exec: the JVM is PID 1; forward: the entrypoint stays PID 1 and passes SIGTERM on) and
# rmq-chaos.source (fingerprint of all of it): an image whose fingerprint matches is kept (--force rebuilds).
#
# usage: compose/image/build-jvm-image.sh [--force] --dist DIR VERSION        e.g. --dist ~/rocketmq-4.9.1 4.9.1
# env:   RMQ_IMAGE_CACHE (default /var/cache/rmq-chaos/image), DEBIAN_MIRROR (default: the one apt uses here),
#        RMQ_JVM_IMAGE (default rmq-chaos/rocketmq-jvm), RMQ_JRE_PACKAGE (default openjdk-17-jre-headless),
#        DOCKER (default docker)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${RMQ_IMAGE_CACHE:-/var/cache/rmq-chaos/image}
REPOSITORY=${RMQ_JVM_IMAGE:-rmq-chaos/rocketmq-jvm}
JRE=${RMQ_JRE_PACKAGE:-openjdk-17-jre-headless}
DOCKER=${DOCKER:-docker}

die() { echo "build-jvm-image.sh: $*" >&2; exit 2; }
# shellcheck source=compose/image/lib.sh
. "$HERE/lib.sh"

force=""
dist=""
version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --dist) [ $# -ge 2 ] || die "--dist needs a directory"; dist=$2; shift ;;
    --dist=*) dist=${1#--dist=} ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    -*) die "unknown option $1; allowed: --force, --dist DIR" ;;
    *) [ -z "$version" ] || die "one version only (got $version and $1)"
       check_version "$1"
       version=$1 ;;
  esac
  shift
done
[ -n "$dist" ] || die "give the distribution: --dist DIR (an unpacked rocketmq-all-<version>-bin-release)"
[ -n "$version" ] || die "give the version, e.g. 4.9.1"
[ -d "$dist" ] || die "--dist $dist is not a directory"
dist=$(cd "$dist" && pwd)
for f in bin/mqnamesrv bin/mqbroker bin/runserver.sh bin/runbroker.sh; do
  [ -f "$dist/$f" ] || die "--dist $dist has no $f; allowed: an unpacked rocketmq-all-<version>-bin-release"
done
found=$(cd "$dist/lib" 2>/dev/null && ls | sed -n 's/^rocketmq-broker-\([0-9]*\.[0-9]*\.[0-9]*\)\.jar$/\1/p' | sort -u)
[ -n "$found" ] && [ "$(echo "$found" | wc -l)" = 1 ] || \
  die "--dist $dist: cannot tell its version (no single lib/rocketmq-broker-<version>.jar)"
[ "$found" = "$version" ] || die "--dist $dist is RocketMQ $found, not $version; allowed: a distribution of $version, or version $found"
require_build_tools
MIRROR=$(debian_mirror "$SUITE")

# --- 1. the Debian tree with the JRE (cached) -----------------------------------------------------------------------
base="$CACHE/rootfs-$SUITE-$JRE"
stamp="debootstrap --variant=minbase --include=$JRE $SUITE $MIRROR; user rocketmq $IMAGE_UID"
jre_version_file() { chroot "$1" dpkg-query -W -f '${Version}' "$JRE" > "$1/.rmq-chaos-jre-version"; }
if [ ! -f "$base.stamp" ] || [ "$(cat "$base.stamp")" != "$stamp" ] || ! ls "$base"/usr/lib/jvm/*/bin/java >/dev/null 2>&1
then
  debootstrap_tree "$base" "$JRE" "$stamp" jre_version_file
fi
java=$(chroot "$base" readlink -f /usr/bin/java)
java_home=${java%/bin/java}
jre_version=$(cat "$base/.rmq-chaos-jre-version")

# --- 2. the distribution's identity, how its scripts start the JVM, the fingerprint -------------------------------
dist_hash=$(cd "$dist/lib" && find . -type f -printf '%P %s\n' | LC_ALL=C sort | sha256sum | cut -c1-16)
# exec: mqnamesrv/mqbroker exec their run script and every java launch of that script is an exec, so the JVM
# replaces `sh mqbroker`; otherwise the entrypoint stays PID 1 and forwards SIGTERM (docker-entrypoint.sh).
execs() {  # FILE PATTERN: every uncommented line matching PATTERN starts with exec
  local lines
  lines=$(grep -E "$2" "$1" | grep -vE '^[[:space:]]*#' || true)
  [ -n "$lines" ] && ! echo "$lines" | grep -qvE '^[[:space:]]*exec[[:space:]]'
}
pid1=exec
for f in mqnamesrv:runserver.sh mqbroker:runbroker.sh; do
  execs "$dist/bin/${f%%:*}" "bin/${f#*:}" || pid1=forward
  execs "$dist/bin/${f#*:}" '"?\$JAVA"?[[:space:]]+\$\{?JAVA_OPT' || pid1=forward
done
fingerprint=$( (cd "$HERE" && sha256sum build-jvm-image.sh lib.sh jvm-scripts/*; echo "$stamp $jre_version $dist_hash";
  cd "$dist" && find bin conf -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-16)

tag="$REPOSITORY:$version"
have=$("$DOCKER" image inspect --format '{{index .Config.Labels "rmq-chaos.source"}}' "$tag" 2>/dev/null || true)
if [ -z "$force" ] && [ "$have" = "$fingerprint" ]; then
  echo "build-jvm-image.sh: $tag is up to date ($fingerprint, distribution $dist_hash)"
  exit 0
fi

# --- 3. the official layout, then docker import ----------------------------------------------------------------------
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
home="/home/rocketmq/rocketmq-$version"
mkdir -p "$stage/home"
cp -a "$base/home/rocketmq" "$stage/home/rocketmq"
mkdir -p "$stage$home" "$stage/home/rocketmq/store" "$stage/home/rocketmq/logs"
cp -aL "$dist/." "$stage$home/"
install -m 0755 "$HERE"/jvm-scripts/docker-entrypoint.sh "$stage$home/bin/docker-entrypoint.sh"
chmod -R a+rX "$stage$home"
chown -R "$IMAGE_UID:$IMAGE_UID" "$stage/home/rocketmq"
echo "build-jvm-image.sh: docker import $tag (RocketMQ $version from $dist, $JRE $jre_version, pid 1: $pid1)"
tar --numeric-owner -c -C "$base" --exclude=./home/rocketmq --exclude=./.rmq-chaos-jre-version . \
    -C "$stage" home/rocketmq | "$DOCKER" import \
  --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
  --change "ENV LANG=C.UTF-8" \
  --change "ENV JAVA_HOME=$java_home" \
  --change "ENV ROCKETMQ_VERSION=$version" \
  --change "ENV ROCKETMQ_HOME=$home" \
  --change "ENV RMQ_ENTRYPOINT=$pid1" \
  --change "LABEL rmq-chaos.source=$fingerprint rmq-chaos.image=jvm rmq-chaos.program=apache" \
  --change "LABEL rmq-chaos.dist=$dist_hash rmq-chaos.dist-version=$version rmq-chaos.pid1=$pid1" \
  --change "LABEL rmq-chaos.jre=$JRE=$jre_version" \
  --change "EXPOSE 9876 10909 10911 10912" \
  --change "USER rocketmq" \
  --change "WORKDIR $home/bin" \
  --change 'ENTRYPOINT ["./docker-entrypoint.sh"]' \
  - "$tag" >/dev/null
echo "build-jvm-image.sh: built $tag ($fingerprint, distribution $dist_hash)"
