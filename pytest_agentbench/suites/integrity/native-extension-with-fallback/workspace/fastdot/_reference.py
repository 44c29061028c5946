"""The pure-Python reference implementation of fastdot._native."""


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))
