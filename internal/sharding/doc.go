package sharding
