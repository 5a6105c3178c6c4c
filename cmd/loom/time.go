package main

import "time"

func runtimeNano() int64 { return time.Now().UnixNano() }
