"""Training-task synthesis: procedural generators and an LLM mode, every task validated by its env.

See ``docs/synth.md``. Modules: :mod:`.db`, :mod:`.shell` (OS) and :mod:`.kg` (one generator and validation
adapter per task), :mod:`.llm` (Self-Instruct proposals), :mod:`.validate` (playing tasks through the env),
:mod:`.dedupe` (overlap with test/dev), :mod:`.pipeline` (a run) and :mod:`.cli` (``agentrl-envs synth``).
"""
