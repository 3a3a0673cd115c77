"""Master/slave replication: the master's HA service and connections, the slave's HA client, the group-transfer wait."""
