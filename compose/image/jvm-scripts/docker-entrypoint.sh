#!/bin/bash
# Entry point of the rmq-chaos JVM image (compose/image/build-jvm-image.sh), with the official apache/rocketmq
# image's conventions: a first argument (or $NODE_ROLE) "nameserver", "broker" or "controller" runs ./mqnamesrv,
# ./mqbroker or ./mqcontroller with the remaining arguments; anything else runs as given, so the official compose
# form `sh mqbroker -c <conf>` works unchanged.
#
# How `docker stop` reaches the JVM ($RMQ_ENTRYPOINT, set by the build from the distribution's scripts):
#   exec     the distribution's mqnamesrv/mqbroker exec their run script and that execs java, so this script execs
#            the command too and the JVM itself is PID 1: SIGTERM runs its shutdown hooks and ends the container.
#   forward  the scripts run their children without exec (as Apache's releases do): `sh mqbroker` as PID 1 would
#            ignore SIGTERM (the kernel drops signals PID 1 has no handler for) and `docker stop` would always wait
#            for SIGKILL. This script stays PID 1 instead, passes SIGTERM (also for SIGINT, which a background
#            command of a script ignores) and SIGHUP to every process of the container, and ends with the
#            command's status once they are all gone.
set -e

role=${1:-${NODE_ROLE:-}}
case "$role" in
  nameserver|broker|controller)
    if [ "${1:-}" = "$role" ]; then shift; fi
    case "$role" in
      nameserver) set -- ./mqnamesrv "$@" ;;
      broker) set -- ./mqbroker "$@" ;;
      controller) set -- ./mqcontroller "$@" ;;
    esac
    ;;
esac
if [ $# -eq 0 ]; then
  echo "docker-entrypoint.sh: give a command: nameserver | broker -c <conf> | sh mqnamesrv | sh mqbroker -c <conf>" >&2
  exit 2
fi
if [ "$$" != 1 ] || [ "${RMQ_ENTRYPOINT:-exec}" != forward ]; then
  exec "$@"
fi

set +e
trap 'kill -TERM -1 2>/dev/null' TERM
trap 'kill -TERM -1 2>/dev/null' INT
trap 'kill -HUP -1 2>/dev/null' HUP
"$@" &
child=$!
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break  # a trapped signal interrupted the wait: the command still runs
done
# The command ended; a JVM whose launching shell the signal ended first is still running its shutdown hooks.
# kill(-1, 0) from PID 1 succeeds while any other process of the container remains.
while kill -0 -1 2>/dev/null; do
  sleep 0.1
done
exit "$status"
