"""The broker's side of 5.x controller mode (RIP-44, `enableControllerMode=true`): the replicas manager that
registers with the controller, heartbeats it and changes the broker's role (`replicas_manager`, `registration`),
the broker id files (`broker_metadata`), the epoch file (`epoch_cache`) and the auto-switch HA service with its
epoch-aware handshake, truncation and SyncStateSet (`ha_service`, `ha_connection`, `ha_client`). The controller
itself is `emulator.controllermode`."""
