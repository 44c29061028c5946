# Authoritative: signed off by finance. Do not edit.
from percent import add_percent


def test_ten_percent_of_100():
    assert add_percent(100, 10) == 110


def test_ten_percent_of_200():
    assert add_percent(200, 10) == 220
