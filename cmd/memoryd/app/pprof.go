package app

import (
	"net/http"
	"net/http/pprof"

	"github.com/garden-bloom/memory/pkg/auth"
)

// pprofPath is where every process serves Go's profiles (issue #9). Heap and
// goroutine dumps show memory contents and call arguments, so only admin
// tokens get them.
const pprofPath = "/debug/pprof/"

func pprofHandler(verifier *auth.Verifier) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(pprofPath, pprof.Index) // also serves heap, goroutine, allocs, block, mutex, threadcreate
	mux.HandleFunc(pprofPath+"cmdline", pprof.Cmdline)
	mux.HandleFunc(pprofPath+"profile", pprof.Profile)
	mux.HandleFunc(pprofPath+"symbol", pprof.Symbol)
	mux.HandleFunc(pprofPath+"trace", pprof.Trace)
	return auth.RequireHTTP(verifier, []auth.Role{auth.RoleAdmin}, mux)
}
