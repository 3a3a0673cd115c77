"""Collectors that run beside the load: per node per second process figures (psutil) and broker runtime figures
(GET_BROKER_RUNTIME_INFO), written as `metrics/` parts; broker logs copied into `logs/` at the end."""
