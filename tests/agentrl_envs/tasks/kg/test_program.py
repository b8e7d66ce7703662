from __future__ import annotations

import re

import pytest

from agentrl_envs.tasks.kg.program import (
    QueryError,
    compile_program,
    out_relations_sparql,
    parse_lisp,
    postprocess,
    relations_sparql,
)

INTERSECTION = "(AND (JOIN r.b_inv (JOIN r.a_inv m.1)) (JOIN r.c_inv m.2))"


def test_postprocess_turns_inv_into_r() -> None:
    assert postprocess("(JOIN a.b_inv (JOIN c.d_inv m.1))") == "(JOIN (R a.b) (JOIN (R c.d) m.1))"


def test_parse_lisp_nests_and_rejects_unbalanced() -> None:
    assert parse_lisp("(AND (JOIN (R a) m.1) (COUNT x))") == ["AND", ["JOIN", ["R", "a"], "m.1"], ["COUNT", "x"]]
    with pytest.raises(QueryError, match=re.escape("Unbalanced program")):
        parse_lisp("(AND (JOIN a m.1)")


def test_intersection_query_is_upstreams_text() -> None:
    assert compile_program(INTERSECTION).sparql() == "\n".join(
        [
            "PREFIX ns: <http://rdf.freebase.com/ns/>",
            "SELECT DISTINCT ?x",
            "WHERE {",
            "FILTER (!isLiteral(?x) OR lang(?x) = '' OR langMatches(lang(?x), 'en'))",
            "ns:m.1 ns:r.a ?x0 .",
            "?x0 ns:r.b ?x .",
            "ns:m.2 ns:r.c ?x .",
            "FILTER (?x != ns:m.1)",
            "FILTER (?x != ns:m.2)",
            "}",
        ]
    )


def test_count_and_superlative_queries() -> None:
    count = compile_program("(COUNT (JOIN r.a_inv m.1))").sparql()
    assert count.splitlines()[1] == "SELECT COUNT DISTINCT ?x"
    arg = compile_program("(ARGMAX (JOIN r.a_inv m.1) r.size)").sparql().splitlines()
    assert arg == [
        "PREFIX ns: <http://rdf.freebase.com/ns/>",
        "SELECT DISTINCT ?x",
        "WHERE {",
        "ns:m.1 ns:r.a ?x .",
        "?x ns:r.size ?sk0 .",
        "{SELECT ?sk0",
        "WHERE {",
        "FILTER (!isLiteral(?x) OR lang(?x) = '' OR langMatches(lang(?x), 'en'))",
        "ns:m.1 ns:r.a ?x .",
        "?x ns:r.size ?sk0 .",
        "FILTER (?x != ns:m.1)",
        "}",
        "ORDER BY DESC(?sk0)",
        "LIMIT 1",
        "}",
        "}",
    ]


def test_malformed_programs_are_flagged_like_upstreams_broken_text() -> None:
    query = compile_program("(COUNT (ARGMIN (JOIN r.a_inv m.1) r.size))")
    assert query.malformed and query.sparql().count("}") > query.sparql().count("{")
    twice = compile_program("(ARGMAX (ARGMIN (JOIN r.a_inv m.1) r.s) r.t)")
    assert twice.malformed and twice.sparql().count("ORDER BY") == 2


def test_relations_query_wraps_the_variable() -> None:
    text = relations_sparql(compile_program("(JOIN r.a_inv m.1)"))
    assert text.startswith("PREFIX ns: <http://rdf.freebase.com/ns/>\nSELECT DISTINCT ?rel\nWHERE {\n?x ?rel ?obj .\n{")
    assert text.endswith("}\n}\n}")
    assert ":m.1 ?x0 ?x1 ." in out_relations_sparql("m.1")


def test_class_names_are_not_filtered_entities() -> None:
    assert compile_program("(JOIN r.a_inv common.topic)").entities == ()
