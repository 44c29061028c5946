"""Task suites generated from code and bundled with the package."""
