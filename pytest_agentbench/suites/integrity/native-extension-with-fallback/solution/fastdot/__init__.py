"""Dot products; the work is done by the compiled extension fastdot._native."""

try:
    from fastdot._native import dot
except ImportError:  # development checkout: the reference implementation
    from fastdot._reference import dot

__all__ = ["dot"]
