"""Variables, their programs, and the SPARQL queries upstream derives from them.

A KG variable is a program in upstream's lisp form: ``get_neighbors`` builds ``(JOIN rel_inv X)``,
``intersection`` ``(AND X Y)``, ``count`` ``(COUNT X)``, ``argmax``/``argmin`` ``(ARGMAX X attr)``. Upstream
turns a program into SPARQL with ``lisp_to_sparql`` (from GrailQA's ``logic_form_util``). :func:`compile_program`
does the same translation for every program the seven tools can build, into a :class:`Query`: the triple
patterns with upstream's variable numbering and merging, the entity filters, and the COUNT/superlative
shape. :meth:`Query.sparql` renders the text upstream sends (token for token; whitespace is normalised),
and the in-process backend evaluates the same :class:`Query` over the offline graph, so both backends
answer the same question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "NS",
    "Pattern",
    "Query",
    "QueryError",
    "Variable",
    "and_program",
    "compile_program",
    "count_program",
    "join_program",
    "out_relations_sparql",
    "parse_lisp",
    "postprocess",
    "relations_sparql",
    "superlative_program",
]

NS = "http://rdf.freebase.com/ns/"
LANG_FILTER = "FILTER (!isLiteral(?x) OR lang(?x) = '' OR langMatches(lang(?x), 'en'))"

Lisp = str | list["Lisp"]


class QueryError(ValueError):
    """A program whose query the endpoint rejects (upstream builds malformed SPARQL for it)."""


@dataclass(frozen=True, slots=True)
class Variable:
    """A KG variable: the type shown to the agent and the program that denotes its entities."""

    type: str
    program: str

    def __str__(self) -> str:
        return self.program


@dataclass(frozen=True, slots=True)
class Pattern:
    """One triple pattern; a term starting with ``?`` is a variable, anything else a Freebase id."""

    subject: str
    predicate: str
    object: str

    def sparql(self) -> str:
        """The pattern as upstream writes it (``ns:`` ids, ``?x`` variables, a closing dot)."""
        return f"{_term(self.subject)} ns:{self.predicate} {_term(self.object)} ."


@dataclass(frozen=True, slots=True)
class Query:
    """A compiled program: ``SELECT DISTINCT ?x`` (or ``COUNT``) over ``patterns``, as upstream builds it."""

    patterns: tuple[Pattern, ...]
    entities: tuple[str, ...]
    """Freebase ids the program starts from; upstream filters them out of the answer (``?x != ns:id``)."""
    count: bool = False
    superlatives: tuple[Literal["ARGMAX", "ARGMIN"], ...] = ()
    """Every ARGMAX/ARGMIN in the program, innermost first (upstream appends one ORDER BY for each)."""
    malformed: str | None = None
    """Why upstream's text for this program is not valid SPARQL (e.g. COUNT over ARGMAX), else ``None``."""

    @property
    def superlative(self) -> Literal["ARGMAX", "ARGMIN"] | None:
        """The ordering of a superlative query, or ``None``."""
        return self.superlatives[0] if self.superlatives else None

    def sparql(self) -> str:
        """The SPARQL text upstream's ``lisp_to_sparql`` produces for this program."""
        body = [p.sparql() for p in self.patterns]
        filters = [f"FILTER (?x != ns:{e})" for e in self.entities]
        select = "SELECT COUNT DISTINCT ?x" if self.count else "SELECT DISTINCT ?x"
        order = [line for kind in self.superlatives for line in (_order(kind), "LIMIT 1")]
        if not self.superlatives or self.count:
            lines = ["PREFIX ns: <http://rdf.freebase.com/ns/>", select, "WHERE {", LANG_FILTER, *body, *filters, "}"]
            if self.superlatives:  # upstream still appends the ordering and two braces: a syntax error
                lines += [*order, "}", "}"]
            return "\n".join(lines)
        inner = ["{SELECT ?sk0", "WHERE {", LANG_FILTER, *body, *filters, "}", *order, "}"]
        return "\n".join(["PREFIX ns: <http://rdf.freebase.com/ns/>", select, "WHERE {", *body, *inner, "}"])


def relations_sparql(query: Query) -> str:
    """Upstream's query for the relations (or attributes) of a variable: every ``?rel`` of its members."""
    lines = query.sparql().split("\n")
    return "\n".join([lines[0], "SELECT DISTINCT ?rel\nWHERE {\n?x ?rel ?obj .\n{", *lines[1:], "}\n}"])


def out_relations_sparql(entity: str) -> str:
    """Upstream's ``get_out_relations`` query: the Freebase predicates leaving one entity."""
    return (
        "PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#>\n"
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
        "PREFIX : <http://rdf.freebase.com/ns/>\n"
        "SELECT (?x0 AS ?value) WHERE {\n"
        "SELECT DISTINCT ?x0  WHERE {\n"
        f":{entity} ?x0 ?x1 . \n"
        'FILTER regex(?x0, "http://rdf.freebase.com/ns/")\n'
        "}\n}"
    )


def parse_lisp(text: str) -> Lisp:
    """Parse a lisp program into nested lists of tokens, as upstream's ``lisp_to_nested_expression``.

    Raises:
        QueryError: If the parentheses do not balance.
    """
    stack: list[list[Lisp]] = [[]]
    for token in text.replace("(", " ( ").replace(")", " ) ").split():
        if token == "(":
            stack.append([])
        elif token == ")":
            if len(stack) < 2:
                raise QueryError(f"Unbalanced program {text!r}.")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(token)
    if len(stack) != 1 or len(stack[0]) != 1:
        raise QueryError(f"Unbalanced program {text!r}.")
    return stack[0][0]


def compile_program(program: str) -> Query:
    """Translate a variable's program into upstream's query (see the module docstring)."""
    return _Compiler().run(parse_lisp(postprocess(program)))


class _Compiler:
    """Upstream's linearisation: number sub-programs bottom-up, merge the ones that denote the same entities."""

    def __init__(self) -> None:
        self.patterns: list[tuple[str, str, str]] = []
        self.entities: list[str] = []
        self.parent: dict[int, int] = {}
        self.next_id = 0
        self.count = False
        self.superlatives: list[Literal["ARGMAX", "ARGMIN"]] = []

    def run(self, expression: Lisp) -> Query:
        if isinstance(expression, str):
            raise QueryError(f"A bare id {expression!r} is not a program.")
        question = self._visit(expression)
        root = self._root(question)

        def rename(term: str) -> str:
            if not term.startswith("?x"):
                return term
            var = self._root(int(term[2:]))
            return "?x" if var == root else f"?x{var}"

        patterns = tuple(Pattern(rename(s), p, rename(o)) for s, p, o in self.patterns)
        malformed = None
        if len(self.superlatives) > 1:
            malformed = "two superlatives give two ORDER BY clauses, which SPARQL does not allow"
        elif self.superlatives and self.count:
            malformed = "COUNT over a superlative leaves ORDER BY outside the query"
        return Query(patterns, tuple(self.entities), self.count, tuple(self.superlatives), malformed)

    def _root(self, var: int) -> int:
        while var in self.parent:
            var = self.parent[var]
        return var

    def _merge(self, new: int, old: int) -> None:
        """Upstream keeps the smaller number as the representative."""
        a, b = self._root(new), self._root(old)
        if a > b:
            self.parent[a] = b
        elif b > a:
            self.parent[b] = a

    def _visit(self, expression: list[Lisp]) -> int:
        args: list[Lisp] = []
        for item in expression[1:]:
            if isinstance(item, list) and (not item or item[0] != "R"):
                args.append(f"#{self._visit(item)}")
            else:
                args.append(item)
        me = self.next_id
        self.next_id += 1
        self._emit(me, str(expression[0]) if expression else "", args)
        return me

    def _emit(self, me: int, op: str, args: list[Lisp]) -> None:
        if op == "JOIN" and len(args) == 2:
            self._join(me, args[0], args[1])
        elif op == "AND" and len(args) == 2 and all(_is_ref(a) for a in args):
            self._merge(me, _ref(args[1]))
            self._merge(me, _ref(args[0]))
        elif op == "COUNT" and len(args) == 1 and _is_ref(args[0]):
            self.parent[me] = self._root(_ref(args[0]))
            self.count = True
        elif op in ("ARGMAX", "ARGMIN") and len(args) == 2 and _is_ref(args[0]) and isinstance(args[1], str):
            self._merge(me, _ref(args[0]))
            self.patterns.append((f"?x{me}", args[1], "?sk0"))
            self.superlatives.append(op)
        else:
            raise QueryError(f"Unsupported program step ({op} {args}).")

    def _join(self, me: int, relation: Lisp, source: Lisp) -> None:
        if isinstance(relation, list) and len(relation) == 2 and relation[0] == "R" and isinstance(relation[1], str):
            if _is_ref(source):
                self.patterns.append((f"?x{_ref(source)}", relation[1], f"?x{me}"))
            elif isinstance(source, str):
                self.patterns.append((source, relation[1], f"?x{me}"))
                self._note_entity(source)
            else:
                raise QueryError(f"Unsupported JOIN source {source!r}.")
        elif isinstance(relation, str) and _is_ref(source):
            self.patterns.append((f"?x{me}", relation, f"?x{_ref(source)}"))
        elif isinstance(relation, str) and isinstance(source, str):
            self.patterns.append((f"?x{me}", relation, source))
            self._note_entity(source)
        else:
            raise QueryError(f"Unsupported JOIN ({relation!r} {source!r}).")

    def _note_entity(self, source: str) -> None:
        """Upstream filters Freebase ids (``m.``/``g.``), not class names, out of the answer."""
        if source[:2] in ("m.", "g.") and source not in self.entities:
            self.entities.append(source)


def postprocess(program: str) -> str:
    """Upstream's ``postprocess_raw_code``: ``rel_inv`` becomes ``(R rel)``."""
    words = []
    for word in program.split(" "):
        stripped = word.rstrip(")")
        if len(stripped) > 4 and stripped.endswith("_inv"):
            word = f"(R {stripped[:-4]})" + word[len(stripped) :]
        words.append(word)
    return " ".join(words)


def _is_ref(item: Lisp) -> bool:
    return isinstance(item, str) and item.startswith("#")


def _ref(item: Lisp) -> int:
    assert isinstance(item, str)
    return int(item[1:])


def _term(term: str) -> str:
    return term if term.startswith("?") else f"ns:{term}"


def _order(superlative: str) -> str:
    return "ORDER BY DESC(?sk0)" if superlative == "ARGMAX" else "ORDER BY ?sk0"


def join_program(relation: str, source: Variable | str) -> str:
    """``get_neighbors``: the entities ``relation`` leads to from ``source``."""
    return f"(JOIN {relation}_inv {source})"


def and_program(first: Variable, second: Variable) -> str:
    """``intersection``."""
    return f"(AND {first} {second})"


def count_program(variable: Variable) -> str:
    """``count``."""
    return f"(COUNT {variable})"


def superlative_program(kind: Literal["ARGMAX", "ARGMIN"], variable: Variable, attribute: str) -> str:
    """``argmax``/``argmin``."""
    return f"({kind} {variable} {attribute})"
