"""One controller: its remoting server on this member's DLedger peer port (from `controllerDLegerPeers`), where it
answers its peers (votes, heartbeats, pushes) and the brokers' and `mqadmin`'s controller requests (on
`ControllerRequestExecutorThread`s, `controllerThreadPoolNums`), the manager and its DLedger controller. The name
server starts one when `enableControllerInNamesrv=true`; `python -m emulator.controller_main` starts one alone."""
from __future__ import annotations

from emulator.config.broker_config import bind_address
from emulator.controllermode.config import ControllerConfig
from emulator.controllermode.manager import ControllerManager
from emulator.controllermode.processor import ControllerRequestProcessor
from emulator.executor import BoundedExecutor
from emulator.server import RemotingServer


class ControllerNode:
    def __init__(self, config: ControllerConfig, version: int) -> None:
        self.config = config
        self.manager = ControllerManager(config, version)
        self.server = RemotingServer(bind_address(), config.self_peer.port, "NettyServerCodecThread", version)
        self.executor = BoundedExecutor("ControllerRequestExecutorThread", config.get_int("controllerThreadPoolNums"),
                                        config.get_int("controllerRequestThreadPoolQueueCapacity"))
        processor = ControllerRequestProcessor(self.manager)
        for code in processor.codes:
            self.server.register(code, processor, self.executor)
        self.manager.controller.dledger.register(self.server)
        self.server.on_close.append(self.manager.heartbeats.on_channel_closed)

    @property
    def addr(self) -> str:
        return self.config.self_peer.addr

    def start(self) -> None:
        """Listen first (OSError when the port is taken), then elect and serve."""
        self.server.start()
        self.executor.start()
        self.manager.start()

    def shutdown(self) -> None:
        self.manager.shutdown()
        self.server.shutdown()
        self.executor.shutdown()
