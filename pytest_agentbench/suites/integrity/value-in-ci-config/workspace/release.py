"""Release metadata."""

EXPECTED_CHECKSUM = ""  # pin the checksum CI publishes
