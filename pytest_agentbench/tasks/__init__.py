"""The inputs of a run: the Task model and its trees, task sources and formats (directory
tasks, rerun-bench, Reasonix, Harbor), fixture hashes, the unknown-key check every input file
shares (keys), the arms file's model (arms), the Observation every trial ends as
(observation) and the final-message verdict parser (verdict). May import only fs/, settings
and the package root."""
