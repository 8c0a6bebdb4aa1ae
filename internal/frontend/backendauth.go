package frontend

import (
	"context"
	"errors"

	"github.com/shardgate/shardgate/internal/backend"
	"github.com/shardgate/shardgate/internal/mysql"
	"github.com/shardgate/shardgate/internal/mysql/auth"
)

// authenticateBackend logs a client in to one of the backend's own
// accounts (users: from_backend; docs/configuration.md). The proxy has
// no copy of the password: the backend decides, when the proxy logs in to
// it with the password the client gives. The proxy needs that password
// itself, not a proof of it, to open more connections as the account
// later (its pools), so the exchange with the client is always
// caching_sha2_password, switched to when the client started with another
// plugin:
//
//   - the fast path proves the client knows the password the account
//     holds from an earlier login (backend.Accounts.LoginFast): accepted
//     without the backend while the verification is younger than
//     users_cache_ttl, else checked again with the backend;
//   - otherwise full authentication gives the cleartext (over TLS, or
//     RSA-encrypted with the proxy's key), which the backend checks with
//     whatever plugin the account uses (mysql_native_password, ed25519,
//     caching_sha2_password): backend.Accounts.Login.
//
// The failures are those of a configured user: a refused password is
// 1045 after the failure delay (authguard), and so is a name the backend
// does not know (it answers the same). A backend that cannot be reached is
// not a wrong password: the client is told so.
func (s *Session) authenticateBackend(u *User, host, plugin string, resp []byte) error {
	if plugin != auth.PluginCachingSHA2 {
		// One auth switch (clients accept one), before any reply that
		// depends on the password.
		data := append(s.salt[:len(s.salt):len(s.salt)], 0)
		if err := s.client.EndPacket(mysql.AppendAuthSwitch(s.client.BeginPacket(), auth.PluginCachingSHA2, data)); err != nil {
			return err
		}
		if err := s.client.Flush(); err != nil {
			return err
		}
		p, err := s.readLogin()
		if err != nil {
			return s.readFailedEarly("read auth switch response", err)
		}
		resp = append([]byte(nil), p...)
	}
	ctx, cancel := context.WithDeadline(context.Background(), s.loginDeadline)
	defer cancel()
	if s.srv.opt.FullAuth != FullAuthAlways {
		acct, proven, err := u.Accounts.LoginFast(ctx, u.Name, s.salt[:], resp)
		if proven {
			if err != nil {
				return s.backendRefused(u.Name, host, true, err)
			}
			if err := s.pace(host, s.srv.opt.AuthGuard.Delay(host, u.Name)); err != nil {
				return err
			}
			if err := s.client.WritePacket([]byte{mysql.HeaderAuthMore, sha2FastAuthOK}); err != nil {
				return err
			}
			return s.becomeUser(u.withAccount(acct), host)
		}
	}
	var password []byte
	if len(resp) > 0 {
		pw, ok, err := s.fullAuthPassword(host, u.Name)
		if err != nil {
			return err
		}
		if !ok {
			return s.denied(u.Name, host, true, "no readable password (cleartext over plain TCP, or an RSA ciphertext that does not decrypt)")
		}
		password = pw
	}
	acct, err := u.Accounts.Login(ctx, u.Name, password)
	if err != nil {
		return s.backendRefused(u.Name, host, len(resp) > 0, err)
	}
	return s.becomeUser(u.withAccount(acct), host)
}

// withAccount is u logged in as acct.
func (u *User) withAccount(acct *backend.Account) *User {
	nu := *u
	nu.Account = acct
	return &nu
}

// backendRefused answers a login the backend refused or could not check.
// Access denied is the proxy's own 1045 (the client's address, not the
// proxy's, in the message; the failure delay applies); another refusal
// of the server (a locked account, an expired password, too many
// connections of the account) is the server's error, counted as a failed
// login too; a server that could not be reached is 9001, which names it.
func (s *Session) backendRefused(user, host string, usingPassword bool, err error) error {
	var se *mysql.SQLError
	if !errors.Is(err, backend.ErrAccountRefused) || !errors.As(err, &se) {
		s.logger().Warn("a login could not be checked with the backend (users: from_backend)", "user", user, "err", err,
			"hint", "the accounts cluster's writer must be reachable for logins whose verification is not cached")
		return s.fail(mysql.NewError(backend.ErrCodeBackendUnavailable, mysql.StateGeneral,
			"shardgate: cannot check the login of '%s' with the backend: %v", user, err))
	}
	if se.Code == mysql.ERAccessDenied || se.Code == erAccessDeniedNoPassword {
		return s.denied(user, host, usingPassword, "the backend refused the password")
	}
	s.srv.opt.Metrics.AuthFailures.Inc()
	if err := s.pace(host, s.srv.opt.AuthGuard.Failed(host, user, "the backend refused the login: "+se.Message)); err != nil {
		return err
	}
	return s.fail(se)
}

// erAccessDeniedNoPassword is ER_ACCESS_DENIED_NO_PASSWORD_ERROR (1698).
const erAccessDeniedNoPassword = 1698
