def slugify(title: str) -> str:
    """Turn a title into a URL slug."""
    raise NotImplementedError
