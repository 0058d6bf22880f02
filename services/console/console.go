// Package console is the review console: server-rendered HTML pages on the
// HTTP edge at /ui/ where a person signs in with a token, looks at agents'
// memory and reviews proposals.
//
// It holds no logic the services lack. Every page is made of gRPC calls to
// the services (here or at their peer addresses) carrying the signed-in
// caller's own token, so what a person may see and do is decided by the
// same checks as for any other client; a refusal is shown as a page that
// says why. Its only state is the browser's session cookie (sealed, see
// pkg/websession). Templates and assets are embedded; nothing loads from
// anywhere else, and a strict Content-Security-Policy says so to the
// browser.
//
// Pages are added by registering a route in routes (one line) and writing
// a handler that renders a template of templates/ with s.render.
package console

import (
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/websession"
)

// Path is where the edge serves the console.
const Path = "/ui/"

// SessionCookie is the name of the session cookie.
const SessionCookie = "gbm_session"

// loginCookie carries the sign-in form's own CSRF id until sign-in.
const loginCookie = "gbm_login"

// maxFormBytes bounds a form body: a token, a comment and a CSRF token.
const maxFormBytes = 64 << 10

// Clients are the services the console calls.
type Clients struct {
	ContextAssembly memoryv1.ContextAssemblyServiceClient
	SearchIndex     memoryv1.SearchIndexServiceClient
	EntityGraph     memoryv1.EntityGraphServiceClient
	ProposalApply   memoryv1.ProposalApplyServiceClient
}

// Options are what the console needs from the process.
type Options struct {
	// Verifier checks a pasted token, and the token of every request's
	// session (so an expired or revoked key ends the session at once).
	Verifier *auth.Verifier
	// Secret is the key material of the session cookies (the auth secret:
	// every replica of the edge has it, so any of them opens a cookie).
	Secret []byte
	// CallTimeout bounds each gRPC call (the edge's --rest-timeout).
	CallTimeout time.Duration
	// Version is shown in the footer.
	Version string
	Logger  *slog.Logger
	// Now is the clock (tests); nil = time.Now.
	Now func() time.Time
}

// Server serves the console.
type Server struct {
	clients  Clients
	cfg      Config
	opts     Options
	sessions *websession.Keeper
	// codes seals sign-in codes; usedCodes are those redeemed here.
	codes     *websession.Keeper
	usedCodes usedCodes
	session   websession.Cookie
	login     websession.Cookie
	views     *views
	assets    *assets
	mux       *http.ServeMux
	log       *slog.Logger
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static/*
var staticFS embed.FS

// New builds the console's handler; serve it at Path.
func New(clients Clients, cfg Config, opts Options) (*Server, error) {
	if opts.Verifier == nil {
		return nil, errors.New("console: a token verifier is required")
	}
	if clients.ContextAssembly == nil || clients.ProposalApply == nil || clients.EntityGraph == nil || clients.SearchIndex == nil {
		return nil, errors.New("console: a client of every service is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	keeper, err := websession.New(opts.Secret, "console", websession.WithClock(opts.Now))
	if err != nil {
		return nil, err
	}
	codes, err := websession.New(opts.Secret, codePurpose, websession.WithClock(opts.Now))
	if err != nil {
		return nil, err
	}
	a, err := loadAssets(staticFS)
	if err != nil {
		return nil, err
	}
	v, err := loadViews(templateFS, a)
	if err != nil {
		return nil, err
	}
	s := &Server{
		clients: clients, cfg: cfg, opts: opts, sessions: keeper, codes: codes,
		session: websession.Cookie{Name: SessionCookie, Path: Path},
		login:   websession.Cookie{Name: loginCookie, Path: Path},
		views:   v, assets: a, mux: http.NewServeMux(), log: opts.Logger,
	}
	s.routes()
	return s, nil
}

// routes registers every page. Signed-in pages go through s.page (GET) or
// s.action (POST: CSRF and origin checked first).
func (s *Server) routes() {
	s.mux.Handle("GET /ui/static/{file}", s.assets)
	s.mux.HandleFunc("GET /ui/login", s.loginPage)
	s.mux.HandleFunc("POST /ui/login", s.signIn)
	s.mux.Handle("POST /ui/logout", s.action(s.signOut))
	s.mux.Handle("GET /ui/{$}", s.page(s.agentsPage))
	s.mux.Handle("GET /ui/agents/{agent}", s.page(s.agentPage))
	s.mux.Handle("GET /ui/agents/{agent}/commits/{sha}", s.page(s.commitPage))
	s.mux.Handle("GET /ui/inbox", s.page(s.inboxPage))
	s.mux.Handle("GET /ui/search", s.page(s.searchPage))
	s.mux.Handle("GET /ui/entities", s.page(s.entitiesPage))
	s.mux.Handle("GET /ui/entities/{id}", s.page(s.entityPage))
	s.mux.Handle("GET /ui/decisions", s.page(s.decisionsPage))
	s.mux.Handle("GET /ui/proposals/{id}", s.page(s.proposalPage))
	s.mux.Handle("POST /ui/proposals/{id}/{action}", s.action(s.review))
	s.mux.Handle("GET /ui/api/version", s.api(s.version))
	s.mux.HandleFunc("POST /ui/api/sign-in-codes", s.mintCode)
	s.mux.HandleFunc("/ui/", s.notFound)
}

// ServeHTTP serves a console request with the security headers every
// answer carries.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Nothing but this origin's own files: no inline script or style, no
	// frames, forms only to here.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	// The Referer stays on this origin, where CheckOrigin may use it.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	s.mux.ServeHTTP(&timedWriter{ResponseWriter: w, start: time.Now()}, r)
}

// timedWriter adds a Server-Timing header ("app;dur=<ms>") as the status
// is written: pages render into a buffer first, so that is the time the
// console took to gather and render the page — what a benchmark or the
// browser's developer tools should hold it to, without the network.
type timedWriter struct {
	http.ResponseWriter
	start time.Time
	wrote bool
}

func (w *timedWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		w.Header().Set("Server-Timing", fmt.Sprintf("app;dur=%.2f", float64(time.Since(w.start).Microseconds())/1000))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *timedWriter) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *timedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// notFound answers a path the console does not have.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.renderError(w, r, nil, http.StatusNotFound, "Not found", "The console has no page at "+r.URL.Path+".")
}
