"""BFCL's own code, imported from the extracted wheel: the multi-turn checker, its executor and the backends.

BFCL's modules import each other as ``bfcl_eval.*`` and its executor imports the backends by those names
(``CLASS_FILE_PATH_MAPPING``), so they must be importable under ``bfcl_eval``. A meta-path finder maps that
name, and only that name, onto the extracted tree (``<cache>/bfcl/<version>``); ``sys.path`` is left alone.
The modules imported are pure Python: ``constants.{default_prompts,enums,executable_backend_config,
type_mappings}``, ``eval_checker.multi_turn_eval.{multi_turn_checker,multi_turn_utils}`` and the eight
multi-turn backends in ``func_source_code`` (``math_api`` needs ``mpmath``: ``pip install
agentrl-envs[bfcl]``).

Three more pieces live in modules whose imports are heavy (``bfcl_eval/utils.py`` needs filelock,
``bfcl_eval/model_handler/utils.py`` tenacity and tree-sitter): the Python-syntax hint BFCL adds to every
function description, ``convert_to_tool`` (function docs to OpenAI tool schemas) and
``convert_to_function_call`` (an OpenAI tool call to the call string BFCL executes). Those *functions*
are read from the files' syntax trees and compiled alone, with only the names they use, so the schemas and
call strings are BFCL's own without importing what surrounds them. Nothing that pulls BFCL's heavy
requirements (the model handlers, the memory and web-search backends) is imported.
"""

from __future__ import annotations

import ast
import copy
import importlib
import importlib.abc
import importlib.machinery
import json
import re
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from agentrl_envs.core.errors import BackendUnavailableError, DataError

__all__ = ["BFCLUpstream", "load_upstream"]

_PACKAGE = "bfcl_eval"
_lock = threading.Lock()
_loaded: dict[Path, BFCLUpstream] = {}


class _TreeFinder(importlib.abc.MetaPathFinder):
    """Finds ``bfcl_eval`` and its submodules in one extracted tree, and nothing else."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _PACKAGE and not fullname.startswith(_PACKAGE + "."):
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, list(path) if path else [str(self.root)])


@dataclass(frozen=True)
class BFCLUpstream:
    """The BFCL modules the environments use, loaded from one tree."""

    root: Path
    checker: ModuleType
    """``eval_checker.multi_turn_eval.multi_turn_checker`` (``multi_turn_checker``)."""
    executor: ModuleType
    """``eval_checker.multi_turn_eval.multi_turn_utils`` (``execute_multi_turn_func_call``)."""
    prompts: ModuleType
    """``constants.default_prompts`` (``MAXIMUM_STEP_LIMIT``, the miss-func user prompt)."""
    backends: ModuleType
    """``constants.executable_backend_config`` (``CLASS_FILE_PATH_MAPPING``, ``STATELESS_CLASSES``)."""
    type_mappings: ModuleType
    """``constants.type_mappings`` (``GORILLA_TO_OPENAPI``)."""
    functions: dict[str, Callable[..., Any]]
    """BFCL's functions read from ``utils.py`` and ``model_handler/utils.py`` (see the module docstring)."""

    def openai_tools(self, function_docs: list[dict[str, Any]], category: str) -> list[dict[str, Any]]:
        """OpenAI tool schemas for BFCL function docs, as BFCL's OpenAI function-calling handler builds them.

        Args:
            function_docs: BFCL function docs (``multi_turn_func_doc``); not modified.
            category: BFCL's category name (``multi_turn_base``); picks the language hint (Python 3 here).
        """
        docs = self.functions["_func_doc_language_specific_pre_processing"](copy.deepcopy(function_docs), category)
        enums = sys.modules[f"{_PACKAGE}.constants.enums"]
        return self.functions["convert_to_tool"](
            docs, self.type_mappings.GORILLA_TO_OPENAPI, enums.ModelStyle.OPENAI_COMPLETIONS
        )

    def call_string(self, name: str, arguments: dict[str, Any]) -> str:
        """The call string BFCL executes for an OpenAI tool call (``convert_to_function_call``)."""
        return self.functions["convert_to_function_call"]([{name: arguments}])[0]

    def backend_class(self, class_name: str) -> type[Any]:
        """A backend class by BFCL's name (``GorillaFileSystem``), imported the way BFCL's executor does.

        Raises:
            BackendUnavailableError: If the backend needs a package that is not installed (``mpmath``).
        """
        module_name = self.backends.CLASS_FILE_PATH_MAPPING[class_name]
        try:
            module = importlib.import_module(module_name)
        except ImportError as e:
            raise BackendUnavailableError(
                f"BFCL's {class_name} backend needs {e.name!r}: pip install 'agentrl-envs[bfcl]'."
            ) from e
        return getattr(module, class_name)

    def forget_instances(self, prefix: str) -> None:
        """Drop the backend instances BFCL's executor keeps in its module globals for names starting ``prefix``.

        The executor caches one instance per ``(model name, entry, class)`` in ``multi_turn_utils``'s globals
        for the life of the process; an episode names its own prefix and drops them when it ends.
        """
        namespace = vars(self.executor)
        for name in [name for name in list(namespace) if name.startswith(prefix)]:
            namespace.pop(name, None)


def load_upstream(root: Path) -> BFCLUpstream:
    """Import BFCL's modules from the extracted tree ``root`` (once per process).

    Raises:
        DataError: If another copy of ``bfcl_eval`` (an installed bfcl-eval, another tree) is already imported.
    """
    root = root.resolve()
    with _lock:
        if root in _loaded:
            return _loaded[root]
        present = sys.modules.get(_PACKAGE)
        if present is not None and Path(present.__file__ or "").resolve().parent.parent != root:
            raise DataError(
                f"Another bfcl_eval is already imported in this process ({present.__file__}); the BFCL "
                f"environments need the pinned copy in {root}. Do not import bfcl_eval before agentrl's BFCL envs."
            )
        if not any(isinstance(f, _TreeFinder) and f.root == root for f in sys.meta_path):
            sys.meta_path.insert(0, _TreeFinder(root))
        functions = _functions_from(
            root / _PACKAGE / "utils.py",
            ("is_java", "is_js", "_get_language_specific_hint", "_func_doc_language_specific_pre_processing"),
            {"json": json},
        )
        type_mappings = importlib.import_module(f"{_PACKAGE}.constants.type_mappings")
        enums = importlib.import_module(f"{_PACKAGE}.constants.enums")
        functions |= _functions_from(
            root / _PACKAGE / "model_handler" / "utils.py",
            ("_cast_to_openai_type", "convert_to_tool", "convert_to_function_call"),
            {
                "copy": copy,
                "json": json,
                "re": re,
                "ModelStyle": enums.ModelStyle,
                "GORILLA_TO_OPENAPI": type_mappings.GORILLA_TO_OPENAPI,
            },
        )
        loaded = BFCLUpstream(
            root=root,
            checker=importlib.import_module(f"{_PACKAGE}.eval_checker.multi_turn_eval.multi_turn_checker"),
            executor=importlib.import_module(f"{_PACKAGE}.eval_checker.multi_turn_eval.multi_turn_utils"),
            prompts=importlib.import_module(f"{_PACKAGE}.constants.default_prompts"),
            backends=importlib.import_module(f"{_PACKAGE}.constants.executable_backend_config"),
            type_mappings=type_mappings,
            functions=functions,
        )
        _loaded[root] = loaded
        return loaded


def _functions_from(path: Path, names: tuple[str, ...], namespace: dict[str, Any]) -> dict[str, Callable[..., Any]]:
    """Compile only the top-level functions ``names`` of the module at ``path``, in ``namespace``.

    Raises:
        DataError: If a function is missing (the tree is not the pinned wheel's).
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    chosen = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in names]
    missing = sorted(set(names) - {node.name for node in chosen})
    if missing:
        raise DataError(f"{path} has no function(s) {missing}; the BFCL tree is not the pinned release.")
    scope = dict(namespace)
    exec(compile(ast.Module(body=[*chosen], type_ignores=[]), str(path), "exec"), scope)  # noqa: S102 - BFCL's code
    return {name: scope[name] for name in names}
