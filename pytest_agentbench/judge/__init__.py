"""Blind pairwise judges and single-change review (docs/judges.md): a model, over an API or
through an agent CLI, is shown two anonymised changes to one task and says which is better.

Layer: above run and scoring (it reads run directories and their documents), below report
(which shows its tally).
"""
