package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// Hostile input (issue #8): every case gets a precise error and writes
// nothing — neither the repository's refs nor the proposal store change.

const (
	hostileIssuer   = "gb-hostile-test"
	hostileAudience = "memory-api"
)

// hostileEnv is an in-process suite with issuer and audience checks on and
// one agent ("victim") with memory, plus a symlink a person committed.
type hostileEnv struct {
	d      *deployment
	signer *auth.Signer
	secret []byte
}

func newHostileEnv(t *testing.T) *hostileEnv {
	d := startInProcessWith(t, "--auto-approve-default", "--auth-issuer", hostileIssuer, "--auth-audience", hostileAudience)
	secret, err := auth.LoadSecret(filepath.Join(d.dataDir, "auth.secret"))
	require.NoError(t, err)
	signer, err := auth.NewSigner(secret, auth.WithSignerIssuer(hostileIssuer), auth.WithSignerAudience(hostileAudience))
	require.NoError(t, err)
	e := &hostileEnv{d: d, signer: signer, secret: secret}

	svc := e.mint(t, "orchestrator", []string{"*"}, auth.RoleService)
	code, resp := jsonCall(t, d, "POST", "/memory/victim/propose", `{"runId":"run_seed","reasoning":"seed",
	  "updates":[{"file":"facts.md","operation":"append","section":"Secrets","content":"- the vault is in the basement"},
	             {"file":"snapshot.md","operation":"replace","content":"# Snapshot: victim\n\nSeeded.\n"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	id := resp["proposalId"].(string)
	require.Eventually(t, func() bool {
		_, got := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
		return got["status"] == "applied"
	}, 20*time.Second, 10*time.Millisecond)

	// A person commits a symlink that points out of the repository.
	work := t.TempDir()
	bare := filepath.Join(d.dataDir, "memory.git")
	gitIn := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=mallory", "GIT_AUTHOR_EMAIL=m@example.org",
			"GIT_COMMITTER_NAME=mallory", "GIT_COMMITTER_EMAIL=m@example.org")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
	}
	gitIn(work, "clone", "-q", bare, "wt")
	wt := filepath.Join(work, "wt")
	require.NoError(t, os.MkdirAll(filepath.Join(wt, "memory/victim/runs"), 0o755))
	require.NoError(t, os.Symlink("../../../../../../../../etc/passwd", filepath.Join(wt, "memory/victim/runs/run_link.md")))
	gitIn(wt, "add", "-A")
	gitIn(wt, "commit", "-q", "-m", "a symlink")
	gitIn(wt, "push", "-q", "origin", "HEAD:main")
	return e
}

func (e *hostileEnv) mint(t *testing.T, sub string, agents []string, roles ...auth.Role) string {
	t.Helper()
	tok, err := e.signer.Mint(sub, roles, agents, time.Hour)
	require.NoError(t, err)
	return tok
}

// sign signs arbitrary claims with key and method, as an attacker would.
func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(method, claims).SignedString(key)
	require.NoError(t, err)
	return tok
}

func (e *hostileEnv) claims(mod func(jwt.MapClaims)) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{"sub": "attacker", "iss": hostileIssuer, "aud": hostileAudience, "iat": now.Unix(),
		"nbf": now.Unix(), "exp": now.Add(time.Hour).Unix(), "roles": []string{"service"}, "agents": []string{"*"}}
	if mod != nil {
		mod(c)
	}
	return c
}

// settledState is writeState once earlier, allowed writes (proposals the
// engine is still applying) have finished: it waits until the state holds
// still for 100 ms.
func settledState(t *testing.T, d *deployment) string {
	t.Helper()
	prev := writeState(t, d)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		cur := writeState(t, d)
		if cur == prev {
			return cur
		}
		prev = cur
	}
	return prev
}

// writeState is what a refused call must not change: every ref of the
// repository and every stored proposal.
func writeState(t *testing.T, d *deployment) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", filepath.Join(d.dataDir, "memory.git"), "for-each-ref", "--format=%(refname) %(objectname)").CombinedOutput()
	require.NoError(t, err, string(out))
	var keys []string
	for info, err := range d.objects.List(context.Background(), proposalstore.Prefix) {
		require.NoError(t, err)
		keys = append(keys, info.Key+" "+info.ETag)
	}
	slices.Sort(keys)
	return string(out) + strings.Join(keys, "\n")
}

// hostileCase is one request and the answer it must get.
type hostileCase struct {
	name         string
	method, path string
	body         string
	bodyReader   func() io.Reader // instead of body (sizes, chunking)
	auth         string           // the whole Authorization header; "" = none
	status       int
	reason       string // the ErrorInfo reason, when it matters
}

func (e *hostileEnv) do(t *testing.T, c hostileCase) (int, http.Header, string) {
	t.Helper()
	var body io.Reader = strings.NewReader(c.body)
	if c.bodyReader != nil {
		body = c.bodyReader()
	}
	req, err := http.NewRequest(c.method, "http://"+e.d.httpAddr+c.path, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

func propose(file, op, content string) string {
	return fmt.Sprintf(`{"runId":"run_h","updates":[{"file":%q,"operation":%q,"content":%q}]}`, file, op, content)
}

func TestHostileInput(t *testing.T) {
	e := newHostileEnv(t)
	bearer := func(tok string) string { return "Bearer " + tok }
	svc := bearer(e.mint(t, "orchestrator", []string{"*"}, auth.RoleService))
	victim := bearer(e.mint(t, "victim-run", []string{"victim"}, auth.RoleAgent))
	intruder := bearer(e.mint(t, "intruder-run", []string{"intruder"}, auth.RoleAgent))
	reviewer := bearer(e.mint(t, "alice", []string{"*"}, auth.RoleReviewer))
	otherKey := make([]byte, 32)
	_, _ = rand.Read(otherKey)
	good := propose("facts.md", "append", "- a harmless fact")
	const P = "/memory/victim/propose"
	big := func(n int) func() io.Reader {
		return func() io.Reader {
			return io.MultiReader(strings.NewReader(`{"runId":"run_h","reasoning":"`), strings.NewReader(strings.Repeat("a", n)), strings.NewReader(`"}`))
		}
	}
	manyUpdates := `{"runId":"run_h","updates":[` + strings.TrimSuffix(strings.Repeat(`{"file":"facts.md","operation":"append","content":"- x"},`, 51), ",") + `]}`

	cases := []hostileCase{
		// Path traversal in the file of an update, in every form.
		{name: "dot-dot", path: P, body: propose("../../etc/passwd", "replace", "x"), status: 400, reason: "INVALID_PATH"},
		{name: "absolute", path: P, body: propose("/etc/passwd", "replace", "x"), status: 400, reason: "INVALID_PATH"},
		{name: "url-encoded dot-dot", path: P, body: propose("..%2F..%2Fetc%2Fpasswd", "replace", "x"), status: 400, reason: "INVALID_PATH"},
		{name: "dot-dot after a file", path: P, body: propose("facts.md/../../../x", "append", "- x"), status: 400, reason: "INVALID_PATH"},
		{name: "backslashes", path: P, body: propose(`runs\..\..\x.md`, "write_run", "x"), status: 400, reason: "INVALID_PATH"},
		{name: "fullwidth look-alike", path: P, body: propose("ｆacts.md", "append", "- x"), status: 400, reason: "INVALID_PATH"},
		{name: "zero-width space", path: P, body: propose("facts.md\u200b", "append", "- x"), status: 400, reason: "INVALID_PATH"},
		{name: "dot-dot in a run name", path: P, body: propose("runs/run_../../x.md", "write_run", "x"), status: 400, reason: "INVALID_PATH"},
		{name: "logic escape", path: P, body: propose("logic/../../../policy.json", "replace", "{}"), status: 400, reason: "INVALID_PATH"},
		{name: "repository path", path: P, body: propose("memory/victim/facts.md", "append", "- x"), status: 400, reason: "INVALID_PATH"},
		{name: "git internals", path: P, body: propose(".git/config", "replace", "x"), status: 400, reason: "INVALID_PATH"},
		{name: "NUL in a file name", path: P, body: propose("facts.md\x00", "append", "- x"), status: 400},
		{name: "engine file meta.json", path: P, body: propose("meta.json", "replace", "{}"), status: 400, reason: "INVALID_OPERATION"},
		{name: "engine file changelog", path: P, body: propose("changelog.md", "replace", "x"), status: 400, reason: "INVALID_OPERATION"},
		{name: "engine file timeline", path: P, body: propose("timeline/2026-01-01.md", "replace", "x"), status: 400, reason: "INVALID_OPERATION"},

		// Agent ids that are not slugs, in the path and in the body.
		{name: "uppercase agent", path: "/memory/Victim/propose", body: good, auth: svc, status: 400, reason: "INVALID_AGENT_ID"},
		{name: "encoded dot-dot agent", path: "/memory/..%2Fvictim/propose", body: good, auth: svc, status: 404}, // no such route
		{name: "dot-dot agent", path: "/memory/%2e%2e/propose", body: good, auth: svc, status: 400},
		{name: "NUL agent", path: "/memory/victim%00/propose", body: good, auth: svc, status: 400},
		{name: "cyrillic look-alike agent", path: "/memory/" + url.PathEscape("viсtim") + "/propose", body: good, auth: svc, status: 400, reason: "INVALID_AGENT_ID"},
		{name: "65-character agent", path: "/memory/" + strings.Repeat("a", 65) + "/propose", body: good, auth: svc, status: 400, reason: "INVALID_AGENT_ID"},
		{name: "body agent traversal", path: "/memory/propose", body: `{"agentId":"../victim","runId":"r","updates":[{"file":"facts.md","operation":"append","content":"- x"}]}`, auth: svc, status: 400, reason: "INVALID_AGENT_ID"},
		{name: "empty agent", path: "/memory/propose", body: `{"runId":"r","updates":[{"file":"facts.md","operation":"append","content":"- x"}]}`, auth: svc, status: 400, reason: "INVALID_AGENT_ID"},
		{name: "bad run id", path: P, body: `{"runId":"../../x","updates":[{"file":"facts.md","operation":"append","content":"- x"}]}`, auth: svc, status: 400},

		// Reads that try to leave the agent or the repository.
		{name: "read traversal agent", method: "GET", path: "/memory/..%2F..%2Fetc/read", auth: svc, status: 404}, // no such route
		{name: "read include traversal", method: "GET", path: "/memory/victim/read?includeFiles=../../etc/passwd", auth: svc, status: 400, reason: "INVALID_PATH"},
		{name: "read exclude absolute", method: "GET", path: "/memory/victim/read?excludeFiles=/etc/passwd", auth: svc, status: 400, reason: "INVALID_PATH"},
		{name: "diff file traversal", method: "GET", path: "/memory/victim/diff?files=../../../etc/passwd", auth: svc, status: 400},
		{name: "layer2 include traversal", method: "GET", path: "/memory/layer2?agent=victim&include=../../etc/passwd", auth: svc, status: 400},
		{name: "at traversal", method: "GET", path: "/memory/victim/read?at=../../HEAD", auth: svc, status: 404, reason: "REVISION_NOT_FOUND"},
		{name: "search path prefix traversal", method: "GET", path: "/memory/search?q=vault&path_prefix=../../", auth: svc, status: 400, reason: "INVALID_PATH"},
		{name: "entity traversal", method: "GET", path: "/entities/..%2F..%2Fetc%2Fpasswd", auth: svc, status: 404},

		// Unknown modes and operations, absurd numbers.
		{name: "unknown mode", method: "GET", path: "/memory/victim/read?mode=ultra", auth: svc, status: 400},
		{name: "unknown operation", path: P, body: propose("facts.md", "explode", "- x"), status: 400},
		{name: "missing operation", path: P, body: `{"runId":"r","updates":[{"file":"facts.md","content":"- x"}]}`, status: 400},
		{name: "restore is not proposable", path: P, body: propose("facts.md", "restore", "- x"), status: 400, reason: "INVALID_OPERATION"},
		{name: "delete is not proposable", path: P, body: propose("runs/run_seed.md", "delete", ""), status: 400, reason: "INVALID_OPERATION"},
		{name: "huge top_k", method: "GET", path: "/memory/search?q=vault&top_k=100000000", auth: svc, status: 400},
		{name: "negative top_k", method: "GET", path: "/memory/search?q=vault&top_k=-1", auth: svc, status: 400},
		{name: "negative budget", method: "GET", path: "/memory/context?agent=victim&budget=-5", auth: svc, status: 400},
		{name: "negative maxTokens", method: "GET", path: "/memory/victim/read?maxTokens=-1", auth: svc, status: 400},
		{name: "huge page size", method: "GET", path: "/memory/victim/history?pageSize=100000000", auth: svc, status: 400},
		{name: "51 updates", path: P, body: manyUpdates, status: 400},

		// Bodies: size, encoding, nesting, syntax, active content.
		{name: "oversized body", path: P, bodyReader: big(10 << 20), status: 413, reason: "REQUEST_TOO_LARGE"},
		{name: "invalid UTF-8", path: P, body: "{\"runId\":\"r\",\"reasoning\":\"\xff\xfe\"}", status: 400},
		{name: "NUL in content", path: P, body: propose("facts.md", "append", "- a\x00b"), status: 400},
		{name: "deeply nested JSON", path: P, body: strings.Repeat(`{"a":`, 1000) + "1" + strings.Repeat("}", 1000), status: 400},
		{name: "malformed JSON", path: P, body: `{"runId": "r", "updates": [`, status: 400},
		{name: "unknown field", path: P, body: `{"runId":"r","sudo":true}`, status: 400},
		{name: "script tag", path: P, body: propose("facts.md", "append", "- <script>alert(1)</script>"), status: 400, reason: "INVALID_CONTENT"},
		{name: "javascript link", path: P, body: propose("facts.md", "append", "- [click](javascript:alert(1))"), status: 400, reason: "INVALID_CONTENT"},
		{name: "event handler", path: P, body: propose("facts.md", "append", `- <img src=x onerror="alert(1)">`), status: 400, reason: "INVALID_CONTENT"},
		{name: "snapshot over its limit", path: P, body: propose("snapshot.md", "replace", "# S\n\n"+strings.Repeat("word ", 2500)), status: 400, reason: "TOKEN_LIMIT_EXCEEDED"},
		{name: "run over its limit", path: P, body: propose("runs/run_h.md", "write_run", "# R\n\n"+strings.Repeat("word ", 9000)), status: 400, reason: "TOKEN_LIMIT_EXCEEDED"},
		{name: "heading injection", path: P, body: `{"runId":"r","updates":[{"file":"facts.md","operation":"append","section":"Ops\n## Injected","content":"- x"}]}`, status: 400},

		// Tokens: missing, forged, expired, for someone else.
		{name: "no token", path: P, body: good, auth: "-", status: 401, reason: "UNAUTHENTICATED"},
		{name: "garbage token", path: P, body: good, auth: "Bearer not.a.jwt", status: 401, reason: "UNAUTHENTICATED"},
		{name: "basic scheme", path: P, body: good, auth: "Basic " + "YWRtaW46YWRtaW4=", status: 401, reason: "UNAUTHENTICATED"},
		{name: "forged with another key", path: P, body: good, auth: bearer(sign(t, jwt.SigningMethodHS256, otherKey, e.claims(nil))), status: 401, reason: "UNAUTHENTICATED"},
		{name: "alg none", path: P, body: good, auth: bearer(sign(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, e.claims(nil))), status: 401, reason: "UNAUTHENTICATED"},
		{name: "expired", path: P, body: good, auth: bearer(sign(t, jwt.SigningMethodHS256, e.secret, e.claims(func(c jwt.MapClaims) {
			c["exp"] = time.Now().Add(-time.Hour).Unix()
		}))), status: 401, reason: "TOKEN_EXPIRED"},
		{name: "not yet valid", path: P, body: good, auth: bearer(sign(t, jwt.SigningMethodHS256, e.secret, e.claims(func(c jwt.MapClaims) {
			c["nbf"] = time.Now().Add(time.Hour).Unix()
		}))), status: 401, reason: "UNAUTHENTICATED"},
		{name: "wrong audience", path: P, body: good, auth: bearer(sign(t, jwt.SigningMethodHS256, e.secret, e.claims(func(c jwt.MapClaims) {
			c["aud"] = "another-api"
		}))), status: 401, reason: "UNAUTHENTICATED"},
		{name: "wrong issuer", path: P, body: good, auth: bearer(sign(t, jwt.SigningMethodHS256, e.secret, e.claims(func(c jwt.MapClaims) {
			c["iss"] = "evil"
		}))), status: 401, reason: "UNAUTHENTICATED"},
		{name: "unknown role", path: P, body: good, auth: bearer(sign(t, jwt.SigningMethodHS256, e.secret, e.claims(func(c jwt.MapClaims) {
			c["roles"] = []string{"root"}
		}))), status: 401, reason: "UNAUTHENTICATED"},
		{name: "another agent's token", path: P, body: good, auth: intruder, status: 403, reason: "PERMISSION_DENIED"},
		{name: "reviewer cannot propose", path: P, body: good, auth: reviewer, status: 403, reason: "PERMISSION_DENIED"},
		{name: "agent cannot snapshot", path: "/memory/victim/snapshot", body: `{}`, auth: victim, status: 403, reason: "PERMISSION_DENIED"},
		{name: "agent cannot reindex", path: "/memory/reindex", body: `{}`, auth: victim, status: 403, reason: "PERMISSION_DENIED"},
		{name: "agent cannot approve", path: "/proposals/proposal_x:approve", body: `{}`, auth: victim, status: 403, reason: "PERMISSION_DENIED"},
	}
	require.GreaterOrEqual(t, len(cases), 50)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.method == "" {
				c.method = "POST"
			}
			switch c.auth {
			case "":
				c.auth = svc
			case "-":
				c.auth = ""
			}
			before := writeState(t, e.d)
			code, header, raw := e.do(t, c)
			require.Equal(t, c.status, code, raw)
			require.Equal(t, "application/json", header.Get("Content-Type"), raw)
			var body restError
			require.NoError(t, json.Unmarshal([]byte(raw), &body), raw)
			require.NotEmpty(t, body.Message, raw)
			require.NotEmpty(t, body.Details, raw)
			if c.reason != "" {
				require.Equal(t, c.reason, body.Details[0].Reason, raw)
			}
			require.NotContains(t, raw, "root:x:0:0", "nothing from the host's files")
			require.Equal(t, before, writeState(t, e.d), "nothing was written")
		})
	}

	t.Run("symlinks in the repository are never followed", func(t *testing.T) {
		before := writeState(t, e.d)
		code, resp := jsonCall(t, e.d, "GET", "/memory/layer2?agent=victim&include=runs", "", strings.TrimPrefix(svc, "Bearer "))
		require.Equal(t, http.StatusOK, code, resp)
		require.NotContains(t, fmt.Sprint(resp), "root:x:0:0")
		require.Equal(t, before, writeState(t, e.d))
	})

	t.Run("rate limit answers 429 with Retry-After", func(t *testing.T) {
		tok := bearer(e.mint(t, "flooder", []string{"victim"}, auth.RoleAgent))
		before := writeState(t, e.d)
		var code int
		var header http.Header
		for range 500 {
			code, header, _ = e.do(t, hostileCase{method: "GET", path: "/memory/victim/read", auth: tok})
			if code == http.StatusTooManyRequests {
				break
			}
		}
		require.Equal(t, http.StatusTooManyRequests, code)
		secs, err := strconv.Atoi(header.Get("Retry-After"))
		require.NoError(t, err)
		require.Positive(t, secs)
		require.Equal(t, before, writeState(t, e.d))
	})
}
