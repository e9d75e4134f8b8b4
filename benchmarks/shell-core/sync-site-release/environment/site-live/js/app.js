app v1
