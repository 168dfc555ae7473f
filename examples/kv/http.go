package main

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"strconv"
	"time"
)

// maxBody bounds a request body (a value, a CAS, a member).
const maxBody = 1 << 20

// api serves the HTTP interface of one node.
type api struct {
	n          *node
	timeout    time.Duration
	staleReads bool
}

func (a *api) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /kv/{key...}", a.put)
	mux.HandleFunc("GET /kv/{key...}", a.get)
	mux.HandleFunc("DELETE /kv/{key...}", a.del)
	mux.HandleFunc("POST /kv/{key...}", a.cas)
	mux.HandleFunc("POST /members", a.addMember)
	mux.HandleFunc("DELETE /members/{id}", a.removeMember)
	mux.HandleFunc("GET /status", a.status)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers an error: 503 with whether the request certainly changed
// nothing (definite) or may have (a write that timed out once proposed).
func fail(w http.ResponseWriter, err error) {
	var re *reqError
	if errors.As(err, &re) {
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": re.msg, "definite": re.definite})
		return
	}
	writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": err.Error(), "definite": false})
}

func badRequest(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": msg, "definite": true})
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		badRequest(w, "body: "+err.Error())
		return nil, false
	}
	return b, true
}

func keyOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	k := r.PathValue("key")
	if k == "" {
		badRequest(w, "empty key")
		return "", false
	}
	return k, true
}

func (a *api) put(w http.ResponseWriter, r *http.Request) {
	k, ok := keyOf(w, r)
	if !ok {
		return
	}
	v, ok := readBody(w, r)
	if !ok {
		return
	}
	if _, err := a.n.propose(command{Op: "put", Key: k, Val: string(v)}, a.timeout); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) del(w http.ResponseWriter, r *http.Request) {
	k, ok := keyOf(w, r)
	if !ok {
		return
	}
	if _, err := a.n.propose(command{Op: "del", Key: k}, a.timeout); err != nil {
		fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	k, ok := keyOf(w, r)
	if !ok {
		return
	}
	var res readResult
	if a.staleReads || r.URL.Query().Has("stale") {
		res = a.n.localRead(k)
	} else {
		var err error
		if res, err = a.n.read(k, a.timeout); err != nil {
			fail(w, err)
			return
		}
	}
	if !res.ok {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, res.val)
}

// casBody is the body of POST /kv/{key}?cas: old null means absent.
type casBody struct {
	Old *string `json:"old"`
	New *string `json:"new"`
}

func (a *api) cas(w http.ResponseWriter, r *http.Request) {
	if !r.URL.Query().Has("cas") {
		badRequest(w, "POST /kv/{key} needs ?cas")
		return
	}
	k, ok := keyOf(w, r)
	if !ok {
		return
	}
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	var c casBody
	if err := json.Unmarshal(b, &c); err != nil {
		badRequest(w, "body: "+err.Error())
		return
	}
	if c.New == nil {
		badRequest(w, `body: "new" is required`)
		return
	}
	res, err := a.n.propose(command{Op: "cas", Key: k, Old: c.Old, Val: *c.New}, a.timeout)
	if err != nil {
		fail(w, err)
		return
	}
	if !res.OK {
		writeJSON(w, http.StatusPreconditionFailed, map[string]any{"current": res.Current})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// memberBody is the body of POST /members.
type memberBody struct {
	ID    uint64            `json:"id"`
	Raft  string            `json:"raft"`
	Peers map[string]string `json:"peers"`
}

func (a *api) addMember(w http.ResponseWriter, r *http.Request) {
	b, ok := readBody(w, r)
	if !ok {
		return
	}
	var m memberBody
	if err := json.Unmarshal(b, &m); err != nil {
		badRequest(w, "body: "+err.Error())
		return
	}
	if m.ID == 0 || m.Raft == "" {
		badRequest(w, `body: "id" (> 0) and "raft" are required`)
		return
	}
	for k := range m.Peers {
		if _, err := parseID(k); err != nil {
			badRequest(w, "body: peers: "+err.Error())
			return
		}
	}
	err := a.n.addMember(m.ID, memberInfo{Raft: m.Raft, Peers: m.Peers}, a.timeout)
	a.memberAnswer(w, "add", m.ID, err)
}

func (a *api) removeMember(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil || id == 0 {
		badRequest(w, "bad member id")
		return
	}
	a.memberAnswer(w, "remove", id, a.n.removeMember(id, a.timeout))
}

// memberAnswer answers a membership change: 200 with the configuration
// once applied here, 409 when the configuration refuses it (already a
// member, one learner at a time), 404 to remove a node that is not a
// member, 503 otherwise.
func (a *api) memberAnswer(w http.ResponseWriter, op string, id uint64, err error) {
	var refused *refusedError
	switch {
	case err == nil:
		st := a.n.status()
		log.Printf("membership: %s %d done (voters %v, learners %v)", op, id, st.Voters, st.Learners)
		writeJSON(w, http.StatusOK, map[string]any{"op": op, "id": id, "voters": st.Voters, "learners": st.Learners})
	case errors.Is(err, errAlready):
		writeJSON(w, http.StatusConflict, map[string]any{"error": "already a member", "definite": true})
	case errors.Is(err, errNotMember):
		writeJSON(w, http.StatusNotFound, map[string]any{"error": "not a member", "definite": true})
	case errors.As(err, &refused):
		writeJSON(w, http.StatusConflict, map[string]any{"error": refused.Error(), "definite": true})
	default:
		fail(w, err)
	}
}

func (a *api) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, a.n.status())
}
