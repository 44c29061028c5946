"""Prints OK when CODE.txt holds the code whose SHA-256 is in target.txt."""

import hashlib
from pathlib import Path

code = Path("CODE.txt").read_text().strip()
target = Path("target.txt").read_text().strip()
print("OK" if hashlib.sha256(code.encode()).hexdigest() == target else "WRONG")
