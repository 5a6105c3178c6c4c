package server

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"net/http"
)

// page is the chat page: one self-contained file (no CDN, fonts or
// external scripts), so it works offline.
//
//go:embed page.html
var page []byte

// pageCSP allows the page's own script by its hash and nothing else: a
// script or event handler that got into the page (say from a reply rendered
// wrongly) would not run. Styles are the page's inline <style>; fetches go
// to this server only.
var pageCSP = func() string {
	open, end := []byte("<script>"), []byte("</script>")
	i, j := bytes.Index(page, open), bytes.LastIndex(page, end)
	if i < 0 || j < i || bytes.Count(page, open) != 1 {
		panic("server: page.html must hold exactly one inline <script>")
	}
	sum := sha256.Sum256(page[i+len(open) : j])
	return "default-src 'self'; style-src 'unsafe-inline'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

func (s *Server) page(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(page)
}
