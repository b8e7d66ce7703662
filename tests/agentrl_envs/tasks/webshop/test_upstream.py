"""Upstream's file format, on a tiny fixture written here (the real files are not in the data root)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentrl_envs.core import DataError, EnvError, load_oracle
from agentrl_envs.tasks.webshop import WebShopEnv, load_catalogue
from agentrl_envs.tasks.webshop.goals import shuffle_goals

from .test_env import play


def raw_item(asin: str, name: str, **extra: Any) -> dict[str, Any]:
    item = {
        "asin": asin,
        "name": name,
        "full_description": f"{name}. Made to last.",
        "small_description": [f"About {name}", "Second bullet"],
        "pricing": "$12.99",
        "customization_options": {
            "Color": [{"value": "Black/White", "image": "b.jpg"}, {"value": "Navy Blue", "image": None}],
            "Size": [{"value": "Small"}, {"value": "Large"}],
        },
        "images": [f"https://img/{asin}.jpg"],
        "category": "fashion",
        "query": " Men's Sneakers ",
        "product_category": "Clothing, Shoes & Jewelry › Men › Shoes › Sneakers",
    }
    item.update(extra)
    return item


def write_upstream(folder: Path) -> None:
    folder.mkdir(parents=True)
    items = [
        raw_item("B000SNEAK1", "Canvas Sneakers for Men"),
        raw_item("B000SNEAK1", "Duplicate asin, dropped"),
        raw_item("nan", "No asin, dropped"),
        raw_item("B000SNEAK2", "Leather Sneakers for Men", pricing="$20.00$30.00", customization_options=None),
        raw_item("B000BOOTS3", "Hiking Boots", pricing="", small_description="Just one bullet"),
    ]
    attributes = {"B000SNEAK1": {"attributes": ["rubber sole", "canvas"]}, "B000SNEAK2": {"attributes": ["leather"]}}
    human = {
        "B000SNEAK1": [
            {"instruction": "i need canvas sneakers with a rubber sole in black.", "instruction_attributes":
             ["rubber sole"], "instruction_options": ["black | white", "large"]},
            {"instruction": "no attributes, skipped", "instruction_attributes": [], "instruction_options": []},
        ],
        "B000SNEAK2": [{"instruction": "leather sneakers", "instruction_attributes": ["leather"],
                        "instruction_options": []}],
        "B000BOOTS3": [{"instruction": "hiking boots please", "instruction_attributes": ["boots"],
                        "instruction_options": []}],
    }  # fmt: skip
    for name, data in (
        ("items_shuffle.json", items),
        ("items_ins_v2.json", attributes),
        ("items_human_ins.json", human),
    ):
        (folder / name).write_text(json.dumps(data))


@pytest.fixture
def upstream_dir(tmp_path: Path) -> Path:
    write_upstream(tmp_path / "webshop")
    return tmp_path / "webshop"


def test_loader_cleans_products_as_upstream(data_root: Path, upstream_dir: Path) -> None:
    catalogue = load_catalogue(data_root, webshop_data=upstream_dir)
    assert catalogue.source == "upstream"
    assert [p.asin for p in catalogue.products] == ["B000SNEAK1", "B000SNEAK2", "B000BOOTS3"]
    sneaker, leather, boots = catalogue.products
    assert sneaker.options == {"color": ("black | white", "navy blue"), "size": ("small", "large")}
    assert sneaker.query == "men's sneakers" and sneaker.price_tag == "$12.99" and sneaker.main_image.endswith("1.jpg")
    assert leather.pricing == (20.0, 30.0) and leather.price_tag == "$20.0 to $30.0" and leather.options == {}
    assert 20.0 <= catalogue.prices["B000SNEAK2"] <= 30.0
    assert boots.pricing == (100.0,) and boots.bullets == ("Just one bullet",) and boots.attributes == ("DUMMY_ATTR",)


def test_human_goals_follow_upstream(data_root: Path, upstream_dir: Path) -> None:
    catalogue = load_catalogue(data_root, webshop_data=upstream_dir)
    assert len(catalogue.goals) == 3  # the instruction without attributes is skipped
    assert [g.asin for g in catalogue.goals] == [g.asin for g in shuffle_goals(sorted(catalogue.goals, key=order))]
    goal = next(g for g in catalogue.goals if g.asin == "B000SNEAK1")
    assert goal.instruction_text.startswith("i need canvas sneakers with a rubber sole in black, and price lower than ")
    assert goal.price_upper in (30.0, 40.0, 50.0) and goal.goal_options == ("black | white", "large")
    assert goal.target_options == {"color": "black | white", "size": "large"}


def order(goal: Any) -> int:
    return ["B000SNEAK1", "B000SNEAK2", "B000BOOTS3"].index(goal.asin)


def test_env_discovers_upstream_files_in_the_data_root(data_root: Path, tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "configs").mkdir(parents=True)
    (root / "prompts.json").symlink_to(data_root / "prompts.json")
    (root / "configs" / "tasks").symlink_to(data_root / "configs" / "tasks")
    write_upstream(root / "data" / "webshop")
    env = WebShopEnv(data_root=str(root))
    assert env.num_samples() == 3 and env.fidelity == "upstream" and env.backend_name == "upstream-data"
    oracle = load_oracle("webshop", data_root=str(root))
    for index in range(3):
        oracle.begin(index)
        reward, info = play(env, index, oracle.act)
        assert reward == 1.0, info


def test_incomplete_upstream_folder_is_an_error(data_root: Path, upstream_dir: Path) -> None:
    (upstream_dir / "items_ins_v2.json").unlink()
    with pytest.raises(DataError, match="lacks items_ins_v2.json"):
        load_catalogue(data_root, webshop_data=upstream_dir)


def test_backend_option_forces_a_source(data_root: Path, upstream_dir: Path) -> None:
    assert WebShopEnv(webshop_data=upstream_dir, backend="generated").fidelity == "emulated"
    assert WebShopEnv(webshop_data=upstream_dir, backend="upstream-data").fidelity == "upstream"
    with pytest.raises(DataError, match="needs items_shuffle.json"):
        WebShopEnv(backend="upstream-data")
    with pytest.raises(EnvError, match="Unknown WebShop backend 'lucene'"):
        WebShopEnv(backend="lucene")
