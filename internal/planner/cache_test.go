package planner

import (
	"fmt"
	"sync"
	"testing"
)

func TestCacheGetPut(t *testing.T) {
	c := NewCache[string](1000)
	if _, ok := c.Get("shop", "shop", 1, []byte("k")); ok {
		t.Fatal("hit in an empty cache")
	}
	c.Put("shop", "shop", 1, []byte("k"), "a")
	c.Put("shop", "other", 1, []byte("k"), "b") // same shape, another database
	c.Put("shop", "shop", 1, []byte("k2"), "c") // a hash collision
	c.Put("shop", "shop", 1, []byte("k"), "d")  // replaces a
	for _, tc := range []struct {
		db, key, want string
		ok            bool
	}{
		{"shop", "k", "d", true}, {"other", "k", "b", true}, {"shop", "k2", "c", true}, {"shop", "k3", "", false}, {"x", "k", "", false},
	} {
		if v, ok := c.Get("shop", tc.db, 1, []byte(tc.key)); v != tc.want || ok != tc.ok {
			t.Errorf("Get(%s, %s) = %q %v, want %q %v", tc.db, tc.key, v, ok, tc.want, tc.ok)
		}
	}
	if v, ok := c.Get("other-schema", "shop", 1, []byte("k")); ok {
		t.Errorf("another schema's plan: %q", v)
	}
	if n := c.Len(); n != 3 {
		t.Errorf("Len() = %d, want 3", n)
	}
	key := []byte("mutable")
	c.Put("shop", "shop", 2, key, "e")
	key[0] = 'X'
	if _, ok := c.Get("shop", "shop", 2, []byte("mutable")); !ok {
		t.Error("Put kept the caller's key slice")
	}
}

func TestCacheBound(t *testing.T) {
	c := NewCache[int](cacheShards * 4)
	spread := func(i int) uint64 { return uint64(i) * 0x9e3779b97f4a7c15 }
	for i := 0; i < 10000; i++ {
		c.Put("s", "d", spread(i), []byte(fmt.Sprint(i)), i)
	}
	if n := c.Len(); n > cacheShards*4 || n < cacheShards*2 {
		t.Fatalf("Len() = %d, want about %d", n, cacheShards*4)
	}
	// the last entry put is always there
	if v, ok := c.Get("s", "d", spread(9999), []byte("9999")); !ok || v != 9999 {
		t.Fatalf("last entry: %v %v", v, ok)
	}
}

// TestCacheConcurrent: readers and writers at once (run with -race).
func TestCacheConcurrent(t *testing.T) {
	c := NewCache[int](256)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				k := uint64(i % 300)
				key := []byte(fmt.Sprint(k))
				if v, ok := c.Get("s", "d", k, key); ok && v != int(k) {
					t.Errorf("Get(%d) = %d", k, v)
					return
				}
				c.Put("s", "d", k, key, int(k))
			}
		}()
	}
	wg.Wait()
}

func BenchmarkCacheGet(b *testing.B) {
	c := NewCache[*Template](10000)
	key := []byte("SELECT a FROM t WHERE id = \x01 ")
	for i := uint64(0); i < 5000; i++ {
		c.Put("shop", "shop", i*0x9e3779b97f4a7c15, []byte(fmt.Sprint(i)), nil)
	}
	c.Put("shop", "shop", 42, key, &Template{})
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, ok := c.Get("shop", "shop", 42, key); !ok {
				b.Fatal("miss")
			}
		}
	})
}

func TestCacheClear(t *testing.T) {
	c := NewCache[int](128)
	for i := range 10 {
		c.Put("s", "d", uint64(i), []byte{byte(i)}, i)
	}
	c.Clear()
	for i := range 10 {
		if _, ok := c.Get("s", "d", uint64(i), []byte{byte(i)}); ok {
			t.Fatalf("entry %d survived Clear", i)
		}
	}
	c.Put("s", "d", 1, []byte{1}, 1)
	if v, ok := c.Get("s", "d", 1, []byte{1}); !ok || v != 1 {
		t.Fatal("the cache does not take entries after Clear")
	}
}
