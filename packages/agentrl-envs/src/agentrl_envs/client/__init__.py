"""``RemoteEnv``: a task served by an AgentRL controller, behind the same Gymnasium API as the local env.

``gym.make("AgentBench/DB-v0", controller_url="http://127.0.0.1:5020/api")`` returns one.
"""

from agentrl_envs.client.remote import RemoteEnv

__all__ = ["RemoteEnv"]
