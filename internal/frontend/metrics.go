package frontend

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Metrics are the session counters exported on /metrics. Prometheus counters
// are atomic adds, cheap enough for the hot path.
type Metrics struct {
	ClientConnects   prometheus.Counter
	ClientsConnected prometheus.Gauge
	AuthFailures     prometheus.Counter
	AuthDelayed      prometheus.Counter
	AuthDelayedAddrs prometheus.Gauge
	Commands         prometheus.Counter
	ClientErrors     prometheus.Counter
	BackendErrors    prometheus.Counter
	Resends          prometheus.Counter
}

// NewMetrics creates the metrics and registers them with reg (if not nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		ClientConnects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_client_connections_total", Help: "Client connections accepted."}),
		ClientsConnected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardgate_client_connections", Help: "Client connections open now."}),
		AuthFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_client_auth_failures_total", Help: "Failed client logins."}),
		AuthDelayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_client_auth_delayed_total",
			Help: "Client logins whose answer was delayed after repeated failures of their user name from their address (server.auth_failure_delay)."}),
		AuthDelayedAddrs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "shardgate_client_auth_delayed_addresses",
			Help: "Client addresses and user names whose next login will be delayed after repeated failures (one per address and user name)."}),
		Commands: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_commands_total", Help: "Client commands received."}),
		ClientErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_client_errors_total", Help: "Errors the proxy itself returned to clients."}),
		BackendErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_backend_failures_total", Help: "Backend connections that failed during a client command."}),
		Resends: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "shardgate_statements_resent_total",
			Help: "Statements sent again on a fresh backend connection because the server had closed the pooled one before they reached it."}),
	}
	if reg != nil {
		reg.MustRegister(m.ClientConnects, m.ClientsConnected, m.AuthFailures, m.AuthDelayed, m.AuthDelayedAddrs, m.Commands, m.ClientErrors, m.BackendErrors, m.Resends)
	}
	return m
}

// counterValue reads a counter (off the hot path: a sweep).
func counterValue(c prometheus.Counter) uint64 {
	var v dto.Metric
	if err := c.Write(&v); err != nil || v.Counter == nil {
		return 0
	}
	return uint64(v.Counter.GetValue())
}
