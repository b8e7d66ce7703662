"""``DBEnv``: DBBench as a Gymnasium environment (``AgentBench/DB-v0``).

An episode loads one sample's table(s) into a fresh database, asks the question with upstream's prompts and
answers the agent's tool calls in order: ``execute_sql`` runs the statement and returns the raw result,
``commit_final_answer`` ends the episode with reward 1 or 0. Query answers are compared with the label, and
INSERT/DELETE/UPDATE samples by a hash of the modified table(s) against ``answer_md5``, as upstream grades.
"""

from __future__ import annotations

import logging
import os
from typing import Any, ClassVar

from agentrl_envs.core.env import Fidelity, Mode, ToolEnv, Turn
from agentrl_envs.core.errors import InfraError
from agentrl_envs.core.messages import AssistantMessage, Message, system_message, tool_message, user_message
from agentrl_envs.core.status import SampleStatus
from agentrl_envs.core.tools import CheckedCall, ToolCallError
from agentrl_envs.tasks.db.backend import DBBackend, EpisodeDB, QueryTimeoutError, make_backend
from agentrl_envs.tasks.db.data import DBSample, load_samples
from agentrl_envs.tasks.db.grader import combine_table_hashes, compare_results, is_modification
from agentrl_envs.tasks.db.texts import DBTexts

__all__ = ["DBEnv"]

logger = logging.getLogger(__name__)

CONFIG_NAME = "dbbench"


class DBEnv(ToolEnv):
    """DBBench: operate a MySQL-style database through ``execute_sql`` and ``commit_final_answer``.

    Example:
        >>> env = gym.make("AgentBench/DB-v0", split="dev", backend="sqlite")  # doctest: +SKIP
    """

    task: ClassVar[str] = "db"
    default_max_rounds: ClassVar[int] = 15

    def __init__(
        self,
        *,
        split: str = "test",
        mode: Mode = "fc",
        data_root: str | None = None,
        max_rounds: int | None = None,
        render_mode: str | None = None,
        backend: str | None = None,
        mariadb_url: str | None = None,
        query_timeout_s: float | None = None,
        train_file: str | os.PathLike[str] | None = None,
    ) -> None:
        """Load the split and set up the database backend.

        Args:
            split: ``test`` (standard.jsonl, 300), ``dev`` (dev.jsonl, 60) or ``train`` (db_out_new.jsonl).
                ``train_file`` replaces the training file.
            mode: ``fc`` or ``text``.
            data_root: The AgentBench data root.
            max_rounds: Assistant turns per episode; defaults to the config's ``max_round`` (15).
            render_mode: ``None`` or ``"ansi"``.
            backend: ``sqlite`` (embedded, the default) or ``mariadb``.
            mariadb_url: An existing server for ``backend="mariadb"``; without it a private server is started.
            query_timeout_s: Per-statement time limit; defaults to upstream's 60 s.
            train_file: JSONL samples of ``train`` (default: the data root's ``data/dbbench/db_out_new.jsonl``).

        Raises:
            EnvError: For bad options. DataError: If the split's data is missing.
            BackendUnavailableError: If the backend's dependencies are not installed.
        """
        super().__init__(split=split, mode=mode, data_root=data_root, max_rounds=max_rounds, render_mode=render_mode)
        parameters = self.data.task_config(CONFIG_NAME)["default"]["parameters"]
        if max_rounds is None:
            self.max_rounds = int(parameters.get("max_round", self.default_max_rounds))
        self.texts = DBTexts.load(self.data)
        self.samples: list[DBSample] = load_samples(self.data, split, train_file)
        self.backend: DBBackend = make_backend(
            backend,
            query_timeout_s=query_timeout_s if query_timeout_s is not None else self.texts.timeout_s,
            result_limit=self.texts.truncation_limit,
            mariadb_url=mariadb_url,
        )
        self._db: EpisodeDB | None = None
        self._sample: DBSample | None = None

    # ----------------------------------------------------------------- ToolEnv hooks

    def _tool_schemas(self) -> list[dict[str, Any]]:
        return list(self.data.task_config(CONFIG_NAME)["default"]["parameters"]["tools"])

    def num_samples(self) -> int:
        """Samples in the split."""
        return len(self.samples)

    def copyable_names(self, index: int) -> dict[str, str]:
        """Sample ``index``'s table, column and text value names (:meth:`DBSample.copyable_names`)."""
        return self.samples[index].copyable_names()

    @property
    def fidelity(self) -> Fidelity:
        """``emulated`` for SQLite, ``upstream`` for MariaDB."""
        return self.backend.fidelity

    @property
    def backend_name(self) -> str:
        """``sqlite`` or ``mariadb``."""
        return self.backend.name

    def _start(self, index: int) -> list[Message]:
        self._sample = self.samples[index]
        self._db = self.backend.open(self._sample)
        return [
            system_message(self.texts.system_prompt),
            user_message(self.texts.first_user_message(self._sample.raw)),
        ]

    def _respond(self, message: AssistantMessage) -> Turn:
        if not message.tool_calls:
            return Turn(messages=[user_message(self.texts.no_tool_call)])
        replies: list[Message] = []
        for call in message.tool_calls:
            checked = self.toolbox.check(call)
            if checked.ok and checked.name == "commit_final_answer":
                return self._commit(checked, replies)
            replies.append(tool_message(self._reply(checked), checked.id))
        return Turn(messages=replies)

    def _finish(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            db.close()

    def close(self) -> None:
        """End any episode and release the backend (a private MariaDB server stops with its last user)."""
        super().close()
        self.backend.close()

    # ----------------------------------------------------------------- tools

    def _reply(self, call: CheckedCall) -> str:
        """The tool message for a call that does not end the episode."""
        if call.error is ToolCallError.UNKNOWN_TOOL:
            return self.texts.invalid_function
        if call.error is ToolCallError.MALFORMED_ARGUMENTS:
            return self.texts.parse_error
        if call.error is ToolCallError.INVALID_ARGUMENTS:
            return f"Error: {call.detail}"
        return self._execute_sql(call.arguments["query"])

    def _execute_sql(self, sql: str) -> str:
        assert self._db is not None
        try:
            result = self._db.execute(sql)
        except QueryTimeoutError:
            return self.texts.timeout
        except InfraError:
            raise
        except Exception as e:  # upstream words any other failure of the statement this way
            logger.warning("db sample %s: statement failed: %s", self._index, e)
            return self.texts.exception_template.format(error=e)
        return self.texts.truncate(result) or self.texts.empty_result

    def _commit(self, call: CheckedCall, replies: list[Message]) -> Turn:
        assert self._sample is not None and self._db is not None
        sample = self._sample
        answer = call.arguments["answers"]
        if is_modification(sample.query_type):
            compared: Any = combine_table_hashes([self._db.table_hash_result(t) for t in sample.tables])
        else:
            compared = answer
        is_correct = compare_results(compared, sample.ground_truth, sample.query_type)
        reward = 1.0 if is_correct else 0.0
        info = {
            "is_correct": is_correct,
            "answer": answer,
            "ground_truth": sample.ground_truth,
            "type": sample.query_type,
        }
        return Turn(messages=replies, status=SampleStatus.COMPLETED, reward=reward, score=reward, info=info)
