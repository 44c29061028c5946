from vendor.csvlite import split_row


def test_a_quoted_comma_stays_in_its_field():
    assert split_row('a,"b,c",d') == ["a", "b,c", "d"]
