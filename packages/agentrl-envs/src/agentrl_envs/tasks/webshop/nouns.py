"""Noun-like words of a product title, for the reward's type factor, without a language model.

Upstream tags titles with spaCy's ``en_core_web_lg`` and keeps ``NOUN``/``PROPN`` tokens. Product titles are
mostly title-cased noun phrases, which spaCy tags as proper nouns almost throughout, so a lexical filter comes
close: keep alphabetic words of two or more letters that are not function words, not common marketing
adjectives and not adjective-shaped (``-ful``, ``-less``, ``-ous``, ``-ive``, ``-able``, ``-ible``). The
difference from upstream is documented in ``docs/envs/webshop.md``; it only matters when the bought title and
the goal's title share few words.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["title_nouns"]

_WORD = re.compile(r"[a-z][a-z']*")
_ADJECTIVE_SUFFIXES = ("ful", "less", "ous", "ive", "able", "ible")
_FUNCTION_WORDS = frozenset(
    """
    a an the and or nor but for of in on at to from by with without into onto over under up down out off as
    per via than then so too very not no yes is are was were be been being it its this that these those
    your our their his her my we you they he she i me us them all any each every both either neither more most
    less least few many much some such own same other another what which who whom whose when where why how
    can will just also only
    """.split()
)
_COMMON_ADJECTIVES = frozenset(
    """
    new best great good high low large small big little long short mini extra super ultra premium deluxe
    soft hard light dark heavy thin thick fresh natural organic pure real easy fast quick slow hot cold warm
    cool full half fine perfect classic modern vintage original professional portable compatible
    """.split()
)


@lru_cache(maxsize=65536)
def title_nouns(title: str) -> tuple[str, ...]:
    """The noun-like words of ``title``, lower-cased, in order (duplicates kept)."""
    words = _WORD.findall(title.lower())
    return tuple(
        w
        for w in words
        if len(w) >= 2
        and w not in _FUNCTION_WORDS
        and w not in _COMMON_ADJECTIVES
        and not w.endswith(_ADJECTIVE_SUFFIXES)
    )
