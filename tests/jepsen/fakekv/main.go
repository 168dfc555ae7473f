// Command fakekv is a stand-in for examples/kv with its flags and HTTP
// API, for testing the harness itself: every node keeps the store in one
// file shared by all nodes (the parent of --data), serialised by flock, so
// it is linearizable by construction and survives SIGKILL (the file is
// replaced by rename after fsync). Peers are not used. With
// --unsafe-stale-reads a plain GET is served from a copy of the store
// refreshed every 300 ms: stale reads the checker must catch.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

type store struct {
	Applied uint64            `json:"applied"`
	Values  map[string]string `json:"values"`
}

var (
	dir    string
	id     int
	cacheM sync.Mutex
	cache  store
)

// locked runs f on the shared store under an exclusive flock; f returns
// whether it changed the store.
func locked(f func(s *store) bool) error {
	lf, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	s := store{Values: map[string]string{}}
	if b, err := os.ReadFile(filepath.Join(dir, "store.json")); err == nil {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	if !f(&s) {
		return nil
	}
	s.Applied++
	b, _ := json.Marshal(s)
	tmp := filepath.Join(dir, fmt.Sprintf("store.%d.tmp", id))
	tf, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := tf.Write(b); err != nil {
		tf.Close()
		return err
	}
	if err := tf.Sync(); err != nil {
		tf.Close()
		return err
	}
	tf.Close()
	return os.Rename(tmp, filepath.Join(dir, "store.json"))
}

func fail(w http.ResponseWriter, err error) {
	w.WriteHeader(http.StatusServiceUnavailable)
	fmt.Fprintf(w, `{"error":%q,"definite":false}`, err.Error())
}

func main() {
	idf := flag.Int("id", 0, "node id")
	data := flag.String("data", "", "data dir")
	flag.String("raft-listen", "", "unused")
	httpAddr := flag.String("http", "", "HTTP address")
	flag.String("peers", "", "unused")
	flag.Int("snapshot-entries", 0, "unused")
	stale := flag.Bool("unsafe-stale-reads", false, "serve plain GETs from a copy")
	flag.Parse()
	id = *idf
	dir = filepath.Dir(*data)
	if err := os.MkdirAll(*data, 0o755); err != nil {
		log.Fatal(err)
	}
	refresh := func() {
		_ = locked(func(s *store) bool {
			cp := store{Applied: s.Applied, Values: map[string]string{}}
			for k, v := range s.Values {
				cp.Values[k] = v
			}
			cacheM.Lock()
			cache = cp
			cacheM.Unlock()
			return false
		})
	}
	refresh()
	if *stale {
		go func() {
			for range time.Tick(300 * time.Millisecond) {
				refresh()
			}
		}()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		var applied uint64
		_ = locked(func(s *store) bool { applied = s.Applied; return false })
		fmt.Fprintf(w, `{"id":%d,"term":1,"lead":1,"state":"%s","commit":%d,"applied":%d,"voters":[1,2,3],"learners":[]}`,
			id, map[bool]string{true: "leader", false: "follower"}[id == 1], applied, applied)
	})
	mux.HandleFunc("/kv/", func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.URL.Path, "/kv/")
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.Method == "GET":
			var v string
			var ok bool
			if *stale && r.URL.Query().Get("stale") == "" {
				cacheM.Lock()
				v, ok = cache.Values[key]
				cacheM.Unlock()
			} else if err := locked(func(s *store) bool { v, ok = s.Values[key]; return false }); err != nil {
				fail(w, err)
				return
			}
			if !ok {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			_, _ = w.Write([]byte(v))
		case r.Method == "PUT":
			if err := locked(func(s *store) bool { s.Values[key] = string(body); return true }); err != nil {
				fail(w, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		case r.Method == "POST" && r.URL.Query().Has("cas"):
			var req struct {
				Old *string `json:"old"`
				New string  `json:"new"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			var cur *string
			okCAS := false
			err := locked(func(s *store) bool {
				v, has := s.Values[key]
				if has {
					cur = &v
				}
				if (req.Old == nil && !has) || (req.Old != nil && has && *req.Old == v) {
					s.Values[key] = req.New
					okCAS = true
					return true
				}
				return false
			})
			if err != nil {
				fail(w, err)
				return
			}
			if okCAS {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			b, _ := json.Marshal(map[string]*string{"current": cur})
			w.WriteHeader(http.StatusPreconditionFailed)
			_, _ = w.Write(b)
		default:
			w.WriteHeader(http.StatusMethodNotAllowed)
		}
	})
	srv := &http.Server{Addr: *httpAddr, Handler: mux}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		<-sigs
		_ = srv.Close()
	}()
	log.Printf("fakekv %d on %s", id, *httpAddr)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		log.Fatal(err)
	}
}
