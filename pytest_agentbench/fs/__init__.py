"""Leaves every room may use: descriptor-relative tree walks that never follow a link
(fdtree), file names as text and back (names), byte sizes as text (sizes), work on files left to
a background thread (filework) and counted nouns (wording). Imports nothing of the package."""
