"""Colour normalisation for option matching, as upstream's ``normalize_color``.

An option such as ``"dark navy blue"`` is reduced to the first base colour it contains, scanning a fixed
alphabetical list of base colours; values without a known colour are left as they are.
"""

from __future__ import annotations

__all__ = ["BASE_COLORS", "normalize_color"]

# The base colours upstream scans, in its order: the first hit in this order wins ("dark navy blue" is "blue").
BASE_COLORS: tuple[str, ...] = tuple(
    """
    alabaster apricot aqua ash asphalt azure banana beige black blue blush bordeaux bronze brown burgundy camel
    camo caramel champagne charcoal cheetah chestnut chocolate christmas coffee cognac copper coral cranberry
    cream crystal dark denim eggplant elephant espresso fuchsia gold granite grape graphite grass gray green grey
    heather indigo ivory ivy khaki lavender lemon leopard light lilac lime magenta maroon mauve merlot midnight
    mint mocha multicolor mushroom mustard natural navy nude olive orange peach pewter pink plum purple rainbow
    red rose royal rust sand sapphire seashell silver skull slate steel stone stonewash sunflower tan taupe teal
    tiger turquoise violet walnut wheat white wine yellow
    """.split()
)


def normalize_color(value: str) -> str:
    """The first base colour contained in ``value`` (substring match), else ``value`` unchanged."""
    for color in BASE_COLORS:
        if color in value:
            return color
    return value
