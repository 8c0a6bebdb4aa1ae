package config

import "time"

// DefaultListenAddress is where the proxy listens when no listener is
// configured; exported for command-line flag defaults.
const DefaultListenAddress = "127.0.0.1:6033"

// Defaults are applied before the file is decoded, so a key that is present
// always overrides its default, even with a zero value: that is what lets
// validation tell "max_open: 0" (an error) from an absent max_open.
const (
	defaultMaxConnections  = 10000
	defaultReservedAdmin   = 1 // as MySQL's one extra connection for SUPER
	defaultPoolMaxOpen     = 16
	defaultPoolMaxWaiters  = 10000
	defaultPoolPreparedMax = 256
	// defaultPipelineDepth is backend.DefaultPipelineDepth.
	defaultPipelineDepth = 8
	// defaultPoolEvaluators is backend.DefaultEvaluatorMaxOpen.
	defaultPoolEvaluators = 4
	defaultMaxPrepared    = 16382
)

// DefaultHandshakeTimeout is server.handshake_timeout's default: ample for
// a login across a slow network (TLS and RSA included), short enough that
// connections that never finish one give their slot back soon.
const DefaultHandshakeTimeout = 10 * time.Second

// DefaultBusyPoll is server.busy_poll's default: long enough to catch a
// point select's reply and a client's next command at low load, short
// enough that a wait which does not pay off costs little.
const DefaultBusyPoll = 30 * time.Microsecond

// maxBusyPoll bounds server.busy_poll: past this, a wait is better parked.
const maxBusyPoll = time.Millisecond

// defaultAuthMaxDelay is server.auth_failure_delay.max_delay's default.
// MySQL's connection_control allows up to 2147483647 ms, but a login here
// waits at most the handshake timeout (10s): a longer delay means no
// answer at all, until the address has stopped failing for max_delay. 30s
// keeps a client whose password was fixed from being shut out for long,
// while an address that keeps guessing gets no answers.
const defaultAuthMaxDelay = 30 * time.Second

// Transactions defaults.
const (
	DefaultRecoveryInterval = 10 * time.Second
	DefaultAbandonAfter     = time.Minute
)

// Telemetry defaults.
const (
	DefaultMaxDigests       = 10000
	DefaultSlowThreshold    = time.Second
	DefaultTraceSampleRatio = 0.01
)

// defaulter is implemented by list element types whose fresh elements need
// defaults before the YAML item is decoded into them.
type defaulter interface {
	setDefaults()
}

func defaultConfig() *Config {
	return &Config{
		Listeners: []Listener{newListener(DefaultListenAddress)},
		Server: Server{
			CachingSHA2FullAuth:             "first_login",
			ShutdownTimeout:                 30 * time.Second,
			ClientIdleTimeout:               8 * time.Hour,
			NetReadTimeout:                  30 * time.Second,
			NetWriteTimeout:                 60 * time.Second,
			HandshakeTimeout:                DefaultHandshakeTimeout,
			BusyPoll:                        DefaultBusyPoll,
			MaxPreparedStatementsPerSession: defaultMaxPrepared,
			AuthFailureDelay: AuthFailureDelay{
				Threshold: 3, MinDelay: time.Second, MaxDelay: defaultAuthMaxDelay,
			},
		},
		Log:          Log{Level: "info", Format: "text"},
		Transactions: Transactions{RecoveryInterval: DefaultRecoveryInterval, AbandonAfter: DefaultAbandonAfter},
		Telemetry: Telemetry{
			Enabled: true, Digests: true, MaxDigests: DefaultMaxDigests,
			SlowLog: SlowLog{Threshold: DefaultSlowThreshold},
			Tracing: Tracing{SampleRatio: DefaultTraceSampleRatio, ServiceName: "shardgate"},
		},
	}
}

func newListener(address string) Listener {
	var l Listener
	l.setDefaults()
	l.Address = address
	return l
}

func (l *Listener) setDefaults() {
	*l = Listener{
		MaxConnections:           defaultMaxConnections,
		ReservedAdminConnections: defaultReservedAdmin,
		TLS:                      ListenerTLS{Mode: "optional"},
		ReusePort:                true,
	}
}

func (c *Cluster) setDefaults() {
	*c = Cluster{
		TLS: BackendTLS{Mode: "off"},
		Pool: Pool{
			MaxOpen: defaultPoolMaxOpen,
			// MaxIdle 0 means "= MaxOpen" and MinIdle defaults to MaxIdle;
			// both are resolved during validation.
			ConnectTimeout:            5 * time.Second,
			IdleTimeout:               10 * time.Minute,
			MaxLifetime:               time.Hour,
			WaitTimeout:               5 * time.Second,
			MaxWaiters:                defaultPoolMaxWaiters,
			PreparedStatementsPerConn: defaultPoolPreparedMax,
			HealthCheckInterval:       10 * time.Second,
			EvaluatorMaxOpen:          defaultPoolEvaluators,
			PipelineDepth:             defaultPipelineDepth,
		},
		Primary:       Backend{Weight: 1, State: "online"},
		Users:         UsersConfigured,
		UsersCacheTTL: 10 * time.Second,
		Routing: Routing{
			ReadFrom:           "replica",
			MaxReplicaLag:      10 * time.Second,
			Consistency:        "causal",
			WriteWindow:        2 * time.Second,
			CausalWaitTimeout:  time.Second,
			AutocommitOffReads: "primary",
		},
		Health: Health{
			Interval:          time.Second,
			Timeout:           time.Second,
			Failures:          3,
			Backoff:           time.Second,
			MaxBackoff:        30 * time.Second,
			ReconnectInterval: 250 * time.Millisecond,
		},
	}
}

func (b *Backend) setDefaults() {
	*b = Backend{Weight: 1, State: "online"}
}
