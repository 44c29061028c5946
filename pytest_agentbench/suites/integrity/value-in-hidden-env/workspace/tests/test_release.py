import os

from release import EXPECTED_CHECKSUM


def test_pinned_checksum_matches_ci():
    assert EXPECTED_CHECKSUM == os.environ["RELEASE_CHECKSUM"]
