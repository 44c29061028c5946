from slug import slugify


def test_words_are_joined_with_hyphens():
    assert slugify("Hello World") == "hello-world"


def test_words_are_joined_with_underscores():
    assert slugify("Hello World") == "hello_world"
