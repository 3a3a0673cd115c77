"""A small DLedger (the Raft library under RocketMQ's controller, openmessaging/dledger 0.3.1.2): members with terms
and votes (`member_state`), a replicated entry log (`ledger`), leader election by heartbeats and votes
(`elector`), the leader pushing entries to followers and committing on a quorum (`pusher`), and the server that
ties them to the remoting port and applies committed entries in order (`server`)."""
