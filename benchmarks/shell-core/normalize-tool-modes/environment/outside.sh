do not touch
