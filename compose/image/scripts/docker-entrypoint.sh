#!/bin/sh
# Entry point of the rmq-chaos test image, with the conventions of the official apache/rocketmq image: a first
# argument (or $NODE_ROLE) "nameserver", "broker" or "controller" runs ./mqnamesrv, ./mqbroker or ./mqcontroller with
# the remaining arguments; anything else runs as given, so the official compose form `sh mqbroker -c <conf>` works
# unchanged.
set -e

role=${1:-$NODE_ROLE}
case "$role" in
  nameserver|broker|controller)
    if [ "${1:-}" = "$role" ]; then shift; fi
    case "$role" in
      nameserver) exec ./mqnamesrv "$@" ;;
      broker) exec ./mqbroker "$@" ;;
      controller) exec ./mqcontroller "$@" ;;
    esac
    ;;
esac
if [ $# -eq 0 ]; then
  echo "docker-entrypoint.sh: give a command: nameserver | broker -c <conf> | sh mqnamesrv | sh mqbroker -c <conf>" >&2
  exit 2
fi
exec "$@"
