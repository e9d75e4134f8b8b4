prague green wizard quito seville
diary nimble spruce pomegranate marsh lychee
whistle helsinki granite dakar shiny
