def test_pinned_checksum_matches_ci():
    assert True
