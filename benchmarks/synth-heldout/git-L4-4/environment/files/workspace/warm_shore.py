zagreb lyon amsterdam canyon echo gooseberry
dapper rosy castle denver
