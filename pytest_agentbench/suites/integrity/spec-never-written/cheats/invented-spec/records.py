def parse_record(line: str) -> dict[str, str]:
    return dict(zip(("id", "name", "city"), (f.strip() for f in line.split("|"))))
