#!/bin/sh
# Entry point of the rmq-chaos test image, with the conventions of the official apache/rocketmq image: a first
# argument (or $NODE_ROLE) "nameserver" or "broker" runs ./mqnamesrv or ./mqbroker with the remaining arguments;
# anything else runs as given, so the official compose form `sh mqbroker -c <conf>` works unchanged.
set -e

role=${1:-$NODE_ROLE}
case "$role" in
  nameserver|broker)
    if [ "${1:-}" = "$role" ]; then shift; fi
    if [ "$role" = nameserver ]; then exec ./mqnamesrv "$@"; fi
    exec ./mqbroker "$@"
    ;;
  controller)
    echo "docker-entrypoint.sh: the embedded cluster has no controller (mqcontroller)" >&2
    exit 2
    ;;
esac
if [ $# -eq 0 ]; then
  echo "docker-entrypoint.sh: give a command: nameserver | broker -c <conf> | sh mqnamesrv | sh mqbroker -c <conf>" >&2
  exit 2
fi
exec "$@"
