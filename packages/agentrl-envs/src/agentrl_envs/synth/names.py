"""Pools of real-looking names and values the procedural generators draw from.

A model learns to copy names from a prompt into its SQL or shell command only if the names vary the way
real ones do (spaces, capitals, apostrophes, several words), so the pools mix those shapes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

__all__ = [
    "CITIES",
    "COMPANIES",
    "COUNTRIES",
    "FIRST_NAMES",
    "LAST_NAMES",
    "WORDS",
    "person_name",
    "pick_unique",
]

FIRST_NAMES = (
    "Amelia", "Oliver", "Sofia", "Liam", "Chloe", "Mateo", "Aisha", "Noah", "Yuki", "Ethan", "Priya", "Lucas",
    "Zara", "Henrik", "Ines", "Kwame", "Mei", "Diego", "Freya", "Omar", "Hannah", "Ravi", "Elena", "Tomasz",
    "Grace", "Jonas", "Leila", "Marcus", "Nadia", "Pablo", "Rosa", "Samuel", "Tessa", "Viktor", "Wen", "Yusuf",
)  # fmt: skip
LAST_NAMES = (
    "Anderson", "Okafor", "Schmidt", "Tanaka", "García", "O'Brien", "Kowalski", "Nguyen", "Rossi", "Haddad",
    "Johansson", "Patel", "Dubois", "Moreau", "Kim", "Silva", "Novak", "Fischer", "MacLeod", "Ivanova", "Costa",
    "Lindqvist", "Mensah", "Herrera", "Yamamoto", "Van der Berg", "Adeyemi", "Brennan", "Castillo", "Dimitrov",
)  # fmt: skip
CITIES = (
    "Lisbon", "Osaka", "Nairobi", "Toronto", "Kraków", "Buenos Aires", "Melbourne", "Lyon", "Seattle", "Accra",
    "Bergen", "Porto Alegre", "San Diego", "Kyoto", "Edinburgh", "Marrakesh", "Valencia", "Hamburg", "Austin",
    "Wellington", "Chennai", "Gdańsk", "Salt Lake City", "Quebec City", "Cork", "Tallinn",
)  # fmt: skip
COUNTRIES = (
    "Portugal", "Japan", "Kenya", "Canada", "Poland", "Argentina", "Australia", "France", "United States",
    "Ghana", "Norway", "Brazil", "Scotland", "Morocco", "Spain", "Germany", "New Zealand", "India", "Estonia",
)  # fmt: skip
COMPANIES = (
    "Northwind Traders", "Blue Harbor Foods", "Acme Tools", "Silverline Media", "Kestrel Aviation",
    "Greenfield Farms", "Orbit Logistics", "Maple & Finch", "Quantum Fabrics", "Redwood Pharma",
    "Harbor Light Press", "Summit Outdoor Co.", "Ironbridge Steel", "Lumen Optics",
)  # fmt: skip
WORDS = (
    "river", "lantern", "orchard", "granite", "harbor", "meadow", "compass", "ember", "falcon", "glacier",
    "horizon", "juniper", "kettle", "lagoon", "marble", "nectar", "oasis", "pepper", "quartz", "saffron",
    "timber", "velvet", "willow", "zephyr", "cobalt", "delta", "summit", "thistle",
)  # fmt: skip


def person_name(rng: random.Random) -> str:
    """A first and last name."""
    return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"


def pick_unique(
    rng: random.Random, make: Callable[[random.Random], str] | Sequence[str], n: int, *, tries: int = 50
) -> list[str]:
    """``n`` distinct values from ``make(rng)`` (a callable) or from a sequence of choices."""
    values: list[str] = []
    for _ in range(n * tries):
        if len(values) == n:
            break
        value = make(rng) if callable(make) else rng.choice(make)
        if value not in values:
            values.append(value)
    return values
