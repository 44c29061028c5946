"""The families of mechanical edits, one module per kind of edit."""
