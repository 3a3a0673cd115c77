"""`python -m emulator.namesrv [-c namesrv.conf]` (console script `rmq-namesrv`): the name server. Brokers register
(REGISTER_BROKER), clients ask for routes (GET_ROUTEINFO_BY_TOPIC) and the cluster (GET_BROKER_CLUSTER_INFO).
With `enableControllerInNamesrv=true` (5.x) it also runs a controller (`emulator.controllermode`) on the DLedger
peer port of `controllerDLegerSelfId`, as a real 5.3.0 name server does."""
from __future__ import annotations

import argparse
import sys

from emulator import logs
from emulator.config.broker_config import bind_address
from emulator.config.properties import load_properties_file
from emulator.controllermode.config import DEFAULTS as CONTROLLER_DEFAULTS
from emulator.controllermode.config import ControllerConfig, ControllerConfigError
from emulator.controllermode.node import ControllerNode
from emulator.idle_channels import IdleChannels
from emulator.route_table import RouteTable
from emulator.server import Channel, Processor, RemotingServer
from emulator.stop_signal import listening, stop_on_signals
from emulator.version import VersionError, resolve_profile
from remoting import fastjson
from remoting.codes import RequestCode, ResponseCode
from remoting.command import RemotingCommand

DEFAULT_PORT = 9876
SCAN_INTERVAL_S = 10.0
DEFAULT_IDLE_S = 120
"""NettyServerConfig.serverChannelMaxIdleTimeSeconds"""
FAQ = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
KNOWN_KEYS = {"listenPort", "rocketmqHome", "kvConfigPath", "configStorePath", "productEnvName", "clusterTest",
              "orderMessageEnable", "serverWorkerThreads", "serverCallbackExecutorThreads", "serverSelectorThreads",
              "serverOnewaySemaphoreValue", "serverAsyncSemaphoreValue", "serverChannelMaxIdleTimeSeconds",
              "serverSocketSndBufSize", "serverSocketRcvBufSize", "serverPooledByteBufAllocatorEnable",
              "useEpollNativeSelector"}
CONTROLLER_KEYS = {"enableControllerInNamesrv", *CONTROLLER_DEFAULTS}


class NamesrvProcessor(Processor):
    def __init__(self, table: RouteTable) -> None:
        self.table = table

    def process(self, channel: Channel, request: RemotingCommand) -> None:
        code = request.code
        if code == RequestCode.REGISTER_BROKER:
            body = fastjson.loads(request.body) if request.body else {}
            result = self.table.register(
                cluster=request.field("clusterName", ""), broker_addr=request.field("brokerAddr", ""),
                broker_name=request.field("brokerName", ""), broker_id=int(request.field("brokerId", "0")),
                ha_server_addr=request.field("haServerAddr", ""),
                topic_wrapper=body.get("topicConfigSerializeWrapper"), channel_id=id(channel))
            channel.respond(request, ResponseCode.SUCCESS, None, result)
        elif code == RequestCode.UNREGISTER_BROKER:
            self.table.unregister(request.field("brokerAddr", ""), request.field("brokerName", ""),
                                  int(request.field("brokerId", "0")))
            channel.respond(request, ResponseCode.SUCCESS, None, {})
        elif code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
            topic = request.field("topic", "")
            route = self.table.route(topic)
            if route is None:
                channel.respond(request, ResponseCode.TOPIC_NOT_EXIST,
                                f"No topic route info in name server for the topic: {topic}{FAQ}")
            else:
                channel.respond(request, ResponseCode.SUCCESS, None, None, fastjson.dumps(route).encode())
        elif code == RequestCode.GET_BROKER_CLUSTER_INFO:
            channel.respond(request, ResponseCode.SUCCESS, None, None,
                            fastjson.dumps(self.table.cluster_info()).encode())
        elif code == RequestCode.QUERY_DATA_VERSION:
            channel.respond(request, ResponseCode.SUCCESS, None, {"changed": "false"})
        else:
            channel.respond(request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                            f" request type {code} not supported")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rmq-namesrv", description="Embedded RocketMQ name server")
    parser.add_argument("-c", dest="config", help="namesrv.conf (Java properties)")
    parser.add_argument("--rocketmq-version", help="version profile (default $ROCKETMQ_VERSION or 4.9.1)")
    args = parser.parse_args(argv)
    try:
        profile = resolve_profile(args.rocketmq_version)
        conf = load_properties_file(args.config) if args.config else {}
        port = int(conf.get("listenPort", DEFAULT_PORT))
    except (VersionError, OSError) as e:
        print(f"rmq-namesrv: {e}", file=sys.stderr)
        return 2
    except ValueError:
        print(f"rmq-namesrv: {args.config}: listenPort={conf.get('listenPort')!r} is not allowed; "
              "allowed values: a port number", file=sys.stderr)
        return 2
    idle_s = conf.get("serverChannelMaxIdleTimeSeconds", str(DEFAULT_IDLE_S)).strip()
    if not idle_s.isdigit():
        print(f"rmq-namesrv: {args.config}: serverChannelMaxIdleTimeSeconds={idle_s!r} is not allowed; "
              "allowed values: a number of seconds", file=sys.stderr)
        return 2
    embedded = profile.is_5x and conf.get("enableControllerInNamesrv", "").strip().lower() == "true"
    controller = None
    if embedded:
        try:
            controller = ControllerNode(ControllerConfig(conf, args.config), profile.wire_version)
        except ControllerConfigError as e:
            print(f"rmq-namesrv: {e}", file=sys.stderr)
            return 2
    logs.setup((logs.NAMESRV, logs.CONTROLLER, logs.DLEDGER), files=logs.EMBEDDED_CONTROLLER_FILES)
    known = KNOWN_KEYS | (CONTROLLER_KEYS if profile.is_5x else set())
    for key in sorted(set(conf) - known):
        logs.namesrv_log.warning("unknown property %s=%s ignored (not a NamesrvConfig/NettyServerConfig key)",
                                 key, conf[key])
    table = RouteTable(five_x=profile.is_5x)
    server = RemotingServer(bind_address(), port, "NettyServerCodecThread", profile.wire_version)
    processor = NamesrvProcessor(table)
    for code in (RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                 RequestCode.GET_BROKER_CLUSTER_INFO, RequestCode.QUERY_DATA_VERSION):
        server.register(code, processor, None)
    server.on_close.append(lambda ch: table.channel_closed(id(ch)))
    if not listening("rmq-namesrv", f"{bind_address()}:{port}", server.start):
        return 1
    if int(idle_s) > 0:
        IdleChannels(server, int(idle_s), logs.namesrv_log).start()
    stop = stop_on_signals()
    logs.namesrv_log.info("The Name Server boot success. serializeType=JSON")
    print("The Name Server boot success. serializeType=JSON", flush=True)
    if controller is not None:
        if not listening("rmq-namesrv", controller.addr, controller.start):
            server.shutdown()
            return 1
        logs.controller_log.info("The ControllerManager boot success. serializeType=JSON")
        print("The ControllerManager boot success. serializeType=JSON", flush=True)
    while not stop.wait(SCAN_INTERVAL_S):
        table.scan_not_active()
    if controller is not None:
        controller.shutdown()
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
