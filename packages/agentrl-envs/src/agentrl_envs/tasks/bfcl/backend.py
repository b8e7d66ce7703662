"""One episode's BFCL state: backends stepped by BFCL's executor, calls recorded per turn, BFCL's checker.

During an episode each call string runs through BFCL's ``execute_multi_turn_func_call`` on the episode's
own backend instances, exactly as BFCL's inference loop runs a model's calls; the results are the tool
messages. The call strings are kept per turn and per step, the shape of BFCL's decoded model result, and
at the end BFCL's ``multi_turn_checker`` replays them on fresh instances beside the ground truth and
compares states and results after every turn. Only the force-termination rule of BFCL's runner
(``_evaluate_single_multi_turn_entry``: fewer turns played than the ground truth has fails the entry) is
applied here, because the runner module imports BFCL's heavy dependencies.
"""

from __future__ import annotations

import copy
import uuid
from typing import Any

from agentrl_envs.tasks.bfcl.data import BFCLCategory, BFCLSample
from agentrl_envs.tasks.bfcl.upstream import BFCLUpstream

__all__ = ["BFCLSession"]


class BFCLSession:
    """The backends and the recorded calls of one episode; :meth:`close` frees BFCL's cached instances."""

    def __init__(self, upstream: BFCLUpstream, sample: BFCLSample, category: BFCLCategory) -> None:
        """Create the sample's backend instances from its initial configuration.

        Raises:
            BackendUnavailableError: If a backend needs a package that is not installed.
        """
        self.upstream = upstream
        self.sample = sample
        self.category = category
        # BFCL's executor caches instances in its module globals by model name: a unique one per episode keeps
        # concurrent and repeated episodes of the same entry apart, and lets close() drop exactly these.
        self.model_name = f"agentrl_{uuid.uuid4().hex}"
        self.turns: list[list[list[str]]] = []
        """Per turn, per step with calls: the call strings executed (BFCL's decoded model result)."""
        for class_name in sample.involved_classes:
            upstream.backend_class(class_name)  # a missing optional package fails here, at reset
        self._execute([])

    @property
    def is_long_context(self) -> bool:
        """Whether the backends load BFCL's long-context scenario extensions (as BFCL decides it)."""
        return "long_context" in self.category.name or "composite" in self.category.name

    def begin_turn(self) -> None:
        """Start recording a new user turn."""
        self.turns.append([])

    def execute(self, calls: list[str]) -> list[str]:
        """Run one step's call strings in order on the episode's backends; returns one result per call."""
        results = self._execute(calls)
        self.turns[-1].append(list(calls))
        return results

    def check(self) -> dict[str, Any]:
        """BFCL's verdict on the calls so far: ``{"valid": bool, "error_type", "error_message", ...}``."""
        expected = len(self.sample.ground_truth)
        if len(self.turns) != expected:
            return {
                "valid": False,
                "error_type": "multi_turn:force_terminated",
                "error_message": f"{len(self.turns)} turns played, the ground truth has {expected}.",
            }
        return self.upstream.checker.multi_turn_checker(
            copy.deepcopy(self.turns),
            self.sample.ground_truth,
            copy.deepcopy(self.sample.entry),
            self.category.name,
            self.model_name,
        )

    def close(self) -> None:
        """Drop the backend instances BFCL cached for this episode (inference and checker alike)."""
        self.upstream.forget_instances(self.model_name)

    def _execute(self, calls: list[str]) -> list[str]:
        results, _ = self.upstream.executor.execute_multi_turn_func_call(
            func_call_list=calls,
            initial_config=self.sample.entry["initial_config"],
            involved_classes=self.sample.involved_classes,
            model_name=self.model_name,
            test_entry_id=self.sample.id,
            long_context=self.is_long_context,
            is_evaL_run=False,
        )
        return [str(result) for result in results]
