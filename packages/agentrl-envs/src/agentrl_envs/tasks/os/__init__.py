"""AgentBench-FC's OS interaction task (``AgentBench/OS-v0``) on bubblewrap or Docker sandboxes."""
