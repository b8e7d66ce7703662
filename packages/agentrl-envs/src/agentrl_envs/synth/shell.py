"""Procedural OS tasks: shell problems with their init, example and check scripts, validated in the sandbox.

Each family draws a small file tree (names, contents and counts from the seed), writes the ``init`` script
that creates it, the question, the ``example`` script that solves it, and the check: for questions, the
upstream chain ``[null, <match script>]`` (the example's output compared with the answer as integers or as
stripped strings); for state changes, a bash script that inspects the system. The samples use
``train_0317/training.json``'s format with inline scripts (``{"code": ...}``), so a file needs no script
directory.

Levels: 1 one command (count files of a kind, count lines, read a setting); 2 a pipeline (files containing
a word under a tree, a CSV column's sum, the largest file); 3 a state change or a longer pipeline (write a
computed report, rename files, make scripts executable, the most frequent user of a log).
"""

from __future__ import annotations

import json
import random
import shlex
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from agentrl_envs.core.env import ToolEnv
from agentrl_envs.core.errors import DataError
from agentrl_envs.core.messages import Message
from agentrl_envs.synth import names
from agentrl_envs.synth.types import Candidate, Rejection
from agentrl_envs.synth.validate import Player, ScriptedPlayer, TaskAdapter, call
from agentrl_envs.tasks.os.data import parse_sample

__all__ = ["OSAdapter", "OSGenerator"]

SOURCE = "agentrl-synth"

INTEGER_MATCH = (
    "import sys\ntry:\n    sys.exit(0 if int(sys.argv[1].strip()) == int(sys.argv[2].strip()) else 1)\n"
    "except ValueError:\n    sys.exit(1)\n"
)
STRING_MATCH = "import sys\nsys.exit(0 if sys.argv[1].strip() == sys.argv[2].strip() else 1)\n"

Problem = tuple[str, str, str, str, list[str]]
"""(description, init script, example script, check: ``int``/``str`` or a bash state check, labels)."""


def _dir(rng: random.Random) -> str:
    return f"/root/{rng.choice(names.WORDS)}_{rng.choice(('files', 'data', 'project', 'archive', 'work'))}"


def _files(rng: random.Random, n: int, ext: str) -> list[str]:
    stems = names.pick_unique(rng, lambda r: f"{r.choice(names.WORDS)}_{r.randint(1, 99)}", n)
    return [f"{stem}.{ext}" for stem in stems]


def _touch(directory: str, files: list[str], content: Callable[[str], str] = lambda f: "") -> list[str]:
    lines = [f"mkdir -p {shlex.quote(directory)}"]
    for file in files:
        lines.append(f"printf %s {shlex.quote(content(file))} > {shlex.quote(directory + '/' + file)}")
    return lines


class _Families:
    """The problem families of each level; each returns ``None`` when its draw is ambiguous."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def by_level(self, level: int) -> list[Callable[[], Problem | None]]:
        return {
            1: [self.count_kind, self.count_lines, self.read_setting],
            2: [self.files_with_word, self.csv_sum, self.largest_file],
            3: [self.write_report, self.rename_kind, self.make_executable, self.top_user],
        }[level]

    # ----------------------------------------------------------------- level 1

    def count_kind(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        ext, other = rng.sample(("log", "txt", "csv", "json", "md"), 2)
        files = _files(rng, rng.randint(2, 9), ext) + _files(rng, rng.randint(1, 6), other)
        init = _touch(d, files)
        text = f"How many .{ext} files are there directly inside {d}? Answer with the number only."
        return text, "\n".join(init), f"ls {d}/*.{ext} | wc -l", "int", ["file", "count"]

    def count_lines(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        lines = [f"{names.person_name(rng)}, {rng.choice(names.CITIES)}" for _ in range(rng.randint(3, 40))]
        file = f"{d}/{rng.choice(('contacts', 'guests', 'members'))}.txt"
        init = [f"mkdir -p {d}", f"printf '%s\\n' {' '.join(shlex.quote(x) for x in lines)} > {file}"]
        return f"How many lines does {file} have?", "\n".join(init), f"wc -l < {file}", "int", ["file", "count"]

    def read_setting(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        keys = rng.sample(("PORT", "HOST", "LOG_LEVEL", "WORKERS", "TIMEOUT", "REGION", "CACHE_SIZE"), 4)
        values = {"PORT": str(rng.randint(1024, 9999)), "HOST": f"{rng.choice(names.WORDS)}.internal",
                  "LOG_LEVEL": rng.choice(("debug", "info", "warning")), "WORKERS": str(rng.randint(2, 64)),
                  "TIMEOUT": f"{rng.randint(5, 120)}s", "REGION": rng.choice(("eu-west", "us-east", "ap-south")),
                  "CACHE_SIZE": f"{rng.randint(1, 16)}G"}  # fmt: skip
        key = keys[0]
        body = "\n".join(f"{k}={values[k]}" for k in rng.sample(keys, len(keys))) + "\n"
        file = f"{d}/app.env"
        init = [f"mkdir -p {d}", f"printf %s {shlex.quote(body)} > {file}"]
        example = f"grep '^{key}=' {file} | cut -d= -f2"
        return (
            f"What is the value of {key} in {file}? Answer with the value only.",
            "\n".join(init),
            example,
            "str",
            ["file"],
        )

    # ----------------------------------------------------------------- level 2

    def files_with_word(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        word = rng.choice(("ERROR", "TIMEOUT", "DENIED", "FATAL"))
        files = _files(rng, rng.randint(4, 12), "log")
        hits = set(rng.sample(files, rng.randint(1, len(files) - 1)))
        subdirs = [f"{d}/{s}" for s in ("app", "db", "web")]
        init = []
        for number, file in enumerate(files):
            sub = subdirs[number % 3]
            text = f"{'boot ok' if file not in hits else 'request ' + word + ' at step 3'}\nshutdown\n"
            init += _touch(sub, [file], lambda f, t=text: t)
        text = f"How many files anywhere under {d} contain the word {word}?"
        return text, "\n".join(init), f"grep -rl {word} {d} | wc -l", "int", ["file", "search"]

    def csv_sum(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        rows = [
            f"{names.person_name(rng)},{rng.choice(names.CITIES)},{rng.randint(1, 500)}"
            for _ in range(rng.randint(4, 25))
        ]
        file = f"{d}/orders.csv"
        body = "customer,city,amount\n" + "\n".join(rows) + "\n"
        init = [f"mkdir -p {d}", f"printf %s {shlex.quote(body)} > {file}"]
        example = f"tail -n +2 {file} | awk -F, '{{s += $NF}} END {{print s}}'"
        text = f"What is the total of the amount column in {file} (a CSV file with a header line)?"
        return text, "\n".join(init), example, "int", ["file", "text processing"]

    def largest_file(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        files = _files(rng, rng.randint(3, 8), rng.choice(("bin", "dat", "img")))
        sizes = rng.sample(range(100, 50000), len(files))
        init = [f"mkdir -p {d}"] + [f"head -c {s} /dev/zero > {d}/{f}" for f, s in zip(files, sizes, strict=True)]
        text = f"Which file in {d} is the largest? Answer with its file name only."
        return text, "\n".join(init), f"ls -S {d} | head -n 1", "str", ["file", "size"]

    # ----------------------------------------------------------------- level 3

    def write_report(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        files = _files(rng, rng.randint(2, 10), "csv") + _files(rng, rng.randint(1, 5), "txt")
        report = f"/root/reports/{rng.choice(('summary', 'inventory', 'count'))}.txt"
        init = _touch(d, files)
        number = sum(f.endswith(".csv") for f in files)
        text = f"Create the file {report} containing only the number of .csv files in {d}."
        example = f"mkdir -p /root/reports && ls {d}/*.csv | wc -l > {report}"
        check = f'[ -f {report} ] && [ "$(tr -d " \\n" < {report})" = "{number}" ]'
        return text, "\n".join(init), example, check, ["file", "write"]

    def rename_kind(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        old, new = rng.choice((("jpeg", "jpg"), ("htm", "html"), ("yml", "yaml"), ("text", "txt")))
        files = _files(rng, rng.randint(2, 8), old)
        keep = _files(rng, rng.randint(1, 4), "md")
        init = _touch(d, files + keep, lambda f: f"{f}\n")
        text = f"Rename every .{old} file in {d} so that its extension is .{new} (keep the rest of each name)."
        example = f'for f in {d}/*.{old}; do mv "$f" "${{f%.{old}}}.{new}"; done'
        expected = " ".join(sorted(f"{f[: -len(old)]}{new}" for f in files))
        check = " && ".join(
            (
                f'[ "$(cd {d} && ls *.{new} 2>/dev/null | sort | tr "\\n" " " | sed "s/ $//")" = "{expected}" ]',
                f"! ls {d}/*.{old} >/dev/null 2>&1",
                f'[ "$(ls {d}/*.md | wc -l)" = "{len(keep)}" ]',
            )
        )
        return text, "\n".join(init), example, check, ["file", "rename"]

    def make_executable(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        scripts = _files(rng, rng.randint(2, 6), "sh")
        notes = _files(rng, rng.randint(1, 3), "txt")
        init = _touch(d, scripts + notes, lambda f: "#!/bin/sh\necho hello\n") + [f"chmod 644 {d}/*"]
        text = f"Make every .sh file in {d} executable by its owner, and leave the other files as they are."
        example = f"chmod u+x {d}/*.sh"
        check = (
            f'for f in {d}/*.sh; do [ -x "$f" ] || exit 1; done; '
            f'for f in {d}/*.txt; do [ -x "$f" ] && exit 1; done; exit 0'
        )
        return text, "\n".join(init), example, check, ["permission"]

    def top_user(self) -> Problem | None:
        rng, d = self.rng, _dir(self.rng)
        users = [n.split()[0].lower() for n in names.pick_unique(rng, names.person_name, 5)]
        entries = [rng.choice(users) for _ in range(rng.randint(10, 40))]
        ranked = Counter(entries).most_common(2)
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return None
        lines = [f"{u} GET /{rng.choice(names.WORDS)} {rng.choice((200, 404, 500))}" for u in entries]
        file = f"{d}/access.log"
        init = [f"mkdir -p {d}", f"printf '%s\\n' {' '.join(shlex.quote(x) for x in lines)} > {file}"]
        example = f"awk '{{print $1}}' {file} | sort | uniq -c | sort -rn | head -n 1 | awk '{{print $2}}'"
        text = f"Each line of {file} starts with a user name. Which user appears on the most lines?"
        return text, "\n".join(init), example, "str", ["file", "text processing"]


class OSGenerator:
    """Draws OS training problems (see the module docstring); deterministic for a seed."""

    task = "os"

    def __init__(self, *, seed: int = 0) -> None:
        """Remember the seed."""
        self.seed = seed

    def candidates(self, difficulty: int) -> Iterator[Candidate]:
        """An endless, seeded stream of candidates of one level."""
        rng = random.Random(f"agentrl-synth-os:{self.seed}:{difficulty}")
        families = _Families(rng)
        while True:
            problem = rng.choice(families.by_level(difficulty))()
            if problem is not None:
                yield Candidate("os", "procedural", difficulty, problem_dict(problem, difficulty))


def problem_dict(problem: Problem, difficulty: int) -> dict[str, Any]:
    """The upstream problem of a drawn family."""
    description, init, example, check, labels = problem
    if check in ("int", "str"):
        chain: list[Any] = [None, {"language": "python", "code": INTEGER_MATCH if check == "int" else STRING_MATCH}]
    else:
        chain = [{"language": "bash", "code": check}]
    return {
        "description": description,
        "create": {"local": "default", "init": {"code": init}},
        "evaluation": {"check": chain, "example": {"code": example}},
        "labels": labels,
        "source": SOURCE,
        "difficulty": difficulty,
    }


class OSAdapter(TaskAdapter):
    """Validation of OS problems (a JSON list, ``training.json``'s format) in the sandbox."""

    task = "os"
    suffix = ".json"

    def prepare(self, sample: dict[str, Any]) -> Rejection | None:
        """Check the problem parses and has an example to play."""
        try:
            parsed = parse_sample(sample, Path("."), "synth")
        except (DataError, KeyError, TypeError, AttributeError) as e:
            return Rejection("malformed", str(e))
        if parsed.match is None and (parsed.example is None or parsed.example.language != "bash"):
            return Rejection("malformed", "a check problem needs a bash example script for the oracle")
        return None

    def make_env(self, path: Path) -> ToolEnv:
        """An OS env on ``path``."""
        from agentrl_envs.tasks.os.env import OSEnv

        return OSEnv(split="train", train_file=path, data_root=str(self.data.path), **self.env_options)

    def foils(self, sample: dict[str, Any], gold: list[Message]) -> dict[str, Player]:
        """Empty: answer ``""`` at once; wrong: the oracle's answer changed, without running anything."""
        answer = _last_answer(gold)
        wrong = (
            str(int(answer) + 1) if answer.strip().lstrip("-").isdigit() else (answer + "_old" if answer else "done")
        )
        return {
            "empty": ScriptedPlayer(lambda step, obs: call("answer_action", answer="")),
            "wrong": ScriptedPlayer(lambda step, obs: call("answer_action", answer=wrong)),
        }


def _last_answer(transcript: list[Message]) -> str:
    for message in reversed(transcript):
        for tool_call in message.get("tool_calls") or []:
            if tool_call["function"]["name"] == "answer_action":
                return str(json.loads(tool_call["function"]["arguments"]).get("answer", ""))
    return ""
