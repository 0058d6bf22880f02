package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/garden-bloom/memory/pkg/enumname"
)

// pageData is what every page template gets; Data is the page's own.
type pageData struct {
	Title string
	// Nav is the active item of the navigation ("agents", "inbox").
	Nav string
	// Caller is nil on the sign-in and error pages of signed-out requests.
	Caller *callerView
	// CSRF is the token every form of the page sends back.
	CSRF string
	// Live, when set, makes the page's #live part follow changes.
	Live *liveView
	// Poll is the live pages' polling interval in milliseconds.
	Poll    int64
	Version string
	Data    any
}

// callerView is the signed-in person as the header shows them.
type callerView struct {
	Subject string
	Roles   []string
	Agents  []string
}

// liveView points the page's script at the version of what #live shows.
type liveView struct {
	URL     string
	Version string
}

// diffArgs are the "diff" template's arguments.
type diffArgs struct {
	D     fileDiff
	Split bool
}

// views are the parsed page templates, each with the layout.
type views struct {
	pages map[string]*template.Template
}

// loadViews parses templates/layout.html with each other template of fsys.
func loadViews(fsys fs.FS, a *assets) (*views, error) {
	funcs := template.FuncMap{
		"asset":     a.url,
		"short":     shortSHA,
		"enum":      enumLabel,
		"key":       enumname.Name,
		"datetime":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"date":      func(t time.Time) string { return t.UTC().Format("2006-01-02") },
		"join":      strings.Join,
		"lineNo":    lineNo,
		"enumShort": enumShort,
		"diffOf":    func(d fileDiff, split bool) diffArgs { return diffArgs{D: d, Split: split} },
	}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(fsys, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("console: layout: %w", err)
	}
	names, err := fs.Glob(fsys, "templates/*.html")
	if err != nil {
		return nil, err
	}
	v := &views{pages: map[string]*template.Template{}}
	for _, n := range names {
		if path.Base(n) == "layout.html" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(fsys, n)
		if err != nil {
			return nil, fmt.Errorf("console: %s: %w", n, err)
		}
		v.pages[strings.TrimSuffix(path.Base(n), ".html")] = t
	}
	return v, nil
}

// render writes page name with d, completed with what every page shows.
// The page is rendered to a buffer first, so a template error is a clean
// 500, never half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, d *pageData) {
	t, ok := s.views.pages[name]
	if !ok {
		http.Error(w, "console: no template "+name, http.StatusInternalServerError)
		return
	}
	d.Poll, d.Version = s.cfg.Poll.Milliseconds(), s.opts.Version
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout.html", d); err != nil {
		s.log.Error("console: rendering a page", "page", name, "path", r.URL.Path, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes()) // the status is sent: a failed write has no one to tell
}

// base is the pageData of a signed-in caller's page.
func base(c *caller, title, nav string) *pageData {
	d := &pageData{Title: title, Nav: nav}
	if c != nil {
		d.CSRF = c.csrf
		d.Caller = &callerView{Subject: c.claims.Subject, Agents: c.claims.Agents}
		for _, r := range c.claims.Roles {
			d.Caller.Roles = append(d.Caller.Roles, string(r))
		}
	}
	return d
}

// shortSHA is the first 10 characters of a commit sha.
func shortSHA(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

// enumLabel is an enum value as the specs write it, spaced ("needs human
// review" for PROPOSAL_STATUS_NEEDS_HUMAN_REVIEW).
func enumLabel(v protoreflect.Enum) string {
	return strings.ReplaceAll(enumname.Name(v), "_", " ")
}

// ago says how long ago t was, roughly, as a person would.
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	default:
		return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
	}
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // the status is sent: a failed write has no one to tell
}

// assets are the embedded static files, each served under a URL that
// carries its content hash, so browsers may keep them for good.
type assets struct {
	files map[string]asset
}

type asset struct {
	body        []byte
	hash        string
	contentType string
}

func loadAssets(fsys fs.FS) (*assets, error) {
	names, err := fs.Glob(fsys, "static/*")
	if err != nil {
		return nil, err
	}
	a := &assets{files: map[string]asset{}}
	for _, n := range names {
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(n))
		if ct == "" {
			ct = "application/octet-stream"
		}
		a.files[path.Base(n)] = asset{body: b, hash: hex.EncodeToString(sum[:8]), contentType: ct}
	}
	return a, nil
}

// url is the versioned URL of a static file.
func (a *assets) url(name string) (string, error) {
	f, ok := a.files[name]
	if !ok {
		return "", fmt.Errorf("console: no static file %q", name)
	}
	return Path + "static/" + name + "?v=" + f.hash, nil
}

// ServeHTTP serves a static file; with the current version in the URL it
// may be cached for a year.
func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, ok := a.files[r.PathValue("file")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.contentType)
	h.Set("ETag", `"`+f.hash+`"`)
	if r.URL.Query().Get("v") == f.hash {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(f.body))
}
