# shellcheck shell=bash
# Shared by build-emulator-image.sh and build-jvm-image.sh (sourced, not run): the Debian suite, the official image's
# uid and the versions both images are built for, where Debian packages come from, the checks before a build, and
# the cached debootstrap tree with the official image's user.
#
# The Debian mirror is the one this machine's apt uses for the suite (`apt-get indextargets`: what apt itself reads
# from sources.list, sources.list.d/*.list and *.sources, so an internal mirror works as it is); DEBIAN_MIRROR
# overrides it. No mirror host is named here.

SUITE=bookworm
IMAGE_UID=3000
VERSION_RE='^(4\.9\.[0-8]|5\.[0-3]\.[0-9]{1,2})$'
TRIM=(var/cache/apt/archives var/lib/apt/lists usr/share/doc usr/share/man usr/share/info usr/share/locale)

# check_version VERSION: dies with one line unless VERSION is one the images are built for
check_version() {
  [[ "$1" =~ $VERSION_RE ]] || die "version '$1' not supported; allowed: 4.9.0-4.9.8, 5.0.x-5.3.x"
}

# apt_mirror SUITE: the URI of the archive that apt on this machine uses for SUITE's main component
apt_mirror() {
  local suite=$1 uri
  uri=$(apt-get indextargets --format '$(RELEASE) $(COMPONENT) $(REPO_URI)' 'Created-By: Packages' 2>/dev/null \
    | awk -v s="$suite" '$1 == s && $2 == "main" { print $3; exit }')
  [ -n "$uri" ] || return 1
  echo "${uri%/}"
}

# debian_mirror SUITE: $DEBIAN_MIRROR, else apt's; dies with one line when neither is known
debian_mirror() {
  if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; return; fi
  apt_mirror "$1" || die "no apt source on this machine serves Debian $1 main (apt-get indextargets); set DEBIAN_MIRROR"
}

# require_build_tools: root, the tools and a Docker engine that answers
require_build_tools() {
  [ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, file ownership of uid $IMAGE_UID)"
  for tool in debootstrap chroot tar sha256sum "$DOCKER"; do
    command -v "$tool" >/dev/null || die "missing tool $tool (setup.sh installs debootstrap and docker.io)"
  done
  "$DOCKER" version --format '{{.Server.Version}}' >/dev/null 2>&1 || die "no Docker engine answers ($DOCKER version)"
}

# debootstrap_tree BASE INCLUDE STAMP [HOOK]: a minbase SUITE tree with INCLUDE and user rocketmq ($IMAGE_UID) at BASE,
# rebuilt only when BASE.stamp differs from STAMP; HOOK (a function name) runs with the new tree's path before it
# is trimmed
debootstrap_tree() {
  local base=$1 include=$2 stamp=$3 hook=${4:-} d
  echo "$(basename "$0"): debootstrap $SUITE (minbase + $include) into $base"
  mkdir -p "$CACHE"
  rm -rf "$base" "$base.tmp" "$base.stamp"
  debootstrap --variant=minbase --include="$include" "$SUITE" "$base.tmp" "$MIRROR"
  chroot "$base.tmp" groupadd -g "$IMAGE_UID" rocketmq
  chroot "$base.tmp" useradd -l -u "$IMAGE_UID" -g "$IMAGE_UID" -m -s /bin/bash rocketmq
  [ -z "$hook" ] || "$hook" "$base.tmp"
  for d in "${TRIM[@]}"; do rm -rf "${base:?}.tmp/$d"; mkdir -p "$base.tmp/$d"; done
  mv "$base.tmp" "$base"
  echo "$stamp" > "$base.stamp"
}
