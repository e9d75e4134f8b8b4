new app
