DEBUG = False
# nothing left to do here (todo list is empty)
