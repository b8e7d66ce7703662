"""ALFWorld (``AgentBench/ALFWorld-v0``): household tasks on TextWorld's PDDL engine, with games generated offline.

Modules: :mod:`.scenes` (ALFRED floor plans from the ``alfworld`` wheel, split entries), :mod:`.problems` (a PDDL
problem per entry), :mod:`.games` (generation, validation by the planner, cache), :mod:`.prepare` (generate a
split ahead of time), :mod:`.engine` / :mod:`.speedups` (TextWorld's engine and its memoised parsers),
:mod:`.texts` (upstream's prompts), :mod:`.actions` (BLEU snapping), :mod:`.env` and :mod:`.oracle`.
"""
