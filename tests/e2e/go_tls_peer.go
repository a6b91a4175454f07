// An HTTPS streaming peer in Go (crypto/tls, net/http: HTTP/1.1 only) for
// test_watch_tls_go.sh, so that tokentap's uprobes on Go's (*tls.Conn).Write
// and (*tls.Conn).Read can be checked against the program's own stamps.
// MONO_NS below is CLOCK_MONOTONIC read with clock_gettime, the clock of
// the eBPF programs.
//
//	go_tls_peer client PORT RID GO_FILE
//	    waits until GO_FILE exists (so that tokentap attaches to the running
//	    process first), POSTs a streamed chat completion to
//	    https://127.0.0.1:PORT with x-request-id RID, and prints
//	    "RID MONO_NS BYTES" for every Read of the response body that returned
//	    bytes, then "RID body N" with the body's length.
//	go_tls_peer server CERT KEY LOG TOKENS GAP_MS
//	    serves HTTPS on 127.0.0.1 (port printed on stdout): every POST gets a
//	    200 text/event-stream of TOKENS chat chunks t0..t(TOKENS-1) GAP_MS
//	    apart, then "data: [DONE]"; before each chunk's write (one Write and
//	    Flush: one (*tls.Conn).Write) it appends "RID INDEX MONO_NS" to LOG.
//	go_tls_peer calls CERT KEY BLOCKS ROUNDS GO_FILE
//	    for tests/bench/tls.sh: a TLS client and server in this process over
//	    loopback TCP; prints "pid=PID", waits until GO_FILE exists, then runs
//	    BLOCKS blocks of ROUNDS round trips (the client writes 64 bytes, the
//	    server reads them and writes 64 back, the client reads them: two
//	    Writes and two Reads of *tls.Conn) and prints
//	    "tls_calls=N cpu_ns_per_call=X": the process's CPU time (user and
//	    system, getrusage) per call, the median over the blocks.
package main

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

func monoNs() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1 /* CLOCK_MONOTONIC */, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Sec*1e9 + ts.Nsec
}

func die(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(1)
}

func client(port, rid, goFile string) {
	waitFor(goFile)
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		// HTTP/1.1: no h2 offered in ALPN
		TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{},
	}
	body := `{"model":"m","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"x"}]}`
	req, err := http.NewRequest("POST", "https://127.0.0.1:"+port+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		die("%v", err)
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-request-id", rid)
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		die("%v", err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 65536)
	total := 0
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			fmt.Printf("%s %d %d\n", rid, monoNs(), n)
			total += n
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			die("%v", err)
		}
	}
	fmt.Printf("%s body %d\n", rid, total)
}

func server(cert, key, logPath string, tokens int, gap time.Duration) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0600)
	if err != nil {
		die("%v", err)
	}
	var logMu sync.Mutex
	log := bufio.NewWriter(logFile)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		rid := r.Header.Get("x-request-id")
		w.Header().Set("content-type", "text/event-stream")
		w.WriteHeader(200)
		flusher := w.(http.Flusher)
		flusher.Flush()
		for i := 0; i < tokens; i++ {
			chunk := fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"t%d\"}}]}\n\n", i)
			logMu.Lock()
			fmt.Fprintf(log, "%s %d %d\n", rid, i, monoNs())
			log.Flush()
			logMu.Unlock()
			io.WriteString(w, chunk)
			flusher.Flush()
			time.Sleep(gap)
		}
		io.WriteString(w, "data: [DONE]\n\n")
	})
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		die("%v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		die("%v", err)
	}
	fmt.Println(ln.Addr().(*net.TCPAddr).Port)
	srv := &http.Server{Handler: handler,
		TLSConfig:    &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}},
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){}}
	die("%v", srv.Serve(tls.NewListener(ln, srv.TLSConfig)))
}

func waitFor(goFile string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(goFile); err == nil {
			return
		}
		if time.Now().After(deadline) {
			die("no go file")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func cpuNs() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func calls(cert, key string, blocks, rounds int, goFile string) {
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		die("%v", err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}})
	if err != nil {
		die("%v", err)
	}
	go func() {
		c, err := ln.Accept()
		if err != nil {
			die("%v", err)
		}
		buf := make([]byte, 64)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		die("%v", err)
	}
	if err := c.Handshake(); err != nil {
		die("%v", err)
	}
	fmt.Printf("pid=%d\n", os.Getpid())
	waitFor(goFile)
	msg, back := make([]byte, 64), make([]byte, 64)
	per := make([]int64, blocks)
	for b := range per {
		t0 := cpuNs()
		for i := 0; i < rounds; i++ {
			if _, err := c.Write(msg); err != nil {
				die("%v", err)
			}
			if _, err := io.ReadFull(c, back); err != nil {
				die("%v", err)
			}
		}
		per[b] = (cpuNs() - t0) / int64(4*rounds)
	}
	sort.Slice(per, func(i, j int) bool { return per[i] < per[j] })
	fmt.Printf("tls_calls=%d cpu_ns_per_call=%d\n", 4*rounds*blocks, per[blocks/2])
}

func main() {
	a := os.Args
	switch {
	case len(a) == 5 && a[1] == "client":
		client(a[2], a[3], a[4])
	case len(a) == 7 && a[1] == "calls":
		blocks, err1 := strconv.Atoi(a[4])
		rounds, err2 := strconv.Atoi(a[5])
		if err1 != nil || err2 != nil || blocks < 1 || rounds < 1 {
			die("BLOCKS and ROUNDS are positive integers")
		}
		calls(a[2], a[3], blocks, rounds, a[6])
	case len(a) == 7 && a[1] == "server":
		tokens, err1 := strconv.Atoi(a[5])
		gapMs, err2 := strconv.Atoi(a[6])
		if err1 != nil || err2 != nil {
			die("TOKENS and GAP_MS are integers")
		}
		server(a[2], a[3], a[4], tokens, time.Duration(gapMs)*time.Millisecond)
	default:
		die("usage: go_tls_peer client PORT RID GO_FILE | server CERT KEY LOG TOKENS GAP_MS | " +
			"calls CERT KEY BLOCKS ROUNDS GO_FILE")
	}
}
