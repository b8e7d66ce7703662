"""``DBOracle``: plays a DBBench sample's gold solution through the environment.

Query samples commit their ``label``; INSERT/DELETE/UPDATE samples run the gold statement (``label[0]``)
and then commit, so the table hash is what gets graded.

Two options shape the transcripts for supervised warm starts: ``show_sql=True`` runs a query sample's
reference SQL (``sql.query``) before committing, so the answer is seen being read from a tool result;
``recovery=True`` (implies ``show_sql``) first sends a variant of the reference statement that names a table
which does not exist, reads the database's error, and then sends the right statement: a transcript that
shows recovering from an SQL error. ``insert_values_only=True`` writes an INSERT whose column list names every
column of its table in order without the list (``INSERT INTO `t` VALUES (...)``): the same row in a statement
half as long, so a small model has fewer tokens to copy right.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentrl_envs.core.errors import EnvError
from agentrl_envs.core.messages import Message
from agentrl_envs.core.oracle import Oracle
from agentrl_envs.tasks.db.data import DBSample, Table, load_samples
from agentrl_envs.tasks.db.grader import is_modification

__all__ = ["DBOracle", "broken_statement", "values_only_insert"]


def _call(name: str, arguments: dict[str, Any], number: int) -> Message:
    call = {
        "id": f"oracle_{number}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def broken_statement(sql: str, table: str) -> str:
    """``sql`` with its table's name misspelt (a plural ``s`` added), so the database answers with an error."""
    wrong = table + "s"
    quoted = f"`{table}`"
    if quoted in sql:
        return sql.replace(quoted, f"`{wrong}`", 1)
    return re.sub(rf"\b{re.escape(table)}\b", wrong, sql, count=1) if table in sql else f"SELECT * FROM `{wrong}`"


def values_only_insert(sql: str, tables: tuple[Table, ...]) -> str:
    """``sql`` without its column list when that list names all columns of one of ``tables`` in order.

    Any other statement (an UPDATE, a partial column list, another quoting) is returned unchanged, so the
    option never changes what a statement does.
    """
    for table in tables:
        listed = "(" + ", ".join(f"`{column}`" for column in table.columns) + ") VALUES "
        head = f"INSERT INTO `{table.name}` "
        if sql.startswith(head + listed):
            return head + "VALUES " + sql[len(head + listed) :]
    return sql


class DBOracle(Oracle):
    """Plays the gold answer of each DBBench sample."""

    def __init__(self, *, split: str = "test", data_root: str | None = None, **options: Any) -> None:
        """Load the split's samples (``train_file=`` as for the env; the transcript options: see above)."""
        super().__init__(split=split, data_root=data_root, **options)
        self.samples: list[DBSample] = load_samples(self.data, split, options.get("train_file"))
        self.recovery = bool(options.get("recovery", False))
        self.show_sql = self.recovery or bool(options.get("show_sql", False))
        self.insert_values_only = bool(options.get("insert_values_only", False))
        self._plan: list[Message] = []

    def begin(self, index: int) -> None:
        """Plan the moves of sample ``index``."""
        if not 0 <= index < len(self.samples):
            raise EnvError(f"Index {index} is out of range: the split has {len(self.samples)} samples.")
        sample = self.samples[index]
        statements: list[str] = []
        if is_modification(sample.query_type):
            statement = str(sample.label[0])
            if self.insert_values_only:
                statement = values_only_insert(statement, sample.tables)
            statements, answers = [statement], []
        else:
            answers = [str(value) for value in sample.label]
            reference = (sample.raw.get("sql") or {}).get("query")
            if self.show_sql and isinstance(reference, str):
                statements = [reference]
        if self.recovery and statements:
            statements.insert(0, broken_statement(statements[0], sample.tables[0].name))
        self._plan = [_call("execute_sql", {"query": sql}, n) for n, sql in enumerate(statements)]
        self._plan.append(_call("commit_final_answer", {"answers": answers}, len(statements)))

    def act(self, observation: list[Message]) -> Message:
        """The next planned move (a no-op reply once the plan is spent)."""
        if not self._plan:
            return {"role": "assistant", "content": "I have nothing more to do."}
        return self._plan.pop(0)
