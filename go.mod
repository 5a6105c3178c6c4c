module github.com/loom-inference/loom

go 1.26
