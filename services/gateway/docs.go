package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strings"
	"time"
)

// DocsPath serves a browsable reference of the REST API, without a token:
// the OpenAPI document rendered as one HTML page by the server, from this
// binary alone (no JavaScript, no CDN, no external stylesheet).
const DocsPath = "/docs"

// apiDocsHandler serves the OpenAPI document at OpenAPIPath and its HTML
// rendering at DocsPath. The page is rendered once, here; a document that
// cannot be rendered makes /docs answer 500 with the reason, while
// /openapi.json is still served.
func apiDocsHandler(doc []byte) http.Handler {
	spec := openAPIHandler(doc)
	page, err := renderDocs(doc)
	var docs http.Handler
	if err != nil {
		msg := "the API reference cannot be rendered: " + err.Error()
		docs = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, msg, http.StatusInternalServerError)
		})
	} else {
		sum := sha256.Sum256(page)
		etag := `"` + hex.EncodeToString(sum[:16]) + `"`
		docs = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("ETag", etag)
			h.Set("Cache-Control", "no-cache")
			// Everything is inline: nothing else may load or run.
			h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
			h.Set("X-Content-Type-Options", "nosniff")
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(page))
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == DocsPath {
			docs.ServeHTTP(w, r)
			return
		}
		spec.ServeHTTP(w, r)
	})
}

// The parts of an OpenAPI 3.1 document the page shows.
type (
	oasDoc struct {
		Info struct {
			Title       string `json:"title"`
			Version     string `json:"version"`
			Summary     string `json:"summary"`
			Description string `json:"description"`
		} `json:"info"`
		Tags []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tags"`
		Security   []map[string][]string       `json:"security"`
		Paths      map[string]map[string]oasOp `json:"paths"`
		Components struct {
			Schemas         map[string]*oasSchema     `json:"schemas"`
			Responses       map[string]oasResponse    `json:"responses"`
			SecuritySchemes map[string]map[string]any `json:"securitySchemes"`
		} `json:"components"`
	}
	oasOp struct {
		OperationID string                 `json:"operationId"`
		Summary     string                 `json:"summary"`
		Description string                 `json:"description"`
		Tags        []string               `json:"tags"`
		Security    *[]map[string][]string `json:"security"`
		Parameters  []struct {
			Name        string     `json:"name"`
			In          string     `json:"in"`
			Required    bool       `json:"required"`
			Description string     `json:"description"`
			Schema      *oasSchema `json:"schema"`
		} `json:"parameters"`
		RequestBody *struct {
			Content map[string]struct {
				Schema *oasSchema `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
		Responses map[string]oasResponse `json:"responses"`
	}
	oasResponse struct {
		Ref         string `json:"$ref"`
		Description string `json:"description"`
		Content     map[string]struct {
			Schema *oasSchema `json:"schema"`
		} `json:"content"`
	}
	oasSchema struct {
		Ref                  string                `json:"$ref"`
		Type                 any                   `json:"type"`
		Format               string                `json:"format"`
		Description          string                `json:"description"`
		Enum                 []any                 `json:"enum"`
		Items                *oasSchema            `json:"items"`
		Properties           map[string]*oasSchema `json:"properties"`
		AdditionalProperties any                   `json:"additionalProperties"`
		Required             []string              `json:"required"`
	}
)

// Page model.
type (
	docsPage struct {
		Title, Version, Summary, Description string
		Auth                                 string
		Tags                                 []docsTag
		Schemas                              []docsSchema
	}
	docsTag struct {
		Name, Description string
		Ops               []docsOp
	}
	docsOp struct {
		Anchor, Method, Path, Summary, Description string
		Public                                     bool
		Params                                     []docsField
		Body                                       template.HTML
		Responses                                  []docsResponse
	}
	docsResponse struct {
		Code, Description string
		Type              template.HTML
	}
	docsField struct {
		Name, In, Description string
		Required              bool
		Type                  template.HTML
		Enum                  []string
	}
	docsSchema struct {
		Name, Description string
		Type              template.HTML
		Fields            []docsField
		Enum              []string
	}
)

var methodOrder = map[string]int{"get": 0, "put": 1, "post": 2, "patch": 3, "delete": 4, "head": 5, "options": 6}

// renderDocs renders the OpenAPI document doc as the reference page.
func renderDocs(doc []byte) ([]byte, error) {
	var d oasDoc
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("OpenAPI document: %w", err)
	}
	page := docsPage{Title: d.Info.Title, Version: d.Info.Version, Summary: d.Info.Summary, Description: d.Info.Description}
	for name, s := range d.Components.SecuritySchemes {
		page.Auth += fmt.Sprintf("%s: %v %v (%v). ", name, s["type"], s["scheme"], s["bearerFormat"])
	}
	byTag := map[string]*docsTag{}
	var order []string
	for _, t := range d.Tags {
		byTag[t.Name] = &docsTag{Name: t.Name, Description: t.Description}
		order = append(order, t.Name)
	}
	paths := make([]string, 0, len(d.Paths))
	for p := range d.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		methods := make([]string, 0, len(d.Paths[p]))
		for m := range d.Paths[p] {
			methods = append(methods, m)
		}
		sort.Slice(methods, func(i, j int) bool { return methodOrder[methods[i]] < methodOrder[methods[j]] })
		for _, m := range methods {
			op := d.Paths[p][m]
			o := docsOp{
				Anchor:      "op-" + op.OperationID,
				Method:      strings.ToUpper(m),
				Path:        p,
				Summary:     op.Summary,
				Description: op.Description,
				Public:      op.Security != nil && len(*op.Security) == 0,
			}
			if o.Description == o.Summary {
				o.Description = ""
			}
			for _, prm := range op.Parameters {
				f := docsField{Name: prm.Name, In: prm.In, Description: prm.Description, Required: prm.Required, Type: typeHTML(prm.Schema)}
				if prm.Schema != nil {
					f.Enum = enumStrings(prm.Schema.Enum)
				}
				o.Params = append(o.Params, f)
			}
			if op.RequestBody != nil {
				if c, ok := op.RequestBody.Content["application/json"]; ok {
					o.Body = typeHTML(c.Schema)
				}
			}
			codes := make([]string, 0, len(op.Responses))
			for c := range op.Responses {
				codes = append(codes, c)
			}
			sort.Strings(codes) // "default" sorts after the numbers
			for _, c := range codes {
				r := op.Responses[c]
				if name, ok := strings.CutPrefix(r.Ref, "#/components/responses/"); ok {
					r = d.Components.Responses[name]
				}
				resp := docsResponse{Code: c, Description: r.Description}
				for ct, mt := range r.Content {
					if ct == "application/json" {
						resp.Type = typeHTML(mt.Schema)
					} else if resp.Type == "" {
						resp.Type = template.HTML(template.HTMLEscapeString(ct))
					}
				}
				o.Responses = append(o.Responses, resp)
			}
			tag := "Other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			if byTag[tag] == nil {
				byTag[tag] = &docsTag{Name: tag}
				order = append(order, tag)
			}
			byTag[tag].Ops = append(byTag[tag].Ops, o)
		}
	}
	for _, t := range order {
		if len(byTag[t].Ops) > 0 {
			page.Tags = append(page.Tags, *byTag[t])
		}
	}
	names := make([]string, 0, len(d.Components.Schemas))
	for n := range d.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := d.Components.Schemas[n]
		ds := docsSchema{Name: n, Description: s.Description, Type: typeHTML(s), Enum: enumStrings(s.Enum)}
		props := make([]string, 0, len(s.Properties))
		for p := range s.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		for _, p := range props {
			ps := s.Properties[p]
			f := docsField{Name: p, Description: ps.Description, Type: typeHTML(ps), Enum: enumStrings(ps.Enum)}
			for _, r := range s.Required {
				f.Required = f.Required || r == p
			}
			ds.Fields = append(ds.Fields, f)
		}
		page.Schemas = append(page.Schemas, ds)
	}
	var buf bytes.Buffer
	if err := docsTemplate.Execute(&buf, page); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// typeHTML is a short type expression for s, with schema names linked.
func typeHTML(s *oasSchema) template.HTML {
	if s == nil {
		return ""
	}
	if name, ok := strings.CutPrefix(s.Ref, "#/components/schemas/"); ok {
		return template.HTML(`<a href="#schema-` + template.HTMLEscapeString(name) + `">` + template.HTMLEscapeString(name) + `</a>`)
	}
	t := fmt.Sprint(s.Type)
	if s.Type == nil {
		t = "any"
	}
	switch {
	case t == "array":
		return "array of " + typeHTML(s.Items)
	case t == "object" && s.Properties == nil:
		if ap, ok := s.AdditionalProperties.(map[string]any); ok {
			raw, _ := json.Marshal(ap)
			var inner oasSchema
			if json.Unmarshal(raw, &inner) == nil {
				return "map of string to " + typeHTML(&inner)
			}
		}
	}
	out := template.HTMLEscapeString(t)
	if s.Format != "" {
		out += " <small>(" + template.HTMLEscapeString(s.Format) + ")</small>"
	}
	return template.HTML(out)
}

func enumStrings(vs []any) []string {
	var out []string
	for _, v := range vs {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

var docsTemplate = template.Must(template.New("docs").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} {{.Version}}</title>
<style>
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d2330;display:flex}
nav{width:18rem;flex:none;height:100vh;overflow:auto;position:sticky;top:0;background:#f4f6f8;border-right:1px solid #dde2e8;padding:1rem;box-sizing:border-box;font-size:13px}
nav a{color:#1d2330;text-decoration:none;display:block;padding:1px 0}
nav h3{margin:1rem 0 .25rem;font-size:13px;text-transform:uppercase;color:#5a6472}
main{flex:1;min-width:0;padding:1rem 2rem 4rem;max-width:70rem}
h1{margin:.2rem 0}h2{border-bottom:1px solid #dde2e8;padding-bottom:.2rem;margin-top:2.5rem}
section.op{border:1px solid #dde2e8;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
.m{display:inline-block;min-width:3.5rem;text-align:center;font-weight:600;border-radius:4px;padding:0 .4rem;color:#fff;background:#3b6fb6;font-size:13px}
.m-POST{background:#2f8a4c}.m-DELETE{background:#b63b3b}.m-PUT,.m-PATCH{background:#a8741a}
code,.path{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
.path{font-weight:600}
table{border-collapse:collapse;width:100%;margin:.4rem 0;font-size:14px}
th,td{text-align:left;vertical-align:top;border-top:1px solid #e6e9ee;padding:.25rem .5rem}
th{background:#f4f6f8;font-weight:600}
.req{color:#b63b3b;font-size:12px}.pub{color:#2f8a4c;font-size:12px;font-weight:600}
.desc{white-space:pre-line}
.enum code{background:#eef1f5;border-radius:3px;padding:0 .25rem;margin-right:.2rem}
</style>
</head>
<body>
<nav>
<strong>{{.Title}}</strong> <small>{{.Version}}</small>
{{range .Tags}}<h3>{{.Name}}</h3>{{range .Ops}}<a href="#{{.Anchor}}"><code>{{.Method}}</code> {{.Path}}</a>{{end}}{{end}}
<h3>Schemas</h3>{{range .Schemas}}<a href="#schema-{{.Name}}">{{.Name}}</a>{{end}}
</nav>
<main>
<h1>{{.Title}}</h1>
<p>Version <strong>{{.Version}}</strong> · <a href="/openapi.json">OpenAPI 3.1 document</a>{{if .Summary}} · {{.Summary}}{{end}}</p>
<div class="desc">{{.Description}}</div>
<p><strong>Authentication:</strong> {{.Auth}}Send <code>Authorization: Bearer &lt;token&gt;</code> on every call not marked <span class="pub">no token</span>.</p>
{{range .Tags}}
<h2 id="tag-{{.Name}}">{{.Name}}</h2>
<div class="desc">{{.Description}}</div>
{{range .Ops}}
<section class="op" id="{{.Anchor}}">
<h3><span class="m m-{{.Method}}">{{.Method}}</span> <span class="path">{{.Path}}</span>{{if .Public}} <span class="pub">no token</span>{{end}}</h3>
<p>{{.Summary}}</p>
{{if .Description}}<div class="desc">{{.Description}}</div>{{end}}
{{if .Params}}<table><tr><th>Parameter</th><th>In</th><th>Type</th><th>Description</th></tr>
{{range .Params}}<tr><td><code>{{.Name}}</code>{{if .Required}} <span class="req">required</span>{{end}}</td><td>{{.In}}</td><td>{{.Type}}{{if .Enum}}<div class="enum">{{range .Enum}}<code>{{.}}</code>{{end}}</div>{{end}}</td><td class="desc">{{.Description}}</td></tr>
{{end}}</table>{{end}}
{{if .Body}}<p><strong>Request body</strong> (application/json): {{.Body}}</p>{{end}}
<table><tr><th>Status</th><th>Body</th><th>Description</th></tr>
{{range .Responses}}<tr><td><code>{{.Code}}</code></td><td>{{.Type}}</td><td>{{.Description}}</td></tr>
{{end}}</table>
</section>
{{end}}{{end}}
<h2 id="schemas">Schemas</h2>
{{range .Schemas}}
<section class="op" id="schema-{{.Name}}">
<h3>{{.Name}} <small>{{.Type}}</small></h3>
{{if .Description}}<div class="desc">{{.Description}}</div>{{end}}
{{if .Enum}}<p class="enum">{{range .Enum}}<code>{{.}}</code>{{end}}</p>{{end}}
{{if .Fields}}<table><tr><th>Field</th><th>Type</th><th>Description</th></tr>
{{range .Fields}}<tr><td><code>{{.Name}}</code>{{if .Required}} <span class="req">required</span>{{end}}</td><td>{{.Type}}{{if .Enum}}<div class="enum">{{range .Enum}}<code>{{.}}</code>{{end}}</div>{{end}}</td><td class="desc">{{.Description}}</td></tr>
{{end}}</table>{{end}}
</section>
{{end}}
</main>
</body>
</html>
`))
