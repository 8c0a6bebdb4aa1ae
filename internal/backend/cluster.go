package backend

// Cluster is the set of servers one logical database lives on: a primary
// now; replicas and shards hang off the same type later.
type Cluster struct {
	Name    string
	Primary *Pool
}

// Close closes the cluster's pools.
func (c *Cluster) Close() {
	c.Primary.Close()
}
