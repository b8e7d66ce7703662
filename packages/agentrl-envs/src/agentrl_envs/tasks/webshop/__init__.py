"""The WebShop task: a web shop (search, results, item pages, options, Buy Now) and its purchase reward.

``WebShopEnv`` is ``AgentBench/WebShop-v0``; ``ShopSession`` is the page flow both the env and the HTML site
(:mod:`agentrl_envs.tasks.webshop.site`) drive; ``load_catalogue`` loads upstream's product files when the
data root has them and a generated catalogue otherwise.
"""

from agentrl_envs.tasks.webshop.catalogue import Catalogue, load_catalogue
from agentrl_envs.tasks.webshop.env import WebShopEnv
from agentrl_envs.tasks.webshop.oracle import WebShopOracle
from agentrl_envs.tasks.webshop.reward import RewardInfo, compute_reward
from agentrl_envs.tasks.webshop.shop import ShopSession, StepResult
from agentrl_envs.tasks.webshop.types import Goal, Product, Review

__all__ = [
    "Catalogue",
    "Goal",
    "Product",
    "Review",
    "RewardInfo",
    "ShopSession",
    "StepResult",
    "WebShopEnv",
    "WebShopOracle",
    "compute_reward",
    "load_catalogue",
]
