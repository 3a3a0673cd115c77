# Sourced by mqnamesrv and mqbroker of the rmq-chaos test image: where the embedded cluster's Python packages are.
# ROCKETMQ_HOME, ROCKETMQ_VERSION, HEAP_OPTS, JAVA_OPT_EXT and NAMESRV_ADDR are read by the emulator itself, as the
# official scripts and brokers read them.
: "${ROCKETMQ_HOME:=$(cd "$(dirname "$0")/.." && pwd)}"
export ROCKETMQ_HOME
PYTHONPATH="$ROCKETMQ_HOME/lib/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
export PYTHONDONTWRITEBYTECODE=1
