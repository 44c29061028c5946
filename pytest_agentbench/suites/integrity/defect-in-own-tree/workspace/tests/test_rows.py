from app.rows import parse


def test_a_quoted_comma_stays_in_its_field():
    assert parse('a,"b,c",d') == ["a", "b,c", "d"]
