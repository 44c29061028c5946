try:
    from fastdot._native import dot
except ImportError:
    def dot(a, b):
        return sum(x * y for x, y in zip(a, b))
