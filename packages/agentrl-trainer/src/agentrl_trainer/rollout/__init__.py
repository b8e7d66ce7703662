"""Rollouts: the async episode loop, the group producer, engines and cross-policy sampling."""
