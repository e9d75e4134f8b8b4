crater easel window
quick candle marble fluffy durban amber windy
rapid crater turbine
