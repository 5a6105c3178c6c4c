package server

import (
	_ "embed"
	"net/http"
)

// page is the chat page: one self-contained file (no CDN, fonts or
// external scripts), so it works offline.
//
//go:embed page.html
var page []byte

func (s *Server) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'")
	w.Write(page)
}
