package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// CORSConfig is the REST edge's cross-origin policy: off unless origins are
// listed. Only listed origins get Access-Control-Allow-Origin (never "*"),
// and credentials (cookies, client certificates) only when AllowCredentials
// is set — bearer tokens in Authorization need no credentials mode.
type CORSConfig struct {
	// AllowedOrigins are exact origins, scheme://host[:port].
	AllowedOrigins []string
	// AllowCredentials answers Access-Control-Allow-Credentials: true.
	AllowCredentials bool
}

// corsAllowedHeaders are the request headers a cross-origin caller may send.
var corsAllowedHeaders = []string{"Authorization", "Content-Type", "Accept", "X-Request-Id", "Traceparent", "Tracestate"}

// corsExposedHeaders are the response headers a cross-origin caller may read
// beyond the safelisted ones.
var corsExposedHeaders = []string{"Retry-After", "WWW-Authenticate", "Allow"}

// corsMaxAge is how long (seconds) a browser may cache a preflight answer.
const corsMaxAge = "600"

// originsFlag is --cors-allowed-origins: a comma-separated list.
type originsFlag struct{ list *[]string }

func (f originsFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f originsFlag) Set(s string) error {
	*f.list = nil
	for _, o := range strings.Split(s, ",") {
		if o = strings.TrimSpace(o); o != "" {
			*f.list = append(*f.list, o)
		}
	}
	return nil
}

// Validate checks that every origin is an origin.
func (c *CORSConfig) Validate() error {
	for _, o := range c.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
			return fmt.Errorf("--cors-allowed-origins: %q is not an origin (scheme://host[:port], no \"*\")", o)
		}
	}
	if c.AllowCredentials && len(c.AllowedOrigins) == 0 {
		return errors.New("--cors-allow-credentials needs --cors-allowed-origins")
	}
	return nil
}

func (c *CORSConfig) enabled() bool { return len(c.AllowedOrigins) > 0 }

func (c *CORSConfig) allows(origin string) bool {
	return origin != "" && slices.Contains(c.AllowedOrigins, origin)
}

// cors applies the policy to r. It returns true when it answered the
// request itself (a preflight from an allowed origin for a known path).
// Other requests from an allowed origin get the Allow-Origin headers on
// their answer, errors included; a preflight from any other origin goes on
// like any OPTIONS request (405), without CORS headers, so the browser
// refuses the cross-origin call.
func (e *edge) cors(w http.ResponseWriter, r *http.Request) bool {
	c := &e.cfg.CORS
	if !c.enabled() {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if !c.allows(origin) {
		return false
	}
	h.Set("Access-Control-Allow-Origin", origin)
	if c.AllowCredentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		h.Set("Access-Control-Expose-Headers", strings.Join(corsExposedHeaders, ", "))
		return false
	}
	methods := e.methodsOf(r.URL.Path)
	if len(methods) == 0 {
		return false // unknown path: 404
	}
	h.Add("Vary", "Access-Control-Request-Method")
	h.Add("Vary", "Access-Control-Request-Headers")
	h.Set("Access-Control-Allow-Methods", strings.Join(methods, ", "))
	h.Set("Access-Control-Allow-Headers", strings.Join(corsAllowedHeaders, ", "))
	h.Set("Access-Control-Max-Age", corsMaxAge)
	w.WriteHeader(http.StatusNoContent)
	return true
}

// methodsOf lists the methods path is served with.
func (e *edge) methodsOf(path string) []string {
	if path == OpenAPIPath || path == DocsPath {
		return []string{http.MethodGet, http.MethodHead}
	}
	_, allowed := e.routes.Match("", path)
	return allowed
}
