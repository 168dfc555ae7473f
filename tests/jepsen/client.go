package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// KVClient speaks the HTTP API of examples/kv.
type KVClient struct {
	HTTP *http.Client
}

// NewKVClient makes a client whose requests give up after timeout. Every
// request uses a fresh connection, so a paused node holds up only the
// requests sent to it.
func NewKVClient(timeout time.Duration) *KVClient {
	tr := &http.Transport{
		DisableKeepAlives: true,
		DialContext:       (&net.Dialer{Timeout: timeout}).DialContext,
	}
	return &KVClient{HTTP: &http.Client{Timeout: timeout, Transport: tr}}
}

type errorBody struct {
	Error    string `json:"error"`
	Definite *bool  `json:"definite"`
}

type casBody struct {
	Old *string `json:"old"`
	New string  `json:"new"`
}

type currentBody struct {
	Current *string `json:"current"`
}

func nullable(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

// refused reports an error that proves the request never reached the
// server (nothing was sent), so it cannot have taken effect.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

// Do performs in against the node at addr (host:port). stale asks for a
// local read (?stale=1). It never returns an error: every failure is an
// Outcome, with a note for the log.
func (c *KVClient) Do(ctx context.Context, addr string, in Input, stale bool) (Output, string) {
	u := "http://" + addr + "/kv/" + url.PathEscape(in.Key)
	var req *http.Request
	var err error
	switch in.Kind {
	case OpRead:
		if stale {
			u += "?stale=1"
		}
		req, err = http.NewRequestWithContext(ctx, "GET", u, nil)
	case OpWrite:
		req, err = http.NewRequestWithContext(ctx, "PUT", u, bytes.NewReader([]byte(in.Value)))
	case OpCAS:
		body, _ := json.Marshal(casBody{Old: nullable(in.Old), New: in.Value})
		req, err = http.NewRequestWithContext(ctx, "POST", u+"?cas", bytes.NewReader(body))
		if req != nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		return Output{Outcome: Failed}, err.Error()
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		if refused(err) {
			return Output{Outcome: Failed}, "refused"
		}
		return Output{Outcome: Unknown}, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Output{Outcome: Unknown}, "reading body: " + err.Error()
	}
	switch {
	case in.Kind == OpRead && resp.StatusCode == http.StatusOK:
		if len(body) == 0 {
			return Output{Outcome: Unknown}, "200 with an empty value"
		}
		return Output{Outcome: Ok, Value: string(body)}, ""
	case in.Kind == OpRead && resp.StatusCode == http.StatusNotFound:
		return Output{Outcome: Ok, Value: ""}, ""
	case in.Kind != OpRead && resp.StatusCode == http.StatusNoContent:
		return Output{Outcome: Ok}, ""
	case in.Kind == OpCAS && resp.StatusCode == http.StatusPreconditionFailed:
		var cb currentBody
		if err := json.Unmarshal(body, &cb); err != nil {
			// A 412 is definite even if its body is unreadable, but the
			// model needs the current value: treat as unknown (weaker).
			return Output{Outcome: Unknown}, "412 with a bad body: " + string(body)
		}
		cur := ""
		if cb.Current != nil {
			cur = *cb.Current
		}
		return Output{Outcome: CASFailed, Value: cur}, ""
	case resp.StatusCode == http.StatusServiceUnavailable:
		var eb errorBody
		if err := json.Unmarshal(body, &eb); err == nil && eb.Definite != nil && *eb.Definite {
			return Output{Outcome: Failed}, "503 definite: " + eb.Error
		}
		return Output{Outcome: Unknown}, "503: " + string(body)
	}
	return Output{Outcome: Unknown}, fmt.Sprintf("unexpected %d: %s", resp.StatusCode, body)
}
