fig satchel noble guitar
