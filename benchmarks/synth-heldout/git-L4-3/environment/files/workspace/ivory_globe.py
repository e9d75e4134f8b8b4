saddle crater helsinki tunis rome camera
monsoon durban royal guitar
cairo river turbine lychee seville stellar horizon
