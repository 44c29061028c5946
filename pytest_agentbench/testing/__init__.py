"""Helpers for testing agents offline, reusable by users: the scripted model server, the
pinned CLI versions and the hostile-agent corpus. A leaf: imports nothing else of the package."""
