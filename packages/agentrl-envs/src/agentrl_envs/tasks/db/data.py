"""DBBench samples of each split.

``test`` is upstream's ``dbbench-std`` (``data/dbbench/standard.jsonl``, 300 samples), ``dev`` is
``data/dbbench/dev.jsonl`` (60). ``train`` reads upstream's ``data/dbbench/db_out_new.jsonl`` when the data root
has it (a fetch from GitHub does; the local mirror lacks it), or a JSONL file the user names with ``train_file=``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from agentrl_envs.core.data import DataRoot, read_jsonl
from agentrl_envs.core.errors import DataError

__all__ = ["SPLIT_FILES", "TRAIN_FILE", "DBSample", "Table", "load_samples", "parse_sample"]

SPLIT_FILES = {"test": "data/dbbench/standard.jsonl", "dev": "data/dbbench/dev.jsonl"}
TRAIN_FILE = "data/dbbench/db_out_new.jsonl"
"""Upstream's ``dbbench-env_train`` file; the default of the train split when the data root has it."""


@dataclass(frozen=True, slots=True)
class Table:
    """One table of a sample: its name, column names and rows (cells as upstream inserts them)."""

    name: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True, slots=True)
class DBSample:
    """One DBBench question with its tables and gold answer."""

    index: int
    raw: dict[str, Any]
    """The sample as stored, for the prompt texts."""
    query_type: str
    """``INSERT``, ``UPDATE``, ``DELETE`` or a query type (``counting``, ``ranking``, ...)."""
    tables: tuple[Table, ...]
    label: list[Any]
    """The gold answer values (query types) or the gold statement (modification types)."""
    answer_md5: str | None
    """The gold table hash of modification types."""

    @property
    def ground_truth(self) -> Any:
        """What the answer is compared with: ``answer_md5`` for modifications, else ``label``."""
        return self.answer_md5 if self.query_type in ("INSERT", "DELETE", "UPDATE") else self.label

    def copyable_names(self) -> dict[str, str]:
        """The names an agent can only copy from the prompt, each with its kind (``table``, ``column``, ``value``).

        Values are the tables' text cells (not numbers or dates) and the string literals of the reference
        statements (an INSERT's new row is only in its label). A name that is also a table or column keeps that
        kind. SFT renames these to random names so a model learns to copy them rather than recall them
        (``sft_warmup.random_names``).
        """
        names = {t.name: "table" for t in self.tables}
        names |= {c: "column" for t in self.tables for c in t.columns if c not in names}
        sql = self.raw.get("sql")
        statements = [str(sql.get("query", "") if isinstance(sql, dict) else sql or ""), *map(str, self.label)]
        literals = re.findall(r"'([^']*)'", " ".join(statements))
        for value in [*(cell for t in self.tables for row in t.rows for cell in row), *literals]:
            if value.strip() and not re.fullmatch(r"[\d.\s:-]*", value) and value not in names:
                names[value] = "value"
        return names


def load_samples(data: DataRoot, split: str, train_file: str | os.PathLike[str] | None = None) -> list[DBSample]:
    """The samples of a split.

    Raises:
        DataError: If the split's file is missing, ``train`` is asked for without ``train_file``, or a
            sample lacks the fields DBBench needs.
    """
    if split == "train":
        if train_file is None:
            try:
                train_file = data.file(TRAIN_FILE)
            except DataError as e:
                raise DataError(
                    f"{e} The DB train split reads it, or a JSONL file you pass as train_file=... (each line a "
                    "sample like those of data/dbbench/standard.jsonl)."
                ) from e
        rows = read_jsonl(train_file)
        source = str(train_file)
    elif split in SPLIT_FILES:
        rows = data.jsonl(SPLIT_FILES[split])
        source = SPLIT_FILES[split]
    else:
        raise DataError(f"Unknown DB split {split!r}; choose test, dev or train.")
    return [parse_sample(number, row, source) for number, row in enumerate(rows)]


def parse_sample(index: int, row: dict[str, Any], source: str) -> DBSample:
    """One sample as stored (a dict of a JSONL line); ``source`` names the file in error messages.

    Raises:
        DataError: If the sample lacks a field DBBench needs.
    """
    try:
        query_type = row["type"][0]
        tables = row["table"] if isinstance(row["table"], list) else [row["table"]]
        parsed = tuple(_parse_table(t) for t in tables)
        row["description"]  # noqa: B018 - checked here so a broken sample fails at load, not mid-episode
    except (KeyError, IndexError, TypeError) as e:
        hint = " (samples with user_sqlite need upstream's db_train SQLite files, which are not supported)"
        hint = hint if row.get("user_sqlite") else ""
        raise DataError(f"{source}: sample {index} lacks the DBBench field {e}{hint}.") from e
    answer_md5 = row.get("answer_md5")
    return DBSample(index, row, query_type, parsed, list(row.get("label") or []), answer_md5)


def _parse_table(table: dict[str, Any]) -> Table:
    info = table["table_info"]
    columns = tuple(str(c["name"]) for c in info["columns"])
    # upstream inserts every cell as str(cell) into TEXT columns
    rows = tuple(tuple(str(cell) for cell in row) for row in info["rows"])
    return Table(str(table["table_name"]), columns, rows)
