taipei bakery capsule sail helsinki grapefruit velvet
noble durban brisk ledger token
