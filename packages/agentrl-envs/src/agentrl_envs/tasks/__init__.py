"""One sub-package per AgentBench task."""
