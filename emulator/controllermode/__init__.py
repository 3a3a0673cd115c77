"""The 5.x controller (RIP-44) of the embedded cluster: the DLedger-replicated state machine of broker sets
(`replicas`, `decisions`), broker heartbeats (`heartbeats`), master election (`elect_policy`), the request
processor and the controller node that serves it on its DLedger peer port (`node`), embedded in the name server
(`enableControllerInNamesrv=true`) or standalone (`python -m emulator.controller_main`). The broker's side of
controller mode is `emulator.autoswitch`."""
