"""Workers: the processes that run environments, local (supervised here) or remote (registered by heartbeat)."""
