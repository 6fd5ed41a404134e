module github.com/prepkey/prepkey/client

// go 1.23: the lowest line the code allows (Scan returns an iter.Seq2; range
// over func). go-redis is required at v9.17.3, the last on go 1.18 and the
// lightest (v9.18 adds xxh3, atomic and cpuid; v9.19 on need go 1.24): a
// program on a newer go-redis gets that one (minimal version selection).
go 1.23

require (
	github.com/redis/go-redis/v9 v9.17.3
	github.com/stretchr/testify v1.12.1
	github.com/tidwall/redcon v1.6.4
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
