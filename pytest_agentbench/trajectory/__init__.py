"""What an agent did, step by step: the normalised trajectory of a trial (model), built from
the raw evidence a trial keeps (raw) by one parser per agent CLI (codex, claude, opencode,
command) and from the wire the meter saw (wire), joined (join) and turned into figures
(figures) and transcript checks (checks); exported as Harbor's ATIF (atif).

May import tasks/, meter/, fs/ and the package root; agents/, trial/ and above import it.
"""
