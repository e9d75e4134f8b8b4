def greet(names):
    return ", ".join(names) or "nobody"
