"""The broker's request processors, one per group of request codes, as in `org.apache.rocketmq.broker.processor`."""
