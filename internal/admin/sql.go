package admin

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/shardgate/shardgate/internal/frontend"
	"github.com/shardgate/shardgate/internal/mysql"
)

// Handler answers the admin SQL port's statements (frontend.LocalHandler).
type Handler struct {
	src Source
	log *slog.Logger
	// version is what @@version and VERSION() answer: the version the
	// admin port greets clients with.
	version string
}

// NewHandler answers admin statements from src; version is the one the
// admin port greets with. MariaDB's greeting puts "5.5.5-" before its
// version for old clients, which @@version does not have.
func NewHandler(src Source, version string, log *slog.Logger) *Handler {
	return &Handler{src: src, log: log, version: strings.TrimPrefix(version, "5.5.5-")}
}

// ErrNoSession is KillSession's error for an id no client session has.
var ErrNoSession = errors.New("no such session")

// versionTimeout bounds SHOW VERSION's look-up of the backends' versions.
const versionTimeout = 3 * time.Second

// Answer implements frontend.LocalHandler.
func (h *Handler) Answer(c frontend.LocalClient, sql string) (*frontend.LocalResult, *mysql.SQLError) {
	st, err := Parse(sql)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) && pe.Empty {
			return nil, mysql.NewError(errEmptyQuery, mysql.StateSyntax, "Query was empty")
		}
		return nil, mysql.NewError(mysql.ERParse, mysql.StateSyntax, "%s", err.Error())
	}
	now := time.Now()
	var v *View
	switch st.Kind {
	case ShowBackends:
		v = BackendsView(h.src)
	case ShowSessions:
		v = SessionsView(h.src, now)
	case ShowDigests:
		if v, err = DigestsView(h.src, st.OrderBy, st.Desc, st.Limit); err != nil {
			return nil, errorOf(err)
		}
	case ShowSharding:
		v = ShardingView(h.src)
	case ShowConfig:
		v = ConfigView(h.src)
	case ShowVersion:
		ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
		defer cancel()
		v = VersionView(ctx, h.src)
	case ShowStatus:
		v = StatusView(h.src, now)
	case ShowTransactions:
		v = TransactionsView(h.src)
	case ShowProxies:
		v = ProxiesView(h.src)
	case SessionWarnings:
		v = warningsView()
	case SessionSelect:
		return h.sessionSelect(c, st.Items)
	case SessionSet:
		return &frontend.LocalResult{}, nil
	default:
		return h.act(c, st)
	}
	return resultOf(v), nil
}

// errEmptyQuery is ER_EMPTY_QUERY.
const errEmptyQuery uint16 = 1065

// act runs an action statement, logging who ran it and how it went.
func (h *Handler) act(c frontend.LocalClient, st *Statement) (*frontend.LocalResult, *mysql.SQLError) {
	log := h.log.With("admin_user", c.User, "client", c.Addr, "conn_id", c.ConnID)
	switch st.Kind {
	case ResetDigests:
		h.src.ResetDigests()
		log.Info("admin: query digests reset")
		return &frontend.LocalResult{}, nil
	case SetBackend:
		state := map[bool]string{true: "offline", false: "online"}[st.Offline]
		if err := h.src.SetBackendOffline(st.Cluster, st.Address, st.Offline); err != nil {
			log.Warn("admin: SET BACKEND failed", "cluster", st.Cluster, "address", st.Address, "state", state, "err", err)
			return nil, mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "SET BACKEND: %v", err)
		}
		log.Info("admin: backend state set", "cluster", st.Cluster, "address", st.Address, "state", state)
		return &frontend.LocalResult{AffectedRows: 1, Info: "backend " + st.Cluster + "." + st.Address + " " + state}, nil
	case KillSession:
		if err := h.src.KillSession(st.SessionID); err != nil {
			log.Warn("admin: KILL SESSION failed", "session", st.SessionID, "err", err)
			if errors.Is(err, ErrNoSession) {
				return nil, mysql.NewError(mysql.ERNoSuchThread, mysql.StateGeneral, "Unknown thread id: %d", st.SessionID)
			}
			return nil, mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral, "KILL SESSION: %v", err)
		}
		log.Info("admin: session killed", "session", st.SessionID)
		return &frontend.LocalResult{}, nil
	case ReloadConfig:
		log.Info("admin: RELOAD CONFIG")
		changes, err := h.src.ReloadConfig()
		if err != nil {
			log.Warn("admin: RELOAD CONFIG failed; nothing changed", "err", err)
			return nil, mysql.NewError(mysql.ERUnknownError, mysql.StateGeneral,
				"RELOAD CONFIG: configuration not reloaded, nothing changed:\n%v", err)
		}
		log.Info("admin: configuration reloaded", "changes", len(changes))
		return resultOf(ChangesView(changes)), nil
	}
	return nil, mysql.NewError(mysql.ERNotSupportedYet, mysql.StateFeatureNotSupp, "not supported on the admin port; it knows: %s", Syntax)
}

// resultOf renders a view as a result set.
func resultOf(v *View) *frontend.LocalResult {
	res := &frontend.LocalResult{Columns: make([]frontend.LocalColumn, len(v.Columns)), Rows: make([][]*string, len(v.Rows))}
	for i, c := range v.Columns {
		res.Columns[i] = frontend.LocalColumn{Name: c.Name, Type: c.Type}
	}
	for i, r := range v.Rows {
		row := make([]*string, len(r))
		for j, val := range r {
			row[j] = cell(val)
		}
		res.Rows[i] = row
	}
	return res
}

// sessionSelect answers the SELECTs clients send on connecting, one row.
func (h *Handler) sessionSelect(c frontend.LocalClient, items []SelectItem) (*frontend.LocalResult, *mysql.SQLError) {
	res := &frontend.LocalResult{Rows: [][]*string{make([]*string, len(items))}}
	for i, it := range items {
		val, typ, e := h.itemValue(c, it)
		if e != nil {
			return nil, e
		}
		res.Columns = append(res.Columns, frontend.LocalColumn{Name: it.Name, Type: typ})
		res.Rows[0][i] = val
	}
	return res, nil
}

// sessionVars are the system variables clients and drivers read on
// connecting, with the admin port's values.
var sessionVars = map[string]struct {
	value string
	typ   frontend.LocalType
}{
	"version_comment":          {value: "shardgate admin"},
	"autocommit":               {value: "1", typ: frontend.LocalInteger},
	"auto_increment_increment": {value: "1", typ: frontend.LocalInteger},
	"max_allowed_packet":       {value: strconv.Itoa(MaxPacket), typ: frontend.LocalInteger},
	"character_set_client":     {value: "utf8mb4"},
	"character_set_connection": {value: "utf8mb4"},
	"character_set_results":    {value: "utf8mb4"},
	"character_set_server":     {value: "utf8mb4"},
	"collation_connection":     {value: "utf8mb4_general_ci"},
	"collation_server":         {value: "utf8mb4_general_ci"},
	"sql_mode":                 {value: ""},
	"lower_case_table_names":   {value: "0", typ: frontend.LocalInteger},
	"time_zone":                {value: "SYSTEM"},
	"system_time_zone":         {value: "UTC"},
	"tx_isolation":             {value: "REPEATABLE-READ"},
	"transaction_isolation":    {value: "REPEATABLE-READ"},
	"tx_read_only":             {value: "0", typ: frontend.LocalInteger},
	"transaction_read_only":    {value: "0", typ: frontend.LocalInteger},
	"wait_timeout":             {value: "28800", typ: frontend.LocalInteger},
	"interactive_timeout":      {value: "28800", typ: frontend.LocalInteger},
	"net_write_timeout":        {value: "60", typ: frontend.LocalInteger},
	"license":                  {value: "Apache-2.0"},
	// Connector/J reads these on connecting, too.
	"init_connect":       {value: ""},
	"performance_schema": {value: "0", typ: frontend.LocalInteger},
	"net_buffer_length":  {value: "16384", typ: frontend.LocalInteger},
	"query_cache_size":   {value: "0", typ: frontend.LocalInteger},
	"query_cache_type":   {value: "OFF"},
	"have_query_cache":   {value: "NO"},
}

// MaxPacket is the largest statement the admin port reads, its
// max_allowed_packet: admin statements are short.
const MaxPacket = 1 << 20

// itemValue is a session SELECT item's value (nil: NULL) and type.
func (h *Handler) itemValue(c frontend.LocalClient, it SelectItem) (*string, frontend.LocalType, *mysql.SQLError) {
	str := func(s string) *string { return &s }
	switch {
	case it.Var == "version":
		return str(h.version), frontend.LocalText, nil
	case it.Var != "":
		if v, ok := sessionVars[it.Var]; ok {
			return str(v.value), v.typ, nil
		}
		return nil, 0, mysql.NewError(errUnknownSystemVariable, mysql.StateGeneral, "Unknown system variable '%s'", it.Var)
	case it.Func != "":
		switch it.Func {
		case "DATABASE", "SCHEMA":
			if c.DB == "" {
				return nil, frontend.LocalText, nil
			}
			return str(c.DB), frontend.LocalText, nil
		case "VERSION":
			return str(h.version), frontend.LocalText, nil
		case "USER", "CURRENT_USER", "SESSION_USER", "SYSTEM_USER":
			host, _, err := net.SplitHostPort(c.Addr)
			if err != nil {
				host = c.Addr
			}
			return str(c.User + "@" + host), frontend.LocalText, nil
		case "CONNECTION_ID":
			return str(strconv.FormatUint(uint64(c.ConnID), 10)), frontend.LocalInteger, nil
		}
		return nil, 0, mysql.NewError(mysql.ERParse, mysql.StateSyntax,
			"%s() is not known on the admin port; it knows: %s", it.Func, Syntax)
	case it.Numeric && strings.ContainsAny(it.Literal, ".eE"):
		return str(it.Literal), frontend.LocalDecimal, nil
	case it.Numeric:
		return str(it.Literal), frontend.LocalInteger, nil
	}
	return str(it.Literal), frontend.LocalText, nil
}

// errUnknownSystemVariable is ER_UNKNOWN_SYSTEM_VARIABLE.
const errUnknownSystemVariable uint16 = 1193
