def slugify(title: str) -> str:
    return "-".join(title.lower().split())
