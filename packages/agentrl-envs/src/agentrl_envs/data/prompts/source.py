"""Reading texts out of upstream's task code with :mod:`ast`, never by copying them.

A :class:`PySource` is one parsed upstream file; the functions below find a node by the code around it (a
function, an ``if`` test, an ``except`` clause, an assignment, a message constructor) and turn it into a value:
a literal, or a ``str.format`` template made from a string, an f-string or a ``+`` chain. Every lookup that
does not find exactly what it expects raises :class:`DerivationError` naming the file and what was sought, so
upstream code of another shape fails loudly instead of yielding a wrong text.
"""

from __future__ import annotations

import ast
import string
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from agentrl_envs.core.errors import DataError

__all__ = [
    "DerivationError",
    "PySource",
    "assigned",
    "branch",
    "calls",
    "contents",
    "default",
    "final_else",
    "handler",
    "length_test",
    "literal",
    "template",
    "text",
]

N = TypeVar("N", bound=ast.AST)


class DerivationError(DataError):
    """Upstream's code does not have the shape a text is read from."""


class PySource:
    """One upstream Python file, parsed."""

    def __init__(self, path: str, code: str) -> None:
        """Parse ``code``, the contents of upstream's ``path``."""
        self.path = path
        with warnings.catch_warnings():
            # upstream has invalid escapes such as b'\x1b\[' (valid, with a warning, and read as written)
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            self.tree = ast.parse(code, filename=path)

    def constant(self, name: str) -> ast.expr:
        """The value of a module-level ``NAME = ...``."""
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
                return node.value
        raise DerivationError(f"{self.path} has no module-level {name} = ...")

    def function(self, qualname: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
        """A function or method by its qualified name (``Class.method``)."""
        scope: list[ast.stmt] = self.tree.body
        node: ast.AST | None = None
        for part in qualname.split("."):
            node = next((n for n in scope if getattr(n, "name", None) == part), None)
            if node is None:
                raise DerivationError(f"{self.path} has no {qualname}")
            scope = getattr(node, "body", [])
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            raise DerivationError(f"{self.path}: {qualname} is not a function")
        return node

    def where(self, node: ast.AST, scope: str = "") -> str:
        """``path:line`` of a node, with the function it was read from."""
        return f"{self.path}:{getattr(node, 'lineno', '?')}" + (f" ({scope})" if scope else "")


def _walk(root: ast.AST, kind: type[N]) -> list[N]:
    """Every node of a kind below ``root``, in source order."""
    found = [n for n in ast.walk(root) if isinstance(n, kind)]
    return sorted(found, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def _one(found: list[N], what: str, nth: int = 0) -> N:
    if len(found) <= nth:
        raise DerivationError(f"no {what} found (need #{nth + 1}, found {len(found)})")
    return found[nth]


def branch(root: ast.AST, test: str, nth: int = 0) -> ast.If:
    """The ``if`` (or ``elif``) whose test reads ``test``."""
    found = [n for n in _walk(root, ast.If) if ast.unparse(n.test) == test]
    return _one(found, f"`if {test}:`", nth)


def length_test(root: ast.AST, name: str) -> ast.If:
    """The first ``if len(<name>) > N:``."""
    for node in _walk(root, ast.If):
        if isinstance(node.test, ast.Compare) and isinstance(node.test.ops[0], ast.Gt):
            if ast.unparse(node.test.left) == f"len({name})":
                return node
    raise DerivationError(f"no `if len({name}) > N:`")


def final_else(node: ast.If) -> ast.If | ast.Module:
    """The closing ``else:`` of an ``if``/``elif`` chain, as a block to search in."""
    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        node = node.orelse[0]
    if not node.orelse:
        raise DerivationError(f"`if {ast.unparse(node.test)}:` has no else branch")
    return ast.Module(body=node.orelse, type_ignores=[])


def handler(root: ast.AST, exception: str | None, nth: int = 0) -> ast.ExceptHandler:
    """An ``except`` clause by the exception it names (``None`` for a bare ``except:``)."""
    found = [
        n for n in _walk(root, ast.ExceptHandler) if (ast.unparse(n.type) if n.type is not None else None) == exception
    ]
    return _one(found, f"`except {exception or ''}:`", nth)


def assigned(root: ast.AST, name: str, nth: int = 0) -> ast.expr:
    """The value of the ``nth`` assignment (``=`` or ``+=``) to a local ``name``."""
    found: list[ast.expr] = []
    for node in _walk(root, ast.stmt):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found.append(node.value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == name and node.value is not None:
                found.append(node.value)
    return _one(found, f"assignment to {name}", nth)


def calls(root: ast.AST, function: str) -> list[ast.Call]:
    """Calls of ``function`` (a dotted name as written, or a bare method name such as ``split``)."""
    found = []
    for node in _walk(root, ast.Call):
        written = ast.unparse(node.func)
        if written == function or (isinstance(node.func, ast.Attribute) and node.func.attr == function):
            found.append(node)
    return found


def contents(root: ast.AST, role: str) -> list[ast.expr]:
    """The ``content=`` of each ``ChatCompletion<Role>MessageParam(...)`` below ``root``, in source order."""
    found = []
    for call in calls(root, f"ChatCompletion{role}MessageParam"):
        found.extend(k.value for k in call.keywords if k.arg == "content")
    return found


def default(function: ast.FunctionDef | ast.AsyncFunctionDef, parameter: str) -> ast.expr:
    """The default value of a function's parameter."""
    arguments = function.args
    names = [a.arg for a in [*arguments.posonlyargs, *arguments.args]]
    table = dict(zip(names[len(names) - len(arguments.defaults) :], arguments.defaults, strict=True))
    table.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None})
    if parameter not in table:
        raise DerivationError(f"{function.name} has no parameter {parameter} with a default")
    return table[parameter]


def literal(node: ast.expr) -> Any:
    """A literal's value (strings, numbers, lists, dicts, ``True``...)."""
    try:
        return ast.literal_eval(node)
    except ValueError as e:
        raise DerivationError(f"`{ast.unparse(node)[:80]}` is not a literal") from e


def text(node: ast.expr) -> str:
    """A string constant (an f-string without fields counts)."""
    value = template(node, expect=set())
    return value.replace("{{", "{").replace("}}", "}")


def template(
    node: ast.expr,
    fields: Mapping[str, str] | None = None,
    *,
    inline: Mapping[str, str] | None = None,
    expect: set[str] | None = None,
) -> str:
    """A ``str.format`` template of a string expression: constants kept, each other part a ``{field}``.

    Args:
        node: A string constant, an f-string, or a ``+`` chain of them and other expressions.
        fields: Field name of each non-constant part, keyed by its code (``"ob"``, ``"entry['evidence']"``).
            Unlisted parts are named by their variable (``ob`` -> ``{ob}``) or their string key
            (``entry["evidence"]`` -> ``{evidence}``).
        inline: Template text to put in place of a part, keyed by its code: the derived template of a helper
            the code calls there (e.g. the action list an observation ends with).
        expect: The field names the template must have (checked when given).
    """
    fields = dict(fields or {})
    fields.update({code: "\0" + text for code, text in (inline or {}).items()})
    out = "".join(_parts(node, fields))
    names = {name for _, name, _, _ in string.Formatter().parse(out) if name is not None}
    if expect is not None and names != expect:
        raise DerivationError(f"`{ast.unparse(node)[:80]}` gives fields {sorted(names)}, expected {sorted(expect)}")
    return out


def _parts(node: ast.expr, fields: dict[str, str]) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value.replace("{", "{{").replace("}", "}}")
    elif isinstance(node, ast.JoinedStr):
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.conversion != -1 or value.format_spec is not None:
                    raise DerivationError(f"`{ast.unparse(node)[:80]}` formats with a conversion or spec")
                yield _field(value.value, fields)
            else:
                yield from _parts(value, fields)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _parts(node.left, fields)
        yield from _parts(node.right, fields)
    else:
        yield _field(node, fields)


def _field(node: ast.expr, fields: dict[str, str]) -> str:
    code = ast.unparse(node)
    if code in fields and fields[code].startswith("\0"):
        return fields[code][1:]  # an inlined template
    if code in fields:
        name = fields[code]
    elif isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        name = node.slice.value
    else:
        raise DerivationError(f"no field name for `{code}`")
    return "{" + name + "}"
