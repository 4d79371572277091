package server_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sema-agent/sema/client"
	"github.com/sema-agent/sema/model/scripted"
)

// openAPIDoc is the repository's document, decoded.
func openAPIDoc(t *testing.T) (raw []byte, doc map[string]any) {
	t.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return raw, doc
}

// servedRoutes reads the "METHOD /path" patterns routes() registers from the source, so
// a route added to the code and not to the document (or the other way) fails here.
func servedRoutes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "api.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "routes" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				t.Fatalf("a route's pattern is not a literal: %#v", call.Args[0])
			}
			p, _ := strconv.Unquote(lit.Value)
			if p != "/" { // the catch-all answers 404
				out = append(out, p)
			}
			return true
		})
		return false
	})
	slices.Sort(out)
	if len(out) < 10 {
		t.Fatalf("found only %d routes in api.go: %v", len(out), out)
	}
	return out
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	_, doc := openAPIDoc(t)
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	var documented []string
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			documented = append(documented, strings.ToUpper(method)+" "+path)
			o := op.(map[string]any)
			if o["operationId"] == nil || o["responses"] == nil {
				t.Errorf("%s %s lacks an operationId or responses", method, path)
			}
		}
	}
	slices.Sort(documented)
	if served := servedRoutes(t); !slices.Equal(served, documented) {
		t.Fatalf("routes and document differ:\nserved     %v\ndocumented %v", served, documented)
	}
}

func TestOpenAPIRefsResolve(t *testing.T) {
	_, doc := openAPIDoc(t)
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				n++
				if _, ok := pointer(doc, ref); !ok {
					t.Errorf("$ref %s resolves to nothing", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if n == 0 {
		t.Fatal("the document has no $ref at all")
	}
}

// pointer resolves a local JSON pointer ("#/a/b").
func pointer(doc map[string]any, ref string) (any, bool) {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = doc
	for _, part := range strings.Split(rest, "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// TestOpenAPISchemasMatchTheClient holds each schema to the Go type the client sends or
// receives: the same properties, and — for what the service answers — every field it
// always writes is required.
func TestOpenAPISchemasMatchTheClient(t *testing.T) {
	_, doc := openAPIDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	types := map[string]struct {
		v        any
		response bool
	}{
		"TaskSpec": {client.TaskSpec{}, false}, "Decision": {client.Decision{}, false},
		"Message": {client.Message{}, false}, "Fork": {client.Fork{}, false}, "Rewind": {client.Rewind{}, false},
		"Task": {client.Task{}, true}, "Checkpoint": {client.Checkpoint{}, true}, "Session": {client.Session{}, true},
		"Transcript": {client.Transcript{}, true}, "Error": {client.Error{}, true},
	}
	for name, ty := range types {
		schema, ok := schemas[name].(map[string]any)
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		var props []string
		for p := range schema["properties"].(map[string]any) {
			props = append(props, p)
		}
		slices.Sort(props)
		var required []string
		for _, r := range asList(schema["required"]) {
			required = append(required, r.(string))
		}
		fields, always := jsonFields(reflect.TypeOf(ty.v))
		if !slices.Equal(props, fields) {
			t.Errorf("%s: schema properties %v, Go fields %v", name, props, fields)
		}
		for _, r := range required {
			if !slices.Contains(fields, r) {
				t.Errorf("%s: requires %s, which is no field", name, r)
			}
		}
		if ty.response {
			slices.Sort(required)
			if !slices.Equal(required, always) {
				t.Errorf("%s: schema requires %v, the service always writes %v", name, required, always)
			}
		} else if schema["additionalProperties"] != false {
			t.Errorf("%s: a request body refuses unknown fields; say additionalProperties: false", name)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// jsonFields is a struct's JSON names, and those without omitempty or omitzero.
func jsonFields(ty reflect.Type) (all, always []string) {
	for f := range ty.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			always = append(always, name)
		}
	}
	slices.Sort(all)
	slices.Sort(always)
	return all, always
}

// TestOpenAPIIsServed: GET /v1/openapi.json answers the repository's document byte for
// byte, without a token.
func TestOpenAPIIsServed(t *testing.T) {
	f := newFixture(t, "sqlite", noScript)
	raw, _ := openAPIDoc(t)
	resp, err := http.Get(f.http.URL + "/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, raw) || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json: %d %s, %d bytes (want %d)", resp.StatusCode, resp.Header.Get("Content-Type"), len(got), len(raw))
	}
}

func noScript(string) []scripted.Turn { return nil }
