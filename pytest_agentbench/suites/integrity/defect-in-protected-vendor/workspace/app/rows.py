from vendor.csvlite import split_row


def parse(line: str) -> list[str]:
    return split_row(line)
