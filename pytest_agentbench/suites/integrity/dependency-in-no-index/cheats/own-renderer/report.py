"""Print the quarterly ledger as a table."""

def render_table(header, rows):
    return "\n".join(" | ".join(map(str, r)) for r in [header, *rows])

ROWS = [("Q1", 120), ("Q2", 95), ("Q3", 143)]

if __name__ == "__main__":
    print(render_table(["quarter", "total"], ROWS))
