package gateway

import (
	"errors"
	"flag"
	"time"
)

// Limits of the REST edge.
const (
	// DefaultMaxBodyBytes is the default of --rest-max-body-bytes. The
	// largest legitimate body is a proposal with a handful of Markdown
	// files under their token limits (tens of KiB); 4 MiB leaves room for
	// big logic documents and stays below the gRPC default of 8 MiB.
	DefaultMaxBodyBytes = 4 << 20
	// DefaultTimeout is the default of --rest-timeout.
	DefaultTimeout = 30 * time.Second
	// MaxURLBytes bounds the request target (path and query): 8 KiB, the
	// limit most proxies and servers apply. Longer ones get 414.
	MaxURLBytes = 8 << 10
	// MaxParamBytes bounds each percent-decoded path segment, query
	// parameter name and query parameter value: 4 KiB, far above any
	// identifier, filter or search text of the API. Longer ones get 400
	// INVALID_ARGUMENT naming the parameter (see edge.checkURLText).
	MaxParamBytes = 4 << 10
	// MaxHeaderBytes is the http.Server's MaxHeaderBytes for the process
	// serving the edge: the request line, a bearer token and the usual
	// headers fit many times over; Go's default is 1 MiB.
	MaxHeaderBytes = 64 << 10
	// MaxJSONDepth is how deeply a request body may nest objects and
	// arrays; no request of the API comes close. It matches
	// restjson.DefaultMaxDepth, which the decoder enforces again.
	MaxJSONDepth = 64
)

// Config is the REST edge's configuration.
type Config struct {
	// MaxBodyBytes is the largest request body accepted; larger ones get
	// 413 REQUEST_TOO_LARGE without reaching a service.
	MaxBodyBytes int64
	// Timeout bounds each REST request, reading its body included; the
	// deadline is passed on to the gRPC call. On expiry: 504.
	Timeout time.Duration
	// CORS is the cross-origin policy; off by default.
	CORS CORSConfig
}

// RegisterFlags adds the REST edge's flags.
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.Int64Var(&c.MaxBodyBytes, "rest-max-body-bytes", DefaultMaxBodyBytes, "gateway target: largest REST request body accepted; larger ones get 413 REQUEST_TOO_LARGE (at most --grpc-max-recv-bytes)")
	fs.DurationVar(&c.Timeout, "rest-timeout", DefaultTimeout, "gateway target: deadline of each REST request, passed on to the gRPC call; when it passes the answer is 504")
	fs.Var(originsFlag{&c.CORS.AllowedOrigins}, "cors-allowed-origins", "gateway target: comma-separated origins (scheme://host[:port]) allowed to call the REST API from a browser; empty = CORS off")
	fs.BoolVar(&c.CORS.AllowCredentials, "cors-allow-credentials", false, "gateway target: answer CORS requests with Access-Control-Allow-Credentials: true (needs --cors-allowed-origins)")
}

// Validate checks the REST edge's flags on their own; that the body limit
// fits the gRPC message limit is checked by the caller, which knows it.
func (c *Config) Validate() error {
	if c.MaxBodyBytes <= 0 {
		return errors.New("--rest-max-body-bytes must be positive")
	}
	if c.Timeout <= 0 {
		return errors.New("--rest-timeout must be positive")
	}
	return c.CORS.Validate()
}
