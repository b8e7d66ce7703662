"""A task for upstream's ``agentrl-worker`` (its ``Task`` API): echo tool calls, finish on ``answer``.

Imported only inside the upstream venv (``python -m agentrl.worker``), never by our tests directly.
"""

import json

from agentrl.worker.task import Session, Task
from agentrl.worker.typings import AgentOutputStatus, RewardHistoryItem, SampleStatus, TaskSampleExecutionResult

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Echo the text back.",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "answer",
            "description": "Give the final answer: the sample's index.",
            "parameters": {"type": "object", "properties": {"value": {"type": "integer"}}, "required": ["value"]},
        },
    },
]


class EchoTask(Task):
    """Sample ``i`` is solved by ``answer(value=i)``; any plain text gets a hint; at most ``rounds`` turns."""

    def __init__(self, rounds: int = 5, **kwargs):
        super().__init__(tools=TOOLS, full_async=True, **kwargs)
        self.rounds = rounds

    def get_indices(self):
        return list(range(10))

    async def start_sample(self, index, session: Session) -> TaskSampleExecutionResult:
        session.set_tools(TOOLS)
        session.inject({"role": "system", "content": "Answer with the sample index."})
        output = await session.action({"role": "user", "content": f"Sample {index}: call answer(value={index})."})
        for _ in range(self.rounds):
            if output.status != AgentOutputStatus.NORMAL:
                return TaskSampleExecutionResult(status=SampleStatus.AGENT_VALIDATION_FAILED)
            calls = (output.messages[-1] if output.messages else {}).get("tool_calls") or []
            if not calls:
                output = await session.action({"role": "user", "content": "Use a tool."})
                continue
            call = calls[0]
            arguments = json.loads(call["function"]["arguments"] or "{}")
            if call["function"]["name"] == "answer":
                correct = arguments.get("value") == index
                session.inject(RewardHistoryItem(reward=float(correct), score=float(correct)))
                return TaskSampleExecutionResult(
                    status=SampleStatus.COMPLETED, result={"correct": correct, "score": float(correct)}
                )
            output = await session.action(
                {"role": "tool", "tool_call_id": call["id"], "content": str(arguments.get("text", ""))}
            )
        return TaskSampleExecutionResult(status=SampleStatus.TASK_LIMIT_REACHED)

    def calculate_overall(self, results):
        return {"score": sum(bool((r.result or {}).get("correct")) for r in results) / max(1, len(results))}
