"""The embedded cluster: a name server and master/slave brokers that speak the remoting protocol, store on real
files, and reproduce RocketMQ's HA, flush and flow-control mechanisms per version profile."""
