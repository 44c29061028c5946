def render_table(header, rows):
    return "\n".join(" | ".join(map(str, r)) for r in [header, *rows])
