package explain

import "github.com/loom-inference/loom/engine"

// Measure estimates the machine's read bandwidth and compute peak with
// Loom's own kernels (engine.MeasureMachine).
func Measure(threads int) Machine { return engine.MeasureMachine(threads) }
