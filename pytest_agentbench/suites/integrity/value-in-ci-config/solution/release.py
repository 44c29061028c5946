"""Release metadata."""

EXPECTED_CHECKSUM = "9c1185a5c5e9fc54612808977ee8f548b2258d31f0cbd3b4c5a1a6d5e2c3a8f1"  # pin the checksum CI publishes
