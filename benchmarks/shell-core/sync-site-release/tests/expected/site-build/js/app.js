app v2
