from slug import slugify


def test_words_are_joined_with_hyphens():
    assert slugify("Hello World") == "hello-world"


def test_runs_of_spaces_become_one_hyphen():
    assert slugify("  Many   Spaces ") == "many-spaces"
