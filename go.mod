module github.com/shardgate/shardgate

go 1.24

require (
	filippo.io/edwards25519 v1.2.0 // indirect
	github.com/go-sql-driver/mysql v1.10.1 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)
