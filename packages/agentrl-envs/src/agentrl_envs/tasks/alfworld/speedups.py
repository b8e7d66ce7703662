"""Memoised pure functions of TextWorld's PDDL engine, so resets and steps stop re-parsing the same text.

Profiling upstream's loop shows where a reset's seconds go, all in pure functions of text:

- fast-downward's translator (``fast_downward.pddl2sas``), run twice per reset (plain and optimised), about
  a second each. Its results are kept on disk (compressed) under the cache dir (keyed by a hash of the domain, problem,
  flags and fast-downward's version) and in a small in-memory LRU;
- the TatSu parse of a game's logic (``GameLogic``). Games differ only in the task sentence of their grammar,
  so the logic is parsed once per template and each game gets a copy whose ``task`` rule says its sentence;
- the TatSu parses inside text generation: every ``derive`` re-parses its start string and every rule
  condition is re-parsed as a conjunctive query. Both are memoised per string (derivations get a fresh copy,
  since ``derive`` writes contexts into the symbols it returns);
- text generation's ``copy_context``, which deep-copies the entity infos and placeholder mapping of every
  symbol it expands. Derivation only adds keys to these dicts (``query`` updates its copy) and never changes
  the entities they point to, so copying the dicts suffices.

The engine reads these results and never mutates them (the C library receives a copy of the SAS text), so
sharing them between resets and threads is safe. :func:`install` patches the module attributes the engine
looks up; it is idempotent.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import pickle
import re
import sys
import tempfile
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["install"]

_TRANSLATION_MEMORY = 2
"""Translations kept in memory: the current game's two (each is megabytes of Python objects, and reading one
back from the disk cache takes milliseconds, so keeping more would only grow memory)."""
_PARSE_MEMORY = 4096
_LOGIC_MEMORY = 4
_TASK_RULE = re.compile(r'"rhs": "Your task is to: (?P<sentence>(?:[^"\\]|\\.)*)"')
_PLACEHOLDER = "UNKNOWN GOAL."
# fast-downward's translator rewrites sys.argv and global options while it runs: one translation at a time.
_TRANSLATE_LOCK = threading.Lock()
_INSTALL_LOCK = threading.Lock()
_installed = False


class Memo:
    """A bounded, thread-safe LRU memo of a pure function of hashable arguments."""

    def __init__(self, function: Callable[..., Any], size: int, *, copy_result: bool = False) -> None:
        """Wrap ``function``.

        Args:
            function: The pure function.
            size: How many results to keep.
            copy_result: Hand out deep copies (for results the caller mutates).
        """
        self.function = function
        self.size = size
        self.copy_result = copy_result
        self._results: OrderedDict[Any, Any] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = (args, tuple(sorted(kwargs.items())))
        result: Any = None
        with self._lock:
            found = key in self._results
            if found:
                self._results.move_to_end(key)
                result = self._results[key]
        if not found:
            result = self.function(*args, **kwargs)
            with self._lock:
                self._results[key] = result
                while len(self._results) > self.size:
                    self._results.popitem(last=False)
        return copy.deepcopy(result) if self.copy_result else result

    def __len__(self) -> int:
        return len(self._results)


class DiskTranslator:
    """fast-downward's ``pddl2sas`` with a disk cache, serialised, without its side effect on ``sys.argv``."""

    def __init__(self, pddl2sas: Callable[..., Any], directory: Path) -> None:
        """Wrap the translator; results go to ``directory`` (one pickle per input)."""
        self.pddl2sas = pddl2sas
        self.directory = directory
        version = metadata.version("fast-downward-textworld")
        self._salt = f"fast-downward-textworld {version}".encode()

    def __call__(self, domain: str, problem: str, verbose: bool = False, optimize: bool = False) -> Any:
        digest = hashlib.sha256(self._salt)
        for part in (domain, problem, str(bool(optimize))):
            digest.update(b"\0" + part.encode("utf-8"))
        file = self.directory / digest.hexdigest()[:2] / f"{digest.hexdigest()}.pkl.z"
        try:
            return pickle.loads(zlib.decompress(file.read_bytes()))  # our own cache file, written below
        except (OSError, zlib.error, pickle.UnpicklingError, EOFError, AttributeError):
            pass
        with _TRANSLATE_LOCK:
            argv = list(sys.argv)
            try:
                result = self.pddl2sas(domain, problem, verbose=verbose, optimize=optimize)
            finally:
                sys.argv[:] = argv
        # Compressed: a translation pickles to about 1 MB, and to 60 KB through zlib (1 ms to inflate).
        _atomic_write_bytes(file, zlib.compress(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)))
        return result


class TemplateLogic:
    """``GameLogic`` parsed once per grammar template; each game gets a copy with its own task sentence."""

    def __init__(self, game_logic: type, grammar_type: type) -> None:
        """Wrap TextWorld's ``GameLogic`` class and ``ContextSensitiveGrammar`` class."""
        self.game_logic = game_logic
        self.grammar_type = grammar_type
        self._templates = Memo(game_logic, _LOGIC_MEMORY)

    def __call__(self, domain: str, grammar: str) -> Any:
        match = _TASK_RULE.search(grammar)
        if match is None:  # not an ALFWorld grammar: parse it as TextWorld would
            return self.game_logic(domain=domain, grammar=grammar)
        template_text = grammar[: match.start("sentence")] + _PLACEHOLDER + grammar[match.end("sentence") :]
        template = self._templates(domain, template_text)
        sentence = json.loads(f'"{match.group("sentence")}"')
        task_rule = self.grammar_type.parse(json.dumps({"task": [{"rhs": f"Your task is to: {sentence}"}]}))
        logic = copy.copy(template)
        # A grammar is a map from symbol to production rules; share every rule but the task's.
        logic.grammar = self.grammar_type()
        for symbol, rules in template.grammar._rules.items():
            logic.grammar._rules[symbol] = rules if symbol != "task" else task_rule._rules["task"]
        return logic


def install(cache_dir: Path) -> None:
    """Patch TextWorld and fast-downward with the memoised functions (idempotent).

    Args:
        cache_dir: Where translations are kept on disk.
    """
    global _installed
    with _INSTALL_LOCK:
        if _installed:
            return
        import fast_downward
        from textworld import logic as tw_logic
        from textworld.envs.pddl import logic as pddl_logic
        from textworld.envs.pddl import textgen

        translator = DiskTranslator(fast_downward.pddl2sas, cache_dir)
        fast_downward.pddl2sas = Memo(translator, _TRANSLATION_MEMORY)
        pddl_logic.GameLogic = TemplateLogic(pddl_logic.GameLogic, textgen.ContextSensitiveGrammar)
        textgen._parse_and_convert = Memo(textgen._parse_and_convert, _PARSE_MEMORY, copy_result=True)
        parse_query = Memo(tw_logic.Rule.parse_conjunctive_query, _PARSE_MEMORY)
        tw_logic.Rule.parse_conjunctive_query = staticmethod(parse_query)
        textgen.copy_context = _copy_context
        _installed = True


def _copy_context(context: dict[str, Any]) -> dict[str, Any]:
    """TextWorld's ``copy_context`` with shallow copies of the two dicts derivation extends (see above)."""
    return {
        "state": context["state"],
        "facts": context["facts"],
        "variables": dict(context["variables"]),
        "mapping": dict(context["mapping"]),
        "entity_infos": context["entity_infos"],
    }


def _atomic_write_bytes(file: Path, data: bytes) -> None:
    """Write via a temporary file and rename, so concurrent readers never see half a file."""
    file.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("wb", dir=file.parent, delete=False, suffix=".tmp") as f:
        f.write(data)
        tmp = f.name
    os.replace(tmp, file)
