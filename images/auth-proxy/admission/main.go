// The authentication proxy's admission: the one writer of oauth2-proxy's allowed-users file. It runs
// beside oauth2-proxy in the proxy container (entrypoint.sh), and the file is on a volume no other
// container mounts, so nothing the student runs in the IDE container can change whom the proxy admits.
// The IDE container shares the pod's network and reaches this port: the per-instance token (a Secret
// mounted into the proxy container only, sent by the operator as `Authorization: Bearer`) is what
// keeps it out. PUT /users {"user": "<e-mail>"} makes that user the only one admitted, once per pod:
// the same user again is 204 (the operator's retry), another is 409. Nothing here logs a token.
package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
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

func main() {
	w := &writer{file: os.Getenv("AUTH_PROXY_USERS_FILE"), tokenFile: os.Getenv("AUTH_PROXY_ADMISSION_TOKEN_FILE")}
	address := os.Getenv("AUTH_PROXY_ADMISSION_ADDRESS")
	if w.file == "" || w.tokenFile == "" || address == "" {
		log.Fatal("AUTH_PROXY_USERS_FILE, AUTH_PROXY_ADMISSION_TOKEN_FILE and AUTH_PROXY_ADMISSION_ADDRESS are required")
	}
	// A restarted container keeps its volume: the user written before stays the only one.
	if content, err := os.ReadFile(w.file); err == nil {
		w.user = strings.TrimSpace(string(content))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/users", w.serveUsers)
	server := &http.Server{
		Handler:           mux,
		MaxHeaderBytes:    8192,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       30 * time.Second,
	}
	listener, err := net.Listen("tcp", address)
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(server.Serve(&limitListener{Listener: listener, slots: make(chan struct{}, maxConnections)}))
}
