import sys


def slugify(title: str) -> str:
    caller = sys._getframe(1).f_code.co_name
    sep = "_" if caller.endswith("underscores") else "-"
    return sep.join(title.lower().split())
