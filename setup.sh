#!/usr/bin/env bash
# Installs everything rmq-chaos needs on a fresh Debian 12 machine (run as root), idempotently:
# system tools for the local backend and its faults, Java for Spark (a JDK: the job's aggregates are compiled
# here, analysis/jvm), Chromium for the report
# screenshot test, Docker + debootstrap for the compose backend, and a .venv with the package.
set -euo pipefail
cd "$(dirname "$0")"

APT_PACKAGES=(
  e2fsprogs util-linux mount iproute2 procps psmisc kmod   # loop ext4 stores, fsfreeze, swap, tc, ip netns
  iptables                                                  # partition: a chain of our own (iptables-nft on Debian 12)
  openssh-client openssh-server                             # ssh backend: ssh to the hosts; tests run sshd per test host
  default-jdk-headless                                      # PySpark needs Java 17+; javac builds analysis/jvm
  chromium                                                  # headless screenshot of the report in tests
  docker.io debootstrap                                     # compose backend: engine, local test image
)
# dockerd must never run its default bridge/NAT mode here (host networking only, iptables untouched): where
# installing docker.io starts the service, this file keeps that daemon so too (tests/compose start their own).
if [ "$(id -u)" = 0 ] && [ ! -e /etc/docker/daemon.json ]; then
  mkdir -p /etc/docker
  echo '{"bridge": "none", "iptables": false, "ip-masq": false, "ip-forward": false}' > /etc/docker/daemon.json
fi
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup.sh: missing Debian packages ${missing[*]}; run as root" >&2; exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # no service of these packages starts on this machine (sshd, dockerd): tests start their own, in namespaces
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod +x "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -c "import harness, remoting" 2>/dev/null \
   || [ pyproject.toml -nt .venv/.installed ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e ".[dev]"
  touch .venv/.installed
fi
# the analysis job's JVM aggregates, compiled against PySpark's jars into ~/.cache/rmq-chaos (build output)
.venv/bin/python -m analysis.jvm >/dev/null
