vienna stable locket blueberry polar meadow clever
nest pineapple noble shore dock
