from fastdot import dot


def test_dot():
    assert dot([1.0, 2.0], [3.0, 4.0]) == 11.0
