"""Procedural DBBench tasks: a real-looking table and a templated question, graded by difficulty.

A task is drawn in three steps: a schema (employees, products, books, ... with columns of three kinds: a
``key`` that names a row, ``cat`` columns with repeated values, ``num`` columns of integers), a table of that
schema (more columns and rows as difficulty rises), and a question template of the difficulty that fits the
table. Every template writes the reference SQL; the label (queries) or the gold table hash (INSERT, UPDATE,
DELETE) is then computed by running that SQL on the env's own database engine (:func:`complete_sample`),
so the gold answer is what the grader will see. Templates refuse tables where the question would be
ambiguous (ties for a maximum, a filter that matches nothing).

Levels: 1 (3-4 columns, 6-10 rows: lookups, counts, MIN/MAX, INSERT), 2 (4-5 columns, 10-20 rows: two
conditions, SUM/AVG, ranking, UPDATE, DELETE), 3 (5-6 columns, 20-40 rows: GROUP BY, lists, filtered
ranking, arithmetic UPDATE, two-condition DELETE).
"""

from __future__ import annotations

import ast
import functools
import random
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentrl_envs.core.data import DataRoot
from agentrl_envs.core.env import ToolEnv
from agentrl_envs.core.errors import DataError
from agentrl_envs.core.messages import Message
from agentrl_envs.synth import names
from agentrl_envs.synth.types import Candidate, Rejection
from agentrl_envs.synth.validate import Player, ScriptedPlayer, TaskAdapter, call
from agentrl_envs.tasks.db.backend import make_backend
from agentrl_envs.tasks.db.data import SPLIT_FILES, parse_sample
from agentrl_envs.tasks.db.grader import compare_results, is_modification

__all__ = ["QUESTION_TYPES", "DBAdapter", "DBGenerator", "complete_sample"]

SOURCE = "agentrl-synth"
QUESTION_TYPES = (
    "other", "counting", "aggregation-MIN", "aggregation-MAX", "ranking", "comparison", "INSERT", "UPDATE", "DELETE"
)  # fmt: skip
"""The upstream ``type`` of each question the templates write."""
# Draws in a row whose type is filtered out before a level is declared to have none of the wanted types.
_MAX_FILTERED_DRAWS = 10_000
_DECIMAL = re.compile(r"Decimal\('([^']*)'\)")


@dataclass(frozen=True, slots=True)
class Column:
    """A schema column: its display names (Title Case, snake_case), kind and value maker."""

    title: str
    kind: str
    """``key`` (unique per row), ``cat`` (repeated values) or ``num`` (integers)."""
    make: Callable[[random.Random], str]
    is_additive: bool = True
    """Whether a sum or average of the column means something (not for years)."""

    def name(self, style: str) -> str:
        """The column name in a naming style (``title`` or ``snake``)."""
        return (
            self.title if style == "title" else self.title.lower().replace(" ", "_").replace("(", "").replace(")", "")
        )


@dataclass(frozen=True, slots=True)
class Schema:
    """A kind of table: what a row is (``noun``), the table's possible names, and its columns."""

    noun: str
    table_names: tuple[str, ...]
    columns: tuple[Column, ...]


def _num(low: int, high: int, step: int = 1) -> Callable[[random.Random], str]:
    return lambda rng: str(rng.randrange(low, high + 1, step))


def _choice(pool: tuple[str, ...]) -> Callable[[random.Random], str]:
    return lambda rng: rng.choice(pool)


def _product(rng: random.Random) -> str:
    return f"{rng.choice(names.WORDS).title()} {rng.choice(('Lamp', 'Kettle', 'Backpack', 'Blender', 'Chair', 'Tent'))}"


def _title(rng: random.Random) -> str:
    return rng.choice(("The {} of {}", "{} and {}", "A {} in {}", "Beyond the {}")).format(
        rng.choice(names.WORDS).title(), rng.choice(names.WORDS).title()
    )


def _flight(rng: random.Random) -> str:
    return f"{rng.choice(('TP', 'LH', 'AC', 'QF', 'KL', 'NH'))}{rng.randint(100, 999)}"


SCHEMAS = (
    Schema(
        "employees",
        ("Employee Records", "employees", "staff_directory"),
        (
            Column("Name", "key", names.person_name),
            Column("Department", "cat", _choice(("Sales", "Engineering", "Finance", "Marketing", "Support", "Legal"))),
            Column("City", "cat", _choice(names.CITIES[:8])),
            Column("Salary", "num", _num(32000, 150000, 500)),
            Column("Hire Year", "num", _num(1995, 2023), is_additive=False),
            Column("Age", "num", _num(21, 64)),
        ),
    ),
    Schema(
        "products",
        ("Product Inventory", "products", "store_catalogue"),
        (
            Column("Product", "key", _product),
            Column("Category", "cat", _choice(("Kitchen", "Garden", "Outdoor", "Electronics", "Home Office"))),
            Column("Supplier", "cat", _choice(names.COMPANIES[:6])),
            Column("Price", "num", _num(4, 900)),
            Column("Units in Stock", "num", _num(0, 500)),
            Column("Weight (g)", "num", _num(50, 9000, 10)),
        ),
    ),
    Schema(
        "books",
        ("Library Catalogue", "books", "Book Collection"),
        (
            Column("Title", "key", _title),
            Column(
                "Author",
                "cat",
                _choice(
                    tuple(
                        f"{first} {last}"
                        for first, last in zip(names.FIRST_NAMES[:7], names.LAST_NAMES[:7], strict=True)
                    )
                ),
            ),
            Column(
                "Genre", "cat", _choice(("Mystery", "Science Fiction", "Biography", "Poetry", "History", "Fantasy"))
            ),
            Column("Year Published", "num", _num(1950, 2023), is_additive=False),
            Column("Pages", "num", _num(90, 950)),
            Column("Copies Sold", "num", _num(1000, 900000, 100)),
        ),
    ),
    Schema(
        "players",
        ("Football Players", "squad_stats", "Player Statistics"),
        (
            Column("Player", "key", names.person_name),
            Column(
                "Team", "cat", _choice(("Riverside FC", "Northern United", "Harbor City", "Atlético Sur", "Red Hill"))
            ),
            Column("Position", "cat", _choice(("Goalkeeper", "Defender", "Midfielder", "Forward"))),
            Column("Goals", "num", _num(0, 40)),
            Column("Matches", "num", _num(1, 60)),
            Column("Nationality", "cat", _choice(names.COUNTRIES[:8])),
        ),
    ),
    Schema(
        "flights",
        ("Flight Schedule", "flights", "departures_board"),
        (
            Column("Flight No", "key", _flight),
            Column("Airline", "cat", _choice(("TAP Air", "Lufthansa", "Air Canada", "Qantas", "KLM", "ANA"))),
            Column("Origin", "cat", _choice(names.CITIES[:7])),
            Column("Destination", "cat", _choice(names.CITIES[7:14])),
            Column("Duration (min)", "num", _num(45, 900, 5)),
            Column("Passengers", "num", _num(40, 420)),
        ),
    ),
    Schema(
        "hotels",
        ("Hotel Listings", "hotels", "Accommodation Guide"),
        (
            Column("Hotel", "key", lambda rng: f"Hotel {rng.choice(names.WORDS).title()} {rng.choice(names.CITIES)}"),
            Column("City", "cat", _choice(names.CITIES[:6])),
            Column("Stars", "cat", _choice(("2", "3", "4", "5"))),
            Column("Rooms", "num", _num(8, 600)),
            Column("Nightly Rate", "num", _num(40, 900)),
            Column("Opened", "num", _num(1890, 2022), is_additive=False),
        ),
    ),
)

_SHAPE = {1: ((3, 4), (6, 10)), 2: ((4, 5), (10, 20)), 3: ((5, 6), (20, 40))}
"""Difficulty -> (columns range, rows range)."""


@dataclass
class _Table:
    """A drawn table: its name, columns (by kind) and rows, plus helpers the templates use."""

    schema: Schema
    name: str
    style: str
    columns: list[Column]
    rows: list[list[str]]

    def col(self, column: Column) -> str:
        return column.name(self.style)

    def of_kind(self, kind: str) -> list[Column]:
        return [c for c in self.columns if c.kind == kind]

    def values(self, column: Column) -> list[str]:
        return [row[self.columns.index(column)] for row in self.rows]


def _q(identifier: str) -> str:
    return "`" + identifier.replace("`", "``") + "`"


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _int(column: str) -> str:
    return f"CAST({_q(column)} AS SIGNED)"


Question = tuple[str, str, str]
"""(upstream type, description, reference SQL)."""


class _Templates:
    """The question templates of each level; each returns ``None`` when the table does not fit it."""

    def __init__(self, table: _Table, rng: random.Random) -> None:
        self.t, self.rng = table, rng
        self.key = table.of_kind("key")[0]
        self.cats, self.nums = table.of_kind("cat"), table.of_kind("num")
        self.name = _q(table.name)

    def by_level(self, level: int) -> list[Callable[[], Question | None]]:
        easy = [self.lookup, self.count, self.extreme, self.insert]
        medium = [self.count_two, self.total, self.top, self.update, self.delete]
        hard = [self.group_top, self.listing, self.filtered_top, self.raise_by, self.delete_two]
        return {1: easy, 2: medium, 3: hard}[level]

    # ----------------------------------------------------------------- level 1

    def lookup(self) -> Question | None:
        row = self.rng.choice(self.t.rows)
        other = self.rng.choice([c for c in self.t.columns if c is not self.key])
        key, col = self.t.col(self.key), self.t.col(other)
        value = row[self.t.columns.index(self.key)]
        sql = f"SELECT {_q(col)} FROM {self.name} WHERE {_q(key)} = {_lit(value)}"
        return "other", f"What is the {col} of {value}?", sql

    def count(self) -> Question | None:
        if not self.cats:
            return None
        cat = self.rng.choice(self.cats)
        value = self.rng.choice(self.t.values(cat))
        col = self.t.col(cat)
        sql = f"SELECT COUNT(*) FROM {self.name} WHERE {_q(col)} = {_lit(value)}"
        return "counting", f"How many {self.t.schema.noun} have {value} as their {col}?", sql

    def extreme(self) -> Question | None:
        if not self.nums:
            return None
        num, kind = self.rng.choice(self.nums), self.rng.choice(("MAX", "MIN"))
        col = self.t.col(num)
        word = "highest" if kind == "MAX" else "lowest"
        sql = f"SELECT {kind}({_int(col)}) FROM {self.name}"
        return f"aggregation-{kind}", f"What is the {word} {col} among all {self.t.schema.noun}?", sql

    def insert(self) -> Question | None:
        row = [c.make(self.rng) for c in self.t.columns]
        if row[0] in self.t.values(self.key):
            return None
        cols = [self.t.col(c) for c in self.t.columns]
        pairs = ", ".join(f"'{v}' for {c}" for c, v in zip(cols, row, strict=True))
        sql = f"INSERT INTO {self.name} ({', '.join(map(_q, cols))}) VALUES ({', '.join(map(_lit, row))})"
        return "INSERT", f"Add a new row to the {self.t.name} table with {pairs}.", sql

    # ----------------------------------------------------------------- level 2

    def count_two(self) -> Question | None:
        if not (self.cats and self.nums):
            return None
        cat, num = self.rng.choice(self.cats), self.rng.choice(self.nums)
        value = self.rng.choice(self.t.values(cat))
        threshold = int(self.rng.choice(self.t.values(num)))
        c, n = self.t.col(cat), self.t.col(num)
        sql = f"SELECT COUNT(*) FROM {self.name} WHERE {_q(c)} = {_lit(value)} AND {_int(n)} > {threshold}"
        text = f"How many {self.t.schema.noun} with {c} {value} have a {n} greater than {threshold}?"
        return "counting", text, sql

    def total(self) -> Question | None:
        additive = [n for n in self.nums if n.is_additive]
        if not (self.cats and additive):
            return None
        cat, num, kind = self.rng.choice(self.cats), self.rng.choice(additive), self.rng.choice(("SUM", "AVG"))
        value = self.rng.choice(self.t.values(cat))
        c, n = self.t.col(cat), self.t.col(num)
        word = "total" if kind == "SUM" else "average"
        sql = f"SELECT {kind}({_int(n)}) FROM {self.name} WHERE {_q(c)} = {_lit(value)}"
        return f"aggregation-{kind}", f"What is the {word} {n} of the {self.t.schema.noun} whose {c} is {value}?", sql

    def top(self) -> Question | None:
        if not self.nums:
            return None
        num, desc = self.rng.choice(self.nums), self.rng.random() < 0.5
        if not _unique_extreme([int(v) for v in self.t.values(num)], desc):
            return None
        k, n = self.t.col(self.key), self.t.col(num)
        sql = f"SELECT {_q(k)} FROM {self.name} ORDER BY {_int(n)} {'DESC' if desc else 'ASC'} LIMIT 1"
        word = "highest" if desc else "lowest"
        return "ranking", f"Which of the {self.t.schema.noun} has the {word} {n}? Give its {k}.", sql

    def update(self) -> Question | None:
        row = self.rng.choice(self.t.rows)
        other = self.rng.choice([c for c in self.t.columns if c is not self.key])
        new = other.make(self.rng)
        if new == row[self.t.columns.index(other)]:
            return None
        k, c = self.t.col(self.key), self.t.col(other)
        key = row[self.t.columns.index(self.key)]
        sql = f"UPDATE {self.name} SET {_q(c)} = {_lit(new)} WHERE {_q(k)} = {_lit(key)}"
        return "UPDATE", f"In the {self.t.name} table, change the {c} of {key} to {new}.", sql

    def delete(self) -> Question | None:
        if not self.cats:
            return None
        cat = self.rng.choice(self.cats)
        value = self.rng.choice(self.t.values(cat))
        c = self.t.col(cat)
        sql = f"DELETE FROM {self.name} WHERE {_q(c)} = {_lit(value)}"
        return "DELETE", f"Remove every row of the {self.t.name} table whose {c} is {value}.", sql

    # ----------------------------------------------------------------- level 3

    def group_top(self) -> Question | None:
        if not self.cats:
            return None
        cat = self.rng.choice(self.cats)
        counts = Counter(self.t.values(cat)).most_common()
        if len(counts) < 2 or counts[0][1] == counts[1][1]:
            return None
        c = self.t.col(cat)
        sql = f"SELECT {_q(c)} FROM {self.name} GROUP BY {_q(c)} ORDER BY COUNT(*) DESC LIMIT 1"
        return "ranking", f"Which {c} has the most {self.t.schema.noun}?", sql

    def listing(self) -> Question | None:
        if not (self.cats and self.nums):
            return None
        cat, num = self.rng.choice(self.cats), self.rng.choice(self.nums)
        value = self.rng.choice(self.t.values(cat))
        threshold = int(self.rng.choice(self.t.values(num)))
        k, c, n = self.t.col(self.key), self.t.col(cat), self.t.col(num)
        sql = f"SELECT {_q(k)} FROM {self.name} WHERE {_q(c)} = {_lit(value)} AND {_int(n)} < {threshold}"
        noun = self.t.schema.noun
        text = f"List the {k} of every one of the {noun} whose {c} is {value} and whose {n} is below {threshold}."
        return "other", text, sql

    def filtered_top(self) -> Question | None:
        if not (self.cats and self.nums):
            return None
        cat, num, desc = self.rng.choice(self.cats), self.rng.choice(self.nums), self.rng.random() < 0.5
        value = self.rng.choice(self.t.values(cat))
        i, j = self.t.columns.index(cat), self.t.columns.index(num)
        if not _unique_extreme([int(r[j]) for r in self.t.rows if r[i] == value], desc):
            return None
        k, c, n = self.t.col(self.key), self.t.col(cat), self.t.col(num)
        order = "DESC" if desc else "ASC"
        sql = f"SELECT {_q(k)} FROM {self.name} WHERE {_q(c)} = {_lit(value)} ORDER BY {_int(n)} {order} LIMIT 1"
        word = "highest" if desc else "lowest"
        return "comparison", f"Among the {self.t.schema.noun} whose {c} is {value}, which has the {word} {n}?", sql

    def raise_by(self) -> Question | None:
        if not (self.cats and self.nums):
            return None
        cat, num, step = self.rng.choice(self.cats), self.rng.choice(self.nums), self.rng.choice((1, 5, 10, 100))
        value = self.rng.choice(self.t.values(cat))
        c, n = self.t.col(cat), self.t.col(num)
        sql = f"UPDATE {self.name} SET {_q(n)} = {_int(n)} + {step} WHERE {_q(c)} = {_lit(value)}"
        return "UPDATE", f"Increase the {n} by {step} for every row of {self.t.name} whose {c} is {value}.", sql

    def delete_two(self) -> Question | None:
        if not (self.cats and self.nums):
            return None
        cat, num = self.rng.choice(self.cats), self.rng.choice(self.nums)
        value = self.rng.choice(self.t.values(cat))
        threshold = int(self.rng.choice(self.t.values(num)))
        c, n = self.t.col(cat), self.t.col(num)
        sql = f"DELETE FROM {self.name} WHERE {_q(c)} = {_lit(value)} AND {_int(n)} >= {threshold}"
        noun = self.t.schema.noun
        text = f"Delete the {noun} from {self.t.name} whose {c} is {value} and whose {n} is at least {threshold}."
        return "DELETE", text, sql


def _unique_extreme(values: list[int], highest: bool) -> bool:
    """Whether the maximum (or minimum) of ``values`` is held by exactly one of them."""
    if not values:
        return False
    best = max(values) if highest else min(values)
    return values.count(best) == 1


class DBGenerator:
    """Draws DBBench training tasks (see the module docstring); deterministic for a seed."""

    task = "db"

    def __init__(self, data: DataRoot, *, seed: int = 0, types: Collection[str] | None = None) -> None:
        """Prepare the generator.

        Args:
            data: The data root (for the wording of ``add_description``, read from a dev sample).
            seed: Seed of every random choice.
            types: Keep only questions of these upstream types (:data:`QUESTION_TYPES`; default all). The
                stream is the unfiltered one of the same seed with the other types left out (e.g. an RL set
                without the INSERT questions a small warm-up rarely solves).

        Raises:
            DataError: For a type no template writes.
        """
        unknown = sorted(set(types or ()) - set(QUESTION_TYPES))
        if unknown:
            raise DataError(f"Unknown DB question type(s) {unknown}; choose from {list(QUESTION_TYPES)}.")
        self.seed = seed
        self.types = frozenset(types) if types else None
        self._describe = add_description_template(data)

    def candidates(self, difficulty: int) -> Iterator[Candidate]:
        """An endless, seeded stream of candidates of one level (drawn tables a template refuses are skipped).

        Raises:
            DataError: When ``types`` leaves the level nothing to draw (e.g. INSERT at level 2).
        """
        rng = random.Random(f"agentrl-synth-db:{self.seed}:{difficulty}")
        filtered = 0
        while True:
            sample = self._draw(rng, difficulty)
            if sample is None:
                continue
            if self.types is not None and sample["type"][0] not in self.types:
                filtered += 1
                if filtered >= _MAX_FILTERED_DRAWS:
                    raise DataError(
                        f"No level-{difficulty} DB question has a type in {sorted(self.types)}; "
                        "choose other --types or --difficulty."
                    )
                continue
            filtered = 0
            yield Candidate("db", "procedural", difficulty, sample)

    def _draw(self, rng: random.Random, level: int) -> dict[str, Any] | None:
        table = _draw_table(rng, level)
        template = rng.choice(_Templates(table, rng).by_level(level))
        question = template()
        if question is None:
            return None
        query_type, description, sql = question
        return self._sample_dict(table, query_type, description, sql, level)

    def _sample_dict(self, table: _Table, query_type: str, description: str, sql: str, level: int) -> dict[str, Any]:
        """The upstream sample of a question on a table (label and hash still to be computed)."""
        heads = [table.col(c) for c in table.columns]
        sample: dict[str, Any] = {
            "description": description,
            "label": [sql] if is_modification(query_type) else [],
            "create": {"database": "synth", "init": "synth_init.sql"},
            "table": {
                "table_name": table.name,
                "table_info": {"columns": [{"name": h, "type": "TEXT"} for h in heads], "rows": table.rows},
            },
            "evaluation": "",
            "example": "",
            "type": [query_type],
            "heads": heads,
            "add_description": self._describe(table.name, heads),
            "source": SOURCE,
            "difficulty": level,
        }
        if not is_modification(query_type):
            sample["sql"] = {"query": sql, "length": len(sql)}
        return sample


def _draw_table(rng: random.Random, level: int) -> _Table:
    schema = rng.choice(SCHEMAS)
    (low_cols, high_cols), (low_rows, high_rows) = _SHAPE[level]
    key, *others = schema.columns
    chosen = [key, *sorted(rng.sample(others, rng.randint(low_cols, high_cols) - 1), key=others.index)]
    keys = names.pick_unique(rng, key.make, rng.randint(low_rows, high_rows))
    rows = [[k, *(c.make(rng) for c in chosen[1:])] for k in keys]
    style = rng.choice(("title", "snake"))
    return _Table(schema, rng.choice(schema.table_names), style, chosen, rows)


def add_description_template(data: DataRoot) -> Callable[[str, list[str]], str]:
    """Upstream's ``add_description`` wording, learnt from the first dev sample (kept out of this repo)."""
    try:
        first = data.jsonl(SPLIT_FILES["dev"])[0]
        text, name, heads = first["add_description"], first["table"]["table_name"], ",".join(first["heads"])
    except (KeyError, IndexError) as e:
        raise DataError(f"{SPLIT_FILES['dev']} has no add_description to learn the wording from: {e}") from e
    if name not in text or heads not in text:
        raise DataError(f"Cannot find the table name and headers in the dev sample's add_description {text!r}.")
    pattern = text.replace(name, "\0name\0", 1).replace(heads, "\0heads\0", 1)
    return lambda table, columns: pattern.replace("\0name\0", table).replace("\0heads\0", ",".join(columns))


def complete_sample(sample: dict[str, Any], *, backend: str | None = None) -> Rejection | None:
    """Fill in a sample's gold answer by running its reference SQL on the env's database engine.

    Queries get ``label`` (the first column of the result rows) from ``sql.query``; modifications get
    ``answer_md5`` (the table hash after ``label[0]``). A label the sample already has must agree with the
    computed one (an LLM's proposal may claim a wrong answer).

    Returns:
        ``None`` when the sample is complete, else why it cannot be used.
    """
    try:
        parsed = parse_sample(0, sample, "synth")
    except DataError as e:
        return Rejection("malformed", str(e))
    modification = is_modification(parsed.query_type)
    sql = (sample.get("label") or [None])[0] if modification else (sample.get("sql") or {}).get("query")
    if not isinstance(sql, str) or not sql.strip():
        return Rejection("no_reference_sql", "no label[0] statement" if modification else "no sql.query")
    engine = make_backend(backend, query_timeout_s=10.0, result_limit=1_000_000)
    db = engine.open(parsed)
    try:
        result = db.execute(sql)
        if modification:
            if not (result.startswith("[") and result.endswith("]")):
                return Rejection("reference_sql_error", result[:200])
            sample["answer_md5"] = db.table_hash_result(parsed.tables[0])
            return None
        return _set_label(sample, result)
    finally:
        db.close()
        engine.close()


def _set_label(sample: dict[str, Any], result: str) -> Rejection | None:
    try:  # MySQL's DECIMAL results print as Decimal('397.0000'): keep their text
        rows = ast.literal_eval(_DECIMAL.sub(r"'\1'", result))
    except (ValueError, SyntaxError):
        return Rejection("reference_sql_error", result[:200])
    if not isinstance(rows, list) or not rows:
        return Rejection("empty_result", "the reference SQL returns no rows")
    values = [row[0] for row in rows]
    if any(v is None for v in values):
        return Rejection("empty_result", "the reference SQL returns NULL")
    label = [str(v) for v in values]
    claimed = sample.get("label")
    if claimed:
        if not compare_results(claimed, label, sample["type"][0]):
            return Rejection("label_mismatch", f"claimed {claimed!r}, the SQL gives {label!r}")
    sample["label"] = label
    return None


class DBAdapter(TaskAdapter):
    """Validation of DBBench samples (JSONL, ``data/dbbench/*.jsonl``'s format)."""

    task = "db"
    suffix = ".jsonl"

    def prepare(self, sample: dict[str, Any]) -> Rejection | None:
        """Compute the gold label or table hash from the reference SQL (see :func:`complete_sample`)."""
        return complete_sample(sample, backend=self.env_options.get("backend"))

    def make_env(self, path: Path) -> ToolEnv:
        """A DB env on ``path``."""
        from agentrl_envs.tasks.db.env import DBEnv

        return DBEnv(split="train", train_file=path, data_root=str(self.data.path), **self.env_options)

    def oracle_options(self) -> dict[str, Any]:
        """The oracle runs the reference SQL, so a broken ``sql.query`` is caught too."""
        return {"show_sql": True}

    def foils(self, sample: dict[str, Any], gold: list[Message]) -> dict[str, Player]:
        """Empty: commit at once (``[]`` and ``[""]``); wrong: a changed label, or a wiped table."""
        commit = functools.partial(call, "commit_final_answer")
        if is_modification(sample["type"][0]):
            wipe = call("execute_sql", query=f"DELETE FROM {_q(sample['table']['table_name'])}")
            return {
                "empty": ScriptedPlayer(lambda step, obs: commit(answers=[])),
                "wrong": ScriptedPlayer(lambda step, obs: wipe if step == 0 else commit(answers=[])),
            }
        wrong = _wrong_label([str(v) for v in sample["label"]])
        return {
            "empty": ScriptedPlayer(lambda step, obs: commit(answers=[])),
            "empty:blank": ScriptedPlayer(lambda step, obs: commit(answers=[""])),
            "wrong": ScriptedPlayer(lambda step, obs: commit(answers=wrong)),
        }


def _wrong_label(label: list[str]) -> list[str]:
    """A plausible wrong answer: one value fewer, a number off by more than the tolerance, or another string."""
    if len(label) > 1:
        return label[:-1]
    value = label[0] if label else ""
    try:
        return [str(float(value) + 1 + abs(float(value)) * 0.1)]
    except ValueError:
        return [value + " Jr." if value else "unknown"]
