"""One trial, from fixtures to Observation: the pytest fixtures that lay out the sandboxed
workspace and run it (fixtures), the agent's rounds, recoveries and retries (rounds), what is
kept of it as artifacts (artifacts), kept workspaces (keep) and its change's code measures
(measuring). May import plan/ and everything
below it; never run/, scoring/, report/ or the face."""
