package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/garden-bloom/memory/gen"
)

func TestDocsPage(t *testing.T) {
	srv := httptest.NewServer(apiDocsHandler(gen.OpenAPI))
	defer srv.Close()

	resp, err := http.Get(srv.URL + DocsPath)
	require.NoError(t, err)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
	page := string(raw)

	var doc struct {
		Info struct{ Title, Version string } `json:"info"`
	}
	require.NoError(t, json.Unmarshal(gen.OpenAPI, &doc))
	require.Contains(t, page, "<title>"+doc.Info.Title+" "+doc.Info.Version+"</title>")
	// Operations grouped by tag, with parameters, bodies and responses.
	for _, want := range []string{
		`<h2 id="tag-ProposalApplyService">ProposalApplyService</h2>`,
		`<span class="path">/memory/{agentId}/propose</span>`,
		`<span class="path">/proposals/{proposalId}:approve</span>`,
		`<span class="path">/health</span> <span class="pub">no token</span>`,
		`<a href="#schema-ProposeBody">ProposeBody</a>`,
		`<a href="#schema-Error">Error</a>`,
		`<section class="op" id="schema-ProposalStatus">`,
		`<code>applied</code>`,
		`<code>VERSION_CONFLICT</code>`,
		`<code>agentId</code> <span class="req">required</span></td><td>path</td>`,
	} {
		require.Contains(t, page, want)
	}
	// Self-contained: no script, and nothing loaded from anywhere else.
	require.NotContains(t, strings.ToLower(page), "<script")
	require.NotRegexp(t, regexp.MustCompile(`(?i)(src|href)="(https?:)?//`), page)
	require.NotContains(t, page, "<link")

	// Revalidation is cheap, like /openapi.json's.
	req, err := http.NewRequest(http.MethodGet, srv.URL+DocsPath, nil)
	require.NoError(t, err)
	req.Header.Set("If-None-Match", resp.Header.Get("ETag"))
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNotModified, resp.StatusCode)

	// The same handler still serves the document itself.
	resp, err = http.Get(srv.URL + OpenAPIPath)
	require.NoError(t, err)
	raw, err = io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, gen.OpenAPI, raw)
}

func TestDocsPageEscapes(t *testing.T) {
	page, err := renderDocs([]byte(`{"openapi":"3.1.0","info":{"title":"<script>alert(1)</script>","version":"1"},
		"paths":{"/x":{"get":{"operationId":"X","summary":"<b>s</b>","tags":["T"],"responses":{"200":{"description":"ok"}}}}}}`))
	require.NoError(t, err)
	require.NotContains(t, string(page), "<script>")
	require.NotContains(t, string(page), "<b>s</b>")
	require.Contains(t, string(page), "&lt;b&gt;s&lt;/b&gt;")

	_, err = renderDocs([]byte(`not json`))
	require.Error(t, err)
	srv := httptest.NewServer(apiDocsHandler([]byte(`not json`)))
	defer srv.Close()
	resp, err := http.Get(srv.URL + DocsPath)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode)
}
