dapper florence kumquat elderberry spruce
