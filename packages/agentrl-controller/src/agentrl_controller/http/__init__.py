"""The HTTP layer under the controller's routes and its workers: what both sides of the worker hop serve with.

``fastpath`` serves a hot JSON route without the framework; ``client`` is the keep-alive HTTP/1.1 client of the
worker hop; ``models`` are the pydantic models of the requests the framework validates (and of the OpenAPI
schema). The JSON shapes themselves (the observation, the
start/interact/cancel bodies) are :mod:`agentrl_envs.wire`, shared with the client. Layers run one way:
``api`` -> ``sessions``/``workers`` -> ``http`` -> ``agentrl_envs.wire``; nothing here imports from above.
"""
