package proxy

import (
	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/config"
	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/mysql/auth"
	"github.com/shardgate/shardgate/internal/router"
)

// backendAccounts are the logins of a cluster with users: from_backend:
// the accounts of its servers, checked by them (backend.Accounts).
type backendAccounts struct {
	accounts *backend.Accounts
	cluster  *backend.Cluster
	policy   *router.Policy // the cluster's routing, as a configured user on it has
}

// buildAccounts sets up the accounts cluster's logins, if one has users:
// from_backend. Which cluster has it, and its users_cache_ttl, need a
// restart to change (config: reload:"restart").
func (p *Proxy) buildAccounts() error {
	cfg := p.runningConfig()
	ac := cfg.AccountsCluster()
	if ac == nil {
		return nil
	}
	cl := p.clusters[ac.Name]
	accounts, err := backend.NewAccounts(cl, ac.UsersCacheTTL, p.log)
	if err != nil {
		return err
	}
	p.accounts = &backendAccounts{accounts: accounts, cluster: cl, policy: policy(cfg, config.User{Cluster: ac.Name})}
	return nil
}

// backendUser is the user a name that users[] does not list logs in as,
// when a cluster has users: from_backend; nil otherwise. Its password is
// the backend's to check (frontend.Session.authenticateBackend).
func (p *Proxy) backendUser(name string) *frontend.User {
	ba := p.accounts
	if ba == nil {
		return nil
	}
	u := frontend.NewUser(name, auth.Stored{}, ba.cluster, "", ba.policy)
	u.Accounts = ba.accounts
	return u
}

// closeAccounts closes the pools of the backend accounts.
func (p *Proxy) closeAccounts() {
	if p.accounts != nil {
		p.accounts.accounts.Close()
	}
}
