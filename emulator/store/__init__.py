"""The broker's message store on real files: commitlog, consume queues, flush, recovery, statistics."""
