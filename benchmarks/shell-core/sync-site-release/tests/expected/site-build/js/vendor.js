vendor 1.0
