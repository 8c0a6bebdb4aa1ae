package proxy_test

import "github.com/shardgate/shardgate/internal/mysql/auth"

func proxyHash(pw string) string { return auth.HashPassword(pw) }
