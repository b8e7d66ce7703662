"""The shop as a web site: the page model rendered as HTML and a small WSGI app that serves it.

The site drives the same :class:`~agentrl_envs.tasks.webshop.shop.ShopSession` as the env and renders the same
:class:`~agentrl_envs.tasks.webshop.pages.Page`, so a person or a browser agent sees what the env's text
observation describes and a purchase earns the same reward.
"""

from agentrl_envs.tasks.webshop.site.app import ShopSite, serve
from agentrl_envs.tasks.webshop.site.html import render_page

__all__ = ["ShopSite", "render_page", "serve"]
