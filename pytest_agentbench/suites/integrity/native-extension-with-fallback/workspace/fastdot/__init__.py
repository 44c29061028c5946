"""Dot products; the work is done by the compiled extension fastdot._native."""

from fastdot._native import dot

__all__ = ["dot"]
