"""Word lists the catalogue generator draws from: upstream's five categories and their product types.

Each product type names the search query it is "scraped" under (upstream's ``query``), its breadcrumb, the
head noun its titles and instructions use, its options, and attribute phrases of the kind upstream mined
from real listings. Types in one category share a pool of attributes, so near-duplicates across types exist.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BRANDS", "CATEGORIES", "CATEGORY_ATTRIBUTES", "COLORS", "ProductType"]


@dataclass(frozen=True, slots=True)
class ProductType:
    """One kind of product: what it is called, where it sits and what can be chosen."""

    category: str
    query: str
    breadcrumb: str
    head: str
    """Title-case head noun phrase used in titles (``Deodorant``)."""
    options: dict[str, tuple[str, ...]]
    attributes: tuple[str, ...]
    price_range: tuple[float, float]
    descriptors: tuple[str, ...]
    """Title words placed before the head (``Natural``, ``Roll-On``)."""


COLORS = (
    "black", "white", "navy blue", "light grey", "dark grey", "red", "burgundy", "beige", "khaki", "olive green",
    "pink", "rose gold", "silver", "brown", "coffee", "ivory", "teal", "purple", "yellow", "orange", "mint green",
    "charcoal", "royal blue", "wine red", "champagne", "espresso", "walnut",
)  # fmt: skip
CLOTHING_SIZES = ("x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large")
SHOE_SIZES = ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12")
PACKS = ("pack of 1", "pack of 2", "pack of 3", "pack of 4", "pack of 6", "pack of 12")
OUNCES = ("1.7 ounce", "3 ounce", "3.4 fl oz", "4 ounce", "6 ounce", "8 ounce", "12 ounce", "16 ounce")

BRANDS = (
    "Aurelia", "Bexley", "Brightvale", "Cedarline", "Corvo", "Dalston", "Elmwood", "Everly", "Fennick", "Glimmer",
    "Harlow & Finch", "Hollis", "Ironbark", "Juniper Lane", "Kestrel", "Larkspur", "Lumina", "Maple & Moss",
    "Meridian", "Northwind", "Oakhurst", "Orla", "Pinecrest", "Quill", "Redwood Co.", "Saffron", "Silverleaf",
    "Solace", "Sterling Row", "Tamsin", "Thistle", "Umbra", "Vantage", "Verona", "Westbrook", "Willow & Wren",
    "Yarrow", "Zephyr", "Nimbus", "Tideline",
)  # fmt: skip

CATEGORY_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "beauty": (
        "long lasting", "cruelty free", "paraben free", "natural ingredients", "easy to use", "sensitive skin",
        "travel size", "high quality", "alcohol free", "dermatologist tested", "fragrance free", "dry skin",
    ),
    "food": (
        "gluten free", "non gmo", "low sugar", "keto friendly", "individually wrapped", "high protein", "low carb",
        "sugar free", "plant based", "ready to eat", "natural flavors", "resealable bag",
    ),
    "fashion": (
        "machine wash", "long sleeve", "short sleeve", "slim fit", "quality materials", "button closure",
        "elastic waistband", "daily wear", "moisture wicking", "hand wash", "relaxed fit", "soft material",
    ),
    "furniture": (
        "easy assemble", "solid wood", "living room", "storage space", "wood finish", "space saving", "metal legs",
        "high density foam", "bedroom furniture", "easy clean", "mid century", "non slip",
    ),
    "electronics": (
        "high definition", "fast charging", "noise cancelling", "easy install", "usb port", "wireless bluetooth",
        "long battery life", "plug and play", "high speed", "water resistant", "aluminum alloy", "hands free",
    ),
}  # fmt: skip


def _t(
    category: str,
    query: str,
    breadcrumb: str,
    head: str,
    options: dict[str, tuple[str, ...]],
    attributes: tuple[str, ...],
    price_range: tuple[float, float],
    descriptors: tuple[str, ...],
) -> ProductType:
    return ProductType(category, query, breadcrumb, head, options, attributes, price_range, descriptors)


_BEAUTY = "Beauty & Personal Care"
_FOOD = "Grocery & Gourmet Food"
_FASHION = "Clothing, Shoes & Jewelry"
_FURNITURE = "Home & Kitchen › Furniture"
_ELECTRONICS = "Electronics"

CATEGORIES: tuple[ProductType, ...] = (
    # beauty
    _t("beauty", "deodorant", f"{_BEAUTY} › Personal Care › Deodorants & Antiperspirants › Deodorant", "Deodorant",
       {"scent": ("bright citrus", "calming lavender", "unscented", "fresh cucumber", "coconut vanilla", "sea salt"),
        "size": OUNCES[:5]},
       ("aluminum free", "baking soda free", "vegan"), (6.0, 24.0), ("Natural", "Roll-On", "Stick", "Clinical")),
    _t("beauty", "hair extensions", f"{_BEAUTY} › Hair Care › Hair Extensions, Wigs & Accessories › Extensions",
       "Hair Extensions", {"color": ("natural black", "dark brown", "ash blonde", "honey blonde", "burgundy"),
                           "size": ("14 inch", "16 inch", "18 inch", "20 inch", "22 inch")},
       ("clip in", "human hair", "straight hair", "heat resistant"), (18.0, 90.0),
       ("Clip-In", "Seamless", "Tape-In", "Remy")),
    _t("beauty", "face moisturizer", f"{_BEAUTY} › Skin Care › Face › Creams & Moisturizers › Face Moisturizers",
       "Face Moisturizer", {"size": ("1.7 ounce", "2 fl oz", "3.4 fl oz", "pack of 2")},
       ("hyaluronic acid", "oil free", "anti aging", "spf 30"), (9.0, 48.0), ("Hydrating", "Daily", "Night", "Gel")),
    _t("beauty", "lipstick", f"{_BEAUTY} › Makeup › Lips › Lipstick", "Lipstick",
       {"color": ("ruby red", "nude pink", "berry wine", "coral", "mauve", "plum")},
       ("matte finish", "waterproof", "moisturizing"), (5.0, 28.0), ("Matte", "Satin", "Liquid", "Velvet")),
    _t("beauty", "nail polish", f"{_BEAUTY} › Foot, Hand & Nail Care › Nail Art & Polish › Nail Polish",
       "Nail Polish", {"color": ("cherry red", "baby pink", "midnight blue", "lilac", "gold glitter", "white"),
                       "size": ("pack of 1", "pack of 3", "pack of 6")},
       ("quick dry", "long wear", "chip resistant", "non toxic"), (4.0, 22.0), ("Gel", "Quick-Dry", "Glossy")),
    _t("beauty", "shampoo", f"{_BEAUTY} › Hair Care › Shampoo & Conditioner › Shampoos", "Shampoo",
       {"scent": ("tea tree", "argan oil", "coconut", "rosemary mint", "unscented"), "size": OUNCES[3:]},
       ("sulfate free", "color safe", "dandruff control", "curly hair"), (7.0, 36.0),
       ("Volumizing", "Clarifying", "Moisture", "Repair")),
    # food
    _t("food", "protein bars", f"{_FOOD} › Snack Foods › Bars › Protein Bars", "Protein Bars",
       {"flavor name": ("chocolate peanut butter", "cookies and cream", "birthday cake", "salted caramel",
                        "almond coconut"), "size": ("12 count", "15 count", "24 count")},
       ("whey protein", "no artificial sweeteners", "soy free"), (14.0, 45.0), ("Crispy", "Chewy", "Baked")),
    _t("food", "coffee beans", f"{_FOOD} › Beverages › Coffee, Tea & Cocoa › Coffee › Whole Coffee Beans",
       "Whole Bean Coffee", {"flavor name": ("dark roast", "medium roast", "light roast", "french vanilla", "decaf"),
                             "size": ("12 ounce", "1 pound", "2 pound", "5 pound")},
       ("single origin", "fair trade", "arabica beans", "small batch"), (9.0, 55.0),
       ("Colombian", "Ethiopian", "Espresso", "Breakfast Blend")),
    _t("food", "herbal tea", f"{_FOOD} › Beverages › Coffee, Tea & Cocoa › Tea › Herbal", "Herbal Tea",
       {"flavor name": ("chamomile", "peppermint", "ginger lemon", "hibiscus", "rooibos"),
        "size": ("20 count", "40 count", "100 count", "pack of 6")},
       ("caffeine free", "tea bags", "usda organic"), (4.0, 30.0), ("Calming", "Detox", "Sleepytime", "Loose")),
    _t("food", "beef jerky", f"{_FOOD} › Snack Foods › Jerky & Dried Meats › Jerky", "Beef Jerky",
       {"flavor name": ("original", "teriyaki", "peppered", "sweet and spicy", "hickory smoked"),
        "size": ("2.85 ounce", "3.25 ounce", "10 ounce", "pack of 8")},
       ("grass fed", "zero sugar", "high protein"), (6.0, 40.0), ("Thick-Cut", "Tender", "Smoked")),
    _t("food", "olive oil", f"{_FOOD} › Pantry Staples › Cooking Oils › Olive Oils", "Extra Virgin Olive Oil",
       {"size": ("16.9 fl oz", "25.5 fl oz", "33.8 fl oz", "1 gallon")},
       ("cold pressed", "first cold extraction", "glass bottle"), (8.0, 60.0), ("Italian", "Greek", "Spanish")),
    _t("food", "dark chocolate", f"{_FOOD} › Snack Foods › Candy & Chocolate › Chocolate Bars", "Dark Chocolate",
       {"flavor name": ("sea salt", "almond", "raspberry", "orange", "85% cacao"),
        "size": ("pack of 4", "pack of 10", "pack of 12")},
       ("dairy free", "fair trade", "low calorie"), (7.0, 42.0), ("Gourmet", "Artisan", "Belgian")),
    # fashion
    _t("fashion", "men's t-shirt", f"{_FASHION} › Men › Clothing › Shirts › T-Shirts", "T-Shirt",
       {"color": COLORS[:12], "size": CLOTHING_SIZES},
       ("cotton spandex", "crew neck", "regular fit"), (8.0, 35.0), ("Men's", "Basic", "Athletic", "Pocket")),
    _t("fashion", "women's dress", f"{_FASHION} › Women › Clothing › Dresses › Casual", "Dress",
       {"color": COLORS[4:18], "size": CLOTHING_SIZES[:6]},
       ("v neck", "flowy", "pockets", "knee length"), (16.0, 60.0), ("Women's", "Summer", "Wrap", "Midi")),
    _t("fashion", "running shoes", f"{_FASHION} › Men › Shoes › Athletic › Running", "Running Shoes",
       {"color": COLORS[:10], "size": SHOE_SIZES},
       ("rubber sole", "breathable mesh", "arch support", "lightweight"), (25.0, 120.0),
       ("Men's", "Trail", "Road", "Cushioned")),
    _t("fashion", "yoga pants", f"{_FASHION} › Women › Clothing › Active › Leggings", "Yoga Pants",
       {"color": COLORS[:14], "size": CLOTHING_SIZES[:6]},
       ("high waist", "tummy control", "four way stretch", "squat proof"), (12.0, 48.0),
       ("Women's", "Buttery Soft", "Workout", "Flare")),
    _t("fashion", "winter jacket", f"{_FASHION} › Men › Clothing › Jackets & Coats › Down & Parkas", "Winter Jacket",
       {"color": COLORS[:10], "size": CLOTHING_SIZES},
       ("water resistant", "detachable hood", "zipper closure", "fleece lined"), (35.0, 160.0),
       ("Men's", "Puffer", "Insulated", "Hooded")),
    _t("fashion", "baseball cap", f"{_FASHION} › Men › Accessories › Hats & Caps › Baseball Caps", "Baseball Cap",
       {"color": COLORS[:16], "size": ("one size", "small-medium", "large-x-large")},
       ("adjustable strap", "cotton twill", "curved brim"), (8.0, 30.0), ("Classic", "Dad", "Trucker", "Unisex")),
    # furniture
    _t("furniture", "coffee table", f"{_FURNITURE} › Living Room Furniture › Tables › Coffee Tables", "Coffee Table",
       {"color": ("walnut", "espresso", "rustic brown", "white oak", "black"),
        "size": ("36 inch", "42 inch", "47 inch")},
       ("lift top", "hidden compartment", "tempered glass"), (60.0, 260.0), ("Round", "Rectangular", "Farmhouse")),
    _t("furniture", "office chair", f"{_FURNITURE} › Home Office Furniture › Home Office Chairs › Desk Chairs",
       "Office Chair", {"color": ("black", "grey", "white", "blue", "pink")},
       ("lumbar support", "adjustable height", "breathable mesh", "swivel"), (45.0, 240.0),
       ("Ergonomic", "Executive", "Task", "High Back")),
    _t("furniture", "bookshelf", f"{_FURNITURE} › Home Office Furniture › Bookcases", "Bookshelf",
       {"color": ("rustic brown", "white", "black", "vintage oak"), "size": ("3 tier", "4 tier", "5 tier")},
       ("industrial style", "open shelves", "anti tip"), (35.0, 180.0), ("Ladder", "Corner", "Tall", "Cube")),
    _t("furniture", "bed frame", f"{_FURNITURE} › Bedroom Furniture › Beds, Frames & Bases › Bed Frames",
       "Bed Frame", {"color": ("black", "grey", "white", "dark walnut"), "size": ("twin", "full", "queen", "king")},
       ("no box spring needed", "under bed storage", "upholstered headboard"), (90.0, 420.0),
       ("Platform", "Metal", "Upholstered", "Wooden")),
    _t("furniture", "bar stools", f"{_FURNITURE} › Kitchen & Dining Room Furniture › Bar Stools", "Bar Stools",
       {"color": ("black", "grey", "cream", "brown"), "size": ("24 inch", "26 inch", "30 inch", "set of 2")},
       ("counter height", "footrest", "pu leather"), (40.0, 200.0), ("Swivel", "Backless", "Modern")),
    _t("furniture", "tv stand", f"{_FURNITURE} › Living Room Furniture › TV & Media Furniture › TV Stands",
       "TV Stand", {"color": ("black", "white", "rustic oak", "walnut"), "size": ("55 inch", "65 inch", "70 inch")},
       ("cable management", "led lights", "adjustable shelves"), (55.0, 280.0),
       ("Entertainment Center", "Media Console", "Low Profile")),
    # electronics
    _t("electronics", "bluetooth headphones", f"{_ELECTRONICS} › Headphones, Earbuds & Accessories › Headphones",
       "Bluetooth Headphones", {"color": ("black", "white", "navy blue", "rose gold", "silver")},
       ("over ear", "built in microphone", "foldable design"), (19.0, 150.0),
       ("Over-Ear", "Wireless", "Studio", "Sport")),
    _t("electronics", "phone charger", f"{_ELECTRONICS} › Cell Phones & Accessories › Chargers & Power Adapters",
       "Phone Charger", {"color": ("black", "white"), "size": ("1 pack", "2 pack", "3 pack"),
                         "style": ("usb c", "lightning", "dual port")},
       ("20w pd", "short circuit protection", "compact design"), (7.0, 35.0), ("Wall", "Car", "Fast", "GaN")),
    _t("electronics", "hdmi cable", f"{_ELECTRONICS} › Computers & Accessories › Cables & Accessories › Cables",
       "HDMI Cable", {"size": ("3 feet", "6 feet", "10 feet", "15 feet", "25 feet"), "style": ("2.0", "2.1")},
       ("4k 60hz", "braided cable", "gold plated"), (5.0, 28.0), ("High Speed", "Ultra", "Braided", "8K")),
    _t("electronics", "security camera", f"{_ELECTRONICS} › Camera & Photo › Video Surveillance › Cameras",
       "Security Camera", {"size": ("1 camera", "2 cameras", "4 cameras"), "style": ("indoor", "outdoor")},
       ("night vision", "motion detection", "two way audio", "1080p hd"), (22.0, 180.0),
       ("WiFi", "Outdoor", "Solar", "Pan-Tilt")),
    _t("electronics", "portable speaker", f"{_ELECTRONICS} › Portable Audio & Video › Portable Speakers",
       "Portable Speaker", {"color": ("black", "blue", "red", "camo green", "grey")},
       ("ipx7 waterproof", "stereo sound", "deep bass"), (18.0, 130.0), ("Bluetooth", "Rugged", "Mini", "Party")),
    _t("electronics", "laptop sleeve", f"{_ELECTRONICS} › Computers & Accessories › Laptop Accessories › Bags",
       "Laptop Sleeve", {"color": ("black", "grey", "navy blue", "pink", "teal"),
                         "size": ("13 inch", "14 inch", "15.6 inch", "17 inch")},
       ("shock resistant", "water repellent", "accessory pocket"), (9.0, 40.0), ("Slim", "Padded", "Felt", "Leather")),
)  # fmt: skip
