"""Tasks: the model, its sources, and the hashes that pin a task's content."""
