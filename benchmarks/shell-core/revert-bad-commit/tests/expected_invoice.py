import math

def total(items):
    return round(sum(items), 2)
