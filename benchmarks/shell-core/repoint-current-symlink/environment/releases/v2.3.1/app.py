old app
