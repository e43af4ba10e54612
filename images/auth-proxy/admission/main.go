// The authentication proxy's admission: the one writer of oauth2-proxy's allowed-users file. It runs
// beside oauth2-proxy in the proxy container (entrypoint.sh), and the file is on a volume no other
// container mounts, so nothing the student runs in the IDE container can change whom the proxy admits.
// The IDE container shares the pod's network and reaches this port: the per-instance token (a Secret
// mounted into the proxy container only, sent by the operator as `Authorization: Bearer`) is what
// keeps it out. PUT /users {"user": "<e-mail>"} makes that user the only one admitted, once per pod:
// the same user again is 204 (the operator's retry), another is 409. Nothing here logs a token.
//
// It also answers the kubelet's readiness probe of the IDE container (GET /ready on its own port, in
// every session pod): the IDE and the proxy accept connections, or not. One probe answers for both,
// so the pod's readiness waits on one of the kubelet's probe runs, not two (a probe runs at most once
// a second). Until both first have, a probe waits for them, so the pod is Ready the moment the IDE
// listens, not at the kubelet's next tick (a student's lazy start waited half of that on average).
package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// maxConnections caps the connections open at once. The IDE container shares the pod's network: a
// flood of idle connections from the student's code must neither grow this container's memory (a
// restart would free the proxy's port for a moment) nor last (the timeouts close them).
const maxConnections = 32

type limitListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	conn, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: conn, release: func() { <-l.slots }}, nil
}

type slotConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

type writer struct {
	file, tokenFile string
	mu              sync.Mutex
	user            string
}

func (w *writer) authorized(r *http.Request) (int, string) {
	header := r.Header.Get("Authorization")
	if !strings.HasPrefix(header, "Bearer ") {
		return http.StatusUnauthorized, "a bearer token is required"
	}
	// Read at each request: a token the kubelet has not projected yet admits nobody.
	token, err := os.ReadFile(w.tokenFile)
	want := strings.TrimSpace(string(token))
	if err != nil || want == "" {
		return http.StatusServiceUnavailable, "no token yet"
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(strings.TrimPrefix(header, "Bearer "))))
	expected := sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(got[:], expected[:]) != 1 {
		return http.StatusForbidden, "the token is not this instance's"
	}
	return 0, ""
}

// validUser refuses what could add a second line (a second user) or a pattern to the file.
func validUser(user string) bool {
	if user == "" || len(user) > 320 {
		return false
	}
	for _, c := range user {
		if unicode.IsSpace(c) || unicode.IsControl(c) {
			return false
		}
	}
	return true
}

func (w *writer) serveUsers(rw http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPut {
		http.Error(rw, "method not allowed, use PUT", http.StatusMethodNotAllowed)
		return
	}
	if status, reason := w.authorized(r); status != 0 {
		log.Printf("PUT /users refused: %d", status)
		http.Error(rw, reason, status)
		return
	}
	var body struct {
		User string `json:"user"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&body); err != nil || !validUser(body.User) {
		http.Error(rw, `the body must be {"user": "<one user>"}`, http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.user != "" && w.user != body.User {
		http.Error(rw, "another user is admitted already; a new reservation restarts the pod", http.StatusConflict)
		return
	}
	// Replaced in one rename: the proxy, which reloads the file on change, never reads half of it.
	next := filepath.Join(filepath.Dir(w.file), ".users.next")
	if err := os.WriteFile(next, []byte(body.User+"\n"), 0o644); err != nil {
		log.Printf("cannot write the allowed-users file: %v", err)
		http.Error(rw, "the allowed-users file could not be written", http.StatusInternalServerError)
		return
	}
	if err := os.Rename(next, w.file); err != nil {
		log.Printf("cannot replace the allowed-users file: %v", err)
		http.Error(rw, "the allowed-users file could not be written", http.StatusInternalServerError)
		return
	}
	w.user = body.User
	log.Print("the session's user is the proxy's only allowed user")
	rw.WriteHeader(http.StatusNoContent)
}

// readiness answers whether every one of targets (host:port: the IDE, the proxy) accepts connections.
type readiness struct {
	targets []string
	// All have accepted a connection since this process started: probes no longer wait for them.
	seen atomic.Bool
}

// startWait bounds a probe's wait for an IDE (or proxy) that has not listened yet. Under the probe's
// timeout (2 s): a probe that waited in vain fails, and the kubelet's tick that came meanwhile starts
// the next one at once, so the start is watched throughout.
const startWait = 1500 * time.Millisecond

func (r *readiness) serveReady(rw http.ResponseWriter, req *http.Request) {
	deadline := time.Now()
	if !r.seen.Load() {
		deadline = deadline.Add(startWait)
	}
	for {
		if r.accepting() {
			r.seen.Store(true)
			rw.Write([]byte("ok\n"))
			return
		}
		if time.Now().After(deadline) {
			break
		}
		select {
		case <-req.Context().Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
	http.Error(rw, "the IDE or the proxy does not accept connections", http.StatusServiceUnavailable)
}

// accepting dials each target in turn.
func (r *readiness) accepting() bool {
	for _, target := range r.targets {
		conn, err := net.DialTimeout("tcp", target, time.Second)
		if err != nil {
			return false
		}
		conn.Close()
	}
	return true
}

// loopback is the address to dial for a listen address (host:port) of this pod: its own loopback for
// a wildcard host.
func loopback(address string) string {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// upstreamAddress is the host:port of AUTH_PROXY_UPSTREAM, the IDE's address as the proxy reaches it.
func upstreamAddress() string {
	upstream, err := url.Parse(os.Getenv("AUTH_PROXY_UPSTREAM"))
	if err != nil {
		return ""
	}
	return upstream.Host
}

// serve runs an HTTP server on address with the connection cap and the timeouts.
func serve(address string, handler http.Handler) error {
	server := &http.Server{
		Handler:           handler,
		MaxHeaderBytes:    8192,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       30 * time.Second,
	}
	listener, err := net.Listen("tcp", address)
	if err != nil {
		return err
	}
	return server.Serve(&limitListener{Listener: listener, slots: make(chan struct{}, maxConnections)})
}

func main() {
	readyAddress := os.Getenv("AUTH_PROXY_READY_ADDRESS")
	tokenFile := os.Getenv("AUTH_PROXY_ADMISSION_TOKEN_FILE")
	if readyAddress == "" && tokenFile == "" {
		log.Fatal("AUTH_PROXY_READY_ADDRESS or AUTH_PROXY_ADMISSION_TOKEN_FILE is required")
	}
	readyFailed := make(chan error, 1)
	if readyAddress != "" {
		upstream, proxy := upstreamAddress(), loopback(os.Getenv("AUTH_PROXY_ADDRESS"))
		if upstream == "" || proxy == "" {
			log.Fatal("AUTH_PROXY_UPSTREAM and AUTH_PROXY_ADDRESS are required with AUTH_PROXY_READY_ADDRESS")
		}
		mux := http.NewServeMux()
		mux.HandleFunc("GET /ready", (&readiness{targets: []string{upstream, proxy}}).serveReady)
		go func() { readyFailed <- serve(readyAddress, mux) }()
	}
	if tokenFile == "" {
		log.Fatal(<-readyFailed)
	}
	// The admission goes on without the readiness answer: the probe then fails, and the pod is not
	// Ready, but a claimed instance still gets its user.
	go func() { log.Printf("the readiness answer stopped: %v", <-readyFailed) }()
	w := &writer{file: os.Getenv("AUTH_PROXY_USERS_FILE"), tokenFile: tokenFile}
	address := os.Getenv("AUTH_PROXY_ADMISSION_ADDRESS")
	if w.file == "" || address == "" {
		log.Fatal("AUTH_PROXY_USERS_FILE and AUTH_PROXY_ADMISSION_ADDRESS are required with AUTH_PROXY_ADMISSION_TOKEN_FILE")
	}
	// A restarted container keeps its volume: the user written before stays the only one.
	if content, err := os.ReadFile(w.file); err == nil {
		w.user = strings.TrimSpace(string(content))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/users", w.serveUsers)
	log.Fatal(serve(address, mux))
}
