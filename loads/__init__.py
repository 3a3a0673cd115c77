"""Send load with Locust: RocketMQ producer users, open and closed load models, per-request Parquet records."""
