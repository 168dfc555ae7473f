package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPAPI checks the status codes and bodies of the interface the
// linearizability harness relies on, through a follower.
func TestHTTPAPI(t *testing.T) {
	c := startCluster(t, 3)
	base := "http://" + c.Node(c.Leader()%3+1).HTTP
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	steps := []struct {
		method, path, body string
		code               int
		resp               string
	}{
		{"GET", "/kv/a", "", 404, ""},
		{"PUT", "/kv/a", "one", 204, ""},
		{"GET", "/kv/a", "", 200, "one"},
		{"GET", "/kv/a?stale=1", "", 200, "one"},
		{"POST", "/kv/a?cas", `{"old":"one","new":"two"}`, 204, ""},
		{"POST", "/kv/a?cas", `{"old":"one","new":"three"}`, 412, `{"current":"two"}`},
		{"POST", "/kv/a?cas", `{"old":null,"new":"three"}`, 412, `{"current":"two"}`},
		{"POST", "/kv/b?cas", `{"old":"x","new":"y"}`, 412, `{"current":null}`},
		{"POST", "/kv/b?cas", `{"old":null,"new":"y"}`, 204, ""},
		{"GET", "/kv/b", "", 200, "y"},
		{"DELETE", "/kv/a", "", 204, ""},
		{"GET", "/kv/a", "", 404, ""},
		{"PUT", "/kv/dir/with/slashes", "ok", 204, ""},
		{"GET", "/kv/dir/with/slashes", "", 200, "ok"},
		{"PUT", "/kv/empty", "", 204, ""},
		{"GET", "/kv/empty", "", 200, ""},
		{"POST", "/kv/a", `{"old":null,"new":"x"}`, 400, ""},
		{"POST", "/kv/a?cas", `not json`, 400, ""},
		{"POST", "/kv/a?cas", `{"old":null}`, 400, ""},
		{"POST", "/members", `{"id":0,"raft":"127.0.0.1:1"}`, 400, ""},
		{"POST", "/members", `{"id":1,"raft":"127.0.0.1:1"}`, 409, ""},
		{"DELETE", "/members/x", "", 400, ""},
		{"DELETE", "/members/9", "", 404, ""},
	}
	for _, s := range steps {
		code, body := do(s.method, s.path, s.body)
		if code != s.code || (s.resp != "" && body != s.resp) {
			t.Fatalf("%s %s %s: %d %q, want %d %q", s.method, s.path, s.body, code, body, s.code, s.resp)
		}
		if code >= 400 && code != 404 && code != 412 {
			var e struct {
				Error    string `json:"error"`
				Definite *bool  `json:"definite"`
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error == "" || e.Definite == nil {
				t.Fatalf("%s %s: error body %q lacks error/definite", s.method, s.path, body)
			}
		}
	}
	code, body := do("GET", "/status", "")
	var st map[string]any
	if err := json.Unmarshal([]byte(body), &st); code != 200 || err != nil {
		t.Fatalf("status: %d %q", code, body)
	}
	for _, f := range []string{"id", "term", "lead", "state", "commit", "applied", "voters", "learners"} {
		if _, ok := st[f]; !ok {
			t.Fatalf("status lacks %q: %s", f, body)
		}
	}
	if st["state"] != "follower" {
		t.Fatalf("state %v on a follower", st["state"])
	}
}
