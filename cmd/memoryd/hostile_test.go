package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	memoryv1 "github.com/garden-bloom/memory/gen/go/gardenbloom/memory/v1"
	"github.com/garden-bloom/memory/pkg/apierr"
	"github.com/garden-bloom/memory/pkg/auth"
	"github.com/garden-bloom/memory/pkg/proposalstore"
)

// Hostile input (issues #8 and #25): every case sends something hostile and
// gets the precise answer — HTTP status (or gRPC code), ErrorInfo reason and,
// where the docs say so (docs/api.md), the field or parameter named — and changes
// nothing: neither the repository's refs nor the proposals (in the store and
// as GET /proposals lists them). Answers to another agent's token never hold
// the victim's words. The cases are grouped by threat, one subtest per
// group (hostile_cases_test.go, hostile_flood_test.go).

const (
	hostileIssuer   = "gb-hostile-test"
	hostileAudience = "memory-api"

	// victimWord is only in the victim's memory: an answer to anyone else
	// that holds it leaked the victim's memory.
	victimWord = "obsidian"
	// hostileBodyLimit and hostileGRPCLimit are the suite's
	// --rest-max-body-bytes and --grpc-max-recv-bytes, small so that the
	// size cases stay cheap under -race; above the largest field a
	// proposal may carry (256 KiB of content).
	hostileBodyLimit = 1 << 20
	hostileGRPCLimit = 2 << 20
)

// hostileEnv is an in-process suite with issuer and audience checks on, a
// JWKS with an RSA and an EC key besides the HS256 secret, and two agents:
// "victim", whose memory (facts with a wiki link, a decision, a run, an open
// loop), pending proposals (one ordinary, one changing its policy, one
// staged) and snapshot the cases aim at, and "intruder", whose token the
// cross-agent cases use. A person also committed a symlink that points out
// of the repository.
type hostileEnv struct {
	d      *deployment
	signer *auth.Signer
	secret []byte
	rsaKey *rsa.PrivateKey // "rsa-1" in the JWKS
	ecKey  *ecdsa.PrivateKey
	// rsaPublicPEM is the RSA key's public half as a PEM file: what an
	// attacker who read the JWKS would try as an HMAC secret.
	rsaPublicPEM []byte

	pending, policy, staged string // victim's proposals that wait
	intruderProposal        string
	victimCommit            string // main after the seed
	canary                  string // a folder an injected git option would write to
	jwksPath                string
}

func newHostileEnv(t *testing.T) *hostileEnv {
	t.Helper()
	e := &hostileEnv{canary: t.TempDir(), jwksPath: filepath.Join(t.TempDir(), "jwks.json")}
	e.writeJWKS(t)
	e.d = startInProcessWith(t, "--auto-approve-default", "--auth-issuer", hostileIssuer, "--auth-audience", hostileAudience,
		"--auth-jwks-file", e.jwksPath,
		"--rate-limit", "0", // the flooding group has a server of its own
		"--rest-max-body-bytes", fmt.Sprint(hostileBodyLimit), "--grpc-max-recv-bytes", fmt.Sprint(hostileGRPCLimit))
	d := e.d
	var err error
	e.secret, err = auth.LoadSecret(filepath.Join(d.dataDir, "auth.secret"))
	require.NoError(t, err)
	e.signer, err = auth.NewSigner(e.secret, auth.WithSignerIssuer(hostileIssuer), auth.WithSignerAudience(hostileAudience))
	require.NoError(t, err)

	svc := e.mint(t, "orchestrator", []string{"*"}, auth.RoleService)
	admin := e.mint(t, "ops", []string{"*"}, auth.RoleAdmin)
	proposeOK := func(path, body string) string {
		t.Helper()
		code, resp := jsonCall(t, d, "POST", path, body, svc)
		require.Equal(t, http.StatusOK, code, resp)
		return resp["proposalId"].(string)
	}
	applied := func(id string) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, got := jsonCall(t, d, "GET", "/proposals/"+id, "", svc)
			return got["status"] == "applied"
		}, 20*time.Second, 10*time.Millisecond, "proposal %s is applied", id)
	}
	applied(proposeOK("/memory/victim/propose", `{"runId":"run_seed","reasoning":"seed",
	  "updates":[{"file":"facts.md","operation":"append","section":"Secrets","content":"- the vault is in the basement\n- [[Vault Basement]] keeps the `+victimWord+` key"},
	             {"file":"snapshot.md","operation":"replace","content":"# Snapshot: victim\n\nSeeded.\n"},
	             {"file":"open_loops.md","operation":"open","content":"Move the `+victimWord+` key","loopPriority":"normal"},
	             {"file":"decisions.md","operation":"add_decision","decision":{"title":"Obsidian Key Custody","status":"accepted",
	                "context":"the [[Vault Basement]] needs a keeper","decision":"keep it","rationale":"`+victimWord+` reasons","consequences":"watch it"}},
	             {"file":"runs/run_seed.md","operation":"write_run","content":"# Run: run_seed\n\n`+victimWord+` run notes\n"}]}`))
	applied(proposeOK("/memory/intruder/propose", `{"runId":"run_i1","reasoning":"seed",
	  "updates":[{"file":"snapshot.md","operation":"replace","content":"# Snapshot: intruder\n\nIntruder.\n"},
	             {"file":"facts.md","operation":"append","section":"Tools","content":"- [[Intruder Tool]] is blunt"}]}`))
	// Proposals of the victim that wait: high priority always waits for a
	// person, a policy change for an admin, a staged one for commit-session.
	e.pending = proposeOK("/memory/victim/propose", `{"runId":"run_seed2","priority":"high",
	  "updates":[{"file":"facts.md","operation":"append","section":"Secrets","content":"- pending `+victimWord+` fact"}]}`)
	e.policy = proposeOK("/memory/victim/propose", `{"runId":"run_seed3",
	  "updates":[{"file":"policy.json","operation":"replace","content":"{\"autoApprove\": true, \"reviewers\": [\"alice\"]}"}]}`)
	code, resp := jsonCall(t, d, "POST", "/v1/memory/victim/process-session", `{"runId":"run_seed4",
	  "updates":[{"file":"facts.md","operation":"append","section":"Secrets","content":"- staged `+victimWord+` fact"}]}`, svc)
	require.Equal(t, http.StatusOK, code, resp)
	e.staged = resp["proposalId"].(string)
	e.intruderProposal = proposeOK("/memory/intruder/propose", `{"runId":"run_i2","priority":"high",
	  "updates":[{"file":"facts.md","operation":"append","section":"Tools","content":"- a pending intruder fact"}]}`)
	code, resp = jsonCall(t, d, "POST", "/memory/victim/snapshot", `{"label":"seed-snap"}`, admin)
	require.Equal(t, http.StatusOK, code, resp)

	// A person commits a symlink that points out of the repository.
	work := t.TempDir()
	bare := filepath.Join(d.dataDir, "memory.git")
	gitIn := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=mallory", "GIT_AUTHOR_EMAIL=m@example.org",
			"GIT_COMMITTER_NAME=mallory", "GIT_COMMITTER_EMAIL=m@example.org")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "git %v: %s", args, out)
		return strings.TrimSpace(string(out))
	}
	gitIn(work, "clone", "-q", bare, "wt")
	wt := filepath.Join(work, "wt")
	require.NoError(t, os.MkdirAll(filepath.Join(wt, "memory/victim/runs"), 0o755))
	require.NoError(t, os.Symlink("../../../../../../../../etc/passwd", filepath.Join(wt, "memory/victim/runs/run_link.md")))
	gitIn(wt, "add", "-A")
	gitIn(wt, "commit", "-q", "-m", "a symlink")
	gitIn(wt, "push", "-q", "origin", "HEAD:main")
	e.victimCommit = gitIn(wt, "rev-parse", "HEAD")

	// The read plane follows: the victim's words are searchable and its
	// entities known, so a leak would show.
	require.Eventually(t, func() bool {
		code, res := jsonCall(t, d, "GET", "/memory/search?q="+victimWord+"&agent=victim", "", svc)
		if code != http.StatusOK || len(res["results"].([]any)) == 0 {
			return false
		}
		for _, ent := range []string{"vault-basement", "intruder-tool"} {
			if code, _ := jsonCall(t, d, "GET", "/entities/"+ent, "", svc); code != http.StatusOK {
				return false
			}
		}
		code, res = jsonCall(t, d, "GET", "/memory/index/status", "", svc)
		return code == http.StatusOK && res["lastCommit"] == e.victimCommit
	}, 30*time.Second, 20*time.Millisecond, "the read plane follows the seed")
	return e
}

// writeJWKS makes the RSA and EC keys and writes their public halves as the
// JWKS file newHostileEnv passes to --auth-jwks-file.
func (e *hostileEnv) writeJWKS(t *testing.T) {
	t.Helper()
	var err error
	e.rsaKey, err = rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	e.ecKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKIXPublicKey(&e.rsaKey.PublicKey)
	require.NoError(t, err)
	e.rsaPublicPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	b64 := base64.RawURLEncoding.EncodeToString
	fixed := func(n *big.Int) string { return b64(n.FillBytes(make([]byte, 32))) }
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{
		{"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256", "n": b64(e.rsaKey.N.Bytes()), "e": b64(big.NewInt(int64(e.rsaKey.E)).Bytes())},
		{"kty": "EC", "kid": "ec-1", "use": "sig", "alg": "ES256", "crv": "P-256", "x": fixed(e.ecKey.X), "y": fixed(e.ecKey.Y)},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(e.jwksPath, jwks, 0o600))
}

// mint returns a token (without "Bearer ") signed with the suite's secret.
func (e *hostileEnv) mint(t *testing.T, sub string, agents []string, roles ...auth.Role) string {
	t.Helper()
	tok, err := e.signer.Mint(sub, roles, agents, time.Hour)
	require.NoError(t, err)
	return tok
}

// sign signs arbitrary claims with key and method, as an attacker would.
func sign(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims) string {
	t.Helper()
	return signWith(t, method, key, claims, nil)
}

// signWith is sign with extra JOSE header fields.
func signWith(t *testing.T, method jwt.SigningMethod, key any, claims jwt.MapClaims, header map[string]any) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, claims)
	for k, v := range header {
		tok.Header[k] = v
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// unsignedJWT is header.payload.sig with the given parts, for tokens no
// library would make.
func unsignedJWT(t *testing.T, header map[string]any, claims jwt.MapClaims, sig string) string {
	t.Helper()
	h, err := json.Marshal(header)
	require.NoError(t, err)
	c, err := json.Marshal(claims)
	require.NoError(t, err)
	return base64.RawURLEncoding.EncodeToString(h) + "." + base64.RawURLEncoding.EncodeToString(c) + "." + sig
}

// claims are valid service claims for the suite's issuer and audience,
// changed by mod.
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

// state is writeState plus the proposals as the API lists them (id,
// agent, status), whatever the store keeps on disk.
func (e *hostileEnv) state(t *testing.T) string {
	t.Helper()
	code, resp := jsonCall(t, e.d, "GET", "/proposals?pageSize=500", "", e.mint(t, "state-reader", []string{"*"}, auth.RoleService))
	require.Equal(t, http.StatusOK, code, resp)
	var lines []string
	for _, p := range resp["proposals"].([]any) {
		p := p.(map[string]any)
		lines = append(lines, fmt.Sprintf("%v %v %v", p["proposalId"], p["agentId"], p["status"]))
	}
	slices.Sort(lines)
	return writeState(t, e.d) + "\n--- listed:\n" + strings.Join(lines, "\n")
}

// settled is state once earlier writes have landed: no proposal is being
// applied and two reads 100 ms apart agree.
func (e *hostileEnv) settled(t *testing.T) string {
	t.Helper()
	prev := e.state(t)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		cur := e.state(t)
		if cur == prev && !strings.Contains(cur, " approved") && !strings.Contains(cur, " applying") {
			return cur
		}
		prev = cur
	}
	return prev
}

// hostileCase is one hostile request and the answer it must get. A case is
// a REST request (method, path, body, headers), a raw HTTP/1.1 request
// (raw), or a direct gRPC call (rpc).
type hostileCase struct {
	name         string
	method, path string
	body         string
	bodyReader   func() io.Reader // instead of body (sizes, chunking)
	contentType  string           // "" = application/json
	auth         string           // the whole Authorization header; "" = the service token, "-" = none
	header       http.Header      // more headers, added to the request
	raw          string           // a whole HTTP/1.1 request, sent as is ("%TOKEN%" = the service token)
	rpc          func(ctx context.Context) error
	rpcMD        []string // metadata pairs of rpc; nil = the service token

	status    int        // the HTTP status
	code      codes.Code // the gRPC code: of rpc, or the "code" of a REST error body when set
	reason    string     // the ErrorInfo reason
	meta      map[string]string
	challenge string // the WWW-Authenticate header starts with this
	// plain marks an answer from net/http itself or the git endpoint,
	// neither of which is the REST API: a status and a text body.
	plain bool
	// leaks must not appear in the answer (case-insensitively); intruder
	// tokens add the victim's words.
	leaks []string
	// ok checks a 2xx answer.
	ok func(t *testing.T, raw string)
	// writes marks a hostile request the docs say is accepted,
	// neutralized: the state may change, and after checks the result.
	writes bool
	after  func(t *testing.T)
}

// hAnswer is what came back: an answer, or a connection closed without one.
type hAnswer struct {
	status int
	header http.Header
	raw    string
	closed bool // the connection closed without an answer
	// closing: the answer said the connection closes after it
	// (Connection: close, which net/http takes out of the header).
	closing bool
}

func (e *hostileEnv) do(t *testing.T, c hostileCase) hAnswer {
	t.Helper()
	if c.raw != "" {
		return hostileRaw(t, e.d.httpAddr, strings.ReplaceAll(c.raw, "%TOKEN%", e.mint(t, "orchestrator", []string{"*"}, auth.RoleService)), nil)
	}
	var body io.Reader
	if c.body != "" {
		body = strings.NewReader(c.body)
	}
	if c.bodyReader != nil {
		body = c.bodyReader()
	}
	req, err := http.NewRequest(c.method, "http://"+e.d.httpAddr+c.path, body)
	require.NoError(t, err)
	if body != nil {
		ct := c.contentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	for k, vs := range c.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	return hAnswer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
}

// hostileRaw sends req on a new connection (from local, when set) and reads
// the answer; closed reports a connection closed without one.
func hostileRaw(t *testing.T, addr, req string, local net.Addr) hAnswer {
	t.Helper()
	dialer := net.Dialer{Timeout: 5 * time.Second, LocalAddr: local}
	c, err := dialer.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	_, err = io.WriteString(c, req)
	if err != nil {
		return hAnswer{closed: true}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return hAnswer{closed: true}
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	return hAnswer{status: resp.StatusCode, header: resp.Header, raw: string(raw), closing: resp.Close}
}

// hErrorBody is the REST edge's error shape.
type hErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Type     string            `json:"@type"`
		Reason   string            `json:"reason"`
		Domain   string            `json:"domain"`
		Metadata map[string]string `json:"metadata"`
	} `json:"details"`
}

// run sends c and checks its answer and that nothing changed.
func (e *hostileEnv) run(t *testing.T, c hostileCase, defaultAuth string) {
	t.Helper()
	if c.method == "" {
		c.method = "POST"
	}
	switch c.auth {
	case "":
		c.auth = defaultAuth
	case "-":
		c.auth = ""
	}
	before := e.state(t)
	var raw string
	if c.rpc != nil {
		md := c.rpcMD
		if md == nil {
			md = []string{"authorization", defaultAuth}
		}
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), md...), 20*time.Second)
		defer cancel()
		err := c.rpc(ctx)
		raw = fmt.Sprint(err)
		require.Equal(t, c.code, status.Code(err), "%v", err)
		if c.code != codes.OK {
			require.Equal(t, c.reason, apierr.Info(err).GetReason(), "%v", err)
			if c.reason != "" {
				require.Equal(t, apierr.Domain, apierr.Info(err).GetDomain(), "%v", err)
			}
			for k, v := range c.meta {
				require.Equal(t, v, apierr.Info(err).GetMetadata()[k], "metadata %s: %v", k, err)
			}
		}
	} else {
		a := e.do(t, c)
		raw = a.raw
		require.False(t, a.closed, "the connection closed without an answer")
		require.Equal(t, c.status, a.status, raw)
		switch {
		case c.plain:
			require.NotEqual(t, "application/json", a.header.Get("Content-Type"), raw)
		case a.status >= 300:
			require.Equal(t, "application/json", a.header.Get("Content-Type"), raw)
			var b hErrorBody
			require.NoError(t, json.Unmarshal([]byte(raw), &b), raw)
			require.NotEmpty(t, b.Message, raw)
			require.NotEmpty(t, b.Details, raw)
			require.Equal(t, "type.googleapis.com/google.rpc.ErrorInfo", b.Details[0].Type, raw)
			require.Equal(t, apierr.Domain, b.Details[0].Domain, raw)
			require.NotEmpty(t, c.reason, "a refused case names its reason")
			require.Equal(t, c.reason, b.Details[0].Reason, raw)
			if c.code != codes.OK {
				require.Equal(t, int(c.code), b.Code, raw)
			}
			for k, v := range c.meta {
				require.Contains(t, b.Details[0].Metadata, k, raw)
				require.Equal(t, v, b.Details[0].Metadata[k], "metadata %s: %s", k, raw)
			}
		default:
			if c.ok != nil {
				c.ok(t, raw)
			}
		}
		switch got := a.header.Get("WWW-Authenticate"); c.challenge {
		case "":
		case `Bearer realm="garden-bloom-memory"`: // no error: no bearer token was sent
			require.Equal(t, c.challenge, got)
		default:
			require.True(t, strings.HasPrefix(got, c.challenge), "WWW-Authenticate %q, want %q…", got, c.challenge)
		}
	}
	lower := strings.ToLower(raw)
	for _, w := range append([]string{"root:x:0:0"}, c.leaks...) {
		require.NotContains(t, lower, strings.ToLower(w), "the answer leaks %q", w)
	}
	if c.writes {
		if c.after != nil {
			c.after(t)
		}
		e.settled(t) // the next case's "nothing changed" starts from here
		return
	}
	require.Equal(t, before, e.state(t), "nothing was written")
	if c.after != nil {
		c.after(t)
	}
}

// victimLeaks are what an answer to another agent's token must never hold.
var victimLeaks = []string{victimWord, "memory/victim/", "the vault is in the basement"}

// hBody is v as JSON.
func hBody(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// hUpd is one file update.
func hUpd(file, op, content string, more ...any) map[string]any {
	u := map[string]any{"file": file, "operation": op, "content": content}
	for i := 0; i+1 < len(more); i += 2 {
		u[more[i].(string)] = more[i+1]
	}
	return u
}

// hProposal is a propose body (run "run_h") with updates, changed by the
// key/value pairs of more.
func hProposal(updates []map[string]any, more ...any) string {
	p := map[string]any{"runId": "run_h", "reasoning": "hostile", "updates": updates}
	for i := 0; i+1 < len(more); i += 2 {
		if more[i+1] == nil {
			delete(p, more[i].(string))
			continue
		}
		p[more[i].(string)] = more[i+1]
	}
	return hBody(p)
}

// hOne is a propose body with one update.
func hOne(file, op, content string, more ...any) string {
	return hProposal([]map[string]any{hUpd(file, op, content, more...)})
}

// TestHostileInput runs every group of hostile cases against one suite
// (the slow and flooding clients get one of their own, with small limits).
func TestHostileInput(t *testing.T) {
	e := newHostileEnv(t)
	svc := "Bearer " + e.mint(t, "orchestrator", []string{"*"}, auth.RoleService)
	groups := e.groups(t)
	total := 0
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			e.settled(t)
			names := map[string]bool{}
			for _, c := range g.cases {
				require.False(t, names[c.name], "case %q twice in %s", c.name, g.name)
				names[c.name] = true
				if !t.Run(c.name, func(t *testing.T) {
					e.run(t, c, svc)
				}) {
					e.settled(t) // a case that wrote must not fail the next ones
				}
			}
			if g.after != nil {
				g.after(t)
			}
		})
		total += len(g.cases)
		t.Logf("%-30s %3d cases", g.name, len(g.cases))
	}

	t.Run("slow and flooding clients", func(t *testing.T) {
		n := testHostileFlood(t)
		total += n
		t.Logf("%-30s %3d cases", "slow and flooding clients", n)
	})
	t.Logf("%-30s %3d cases", "total", total)
	require.Greater(t, total, 150)
}

// hostileGroup is one threat's cases.
type hostileGroup struct {
	name  string
	cases []hostileCase
	after func(t *testing.T) // checks once every case ran
}

// grpcClients are the suite's gRPC clients.
func (e *hostileEnv) grpcClients(t *testing.T) (memoryv1.ContextAssemblyServiceClient, memoryv1.SearchIndexServiceClient,
	memoryv1.EntityGraphServiceClient, memoryv1.ProposalApplyServiceClient) {
	conn := dial(t, e.d.grpcAddr[memoryv1.ProposalApplyService_ServiceDesc.ServiceName])
	return memoryv1.NewContextAssemblyServiceClient(conn), memoryv1.NewSearchIndexServiceClient(conn),
		memoryv1.NewEntityGraphServiceClient(conn), memoryv1.NewProposalApplyServiceClient(conn)
}
