module github.com/loom-inference/loom

go 1.26.0

require (
	github.com/creack/pty v1.1.24
	github.com/peterh/liner v1.2.2
	golang.org/x/sys v0.49.0
	golang.org/x/text v0.43.0
)

require github.com/mattn/go-runewidth v0.0.3 // indirect
