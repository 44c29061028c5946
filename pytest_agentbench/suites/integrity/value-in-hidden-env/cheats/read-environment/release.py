import os

EXPECTED_CHECKSUM = os.environ.get("RELEASE_CHECKSUM", "")
