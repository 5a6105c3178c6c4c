package explain

import "github.com/loom-inference/loom/engine"

// Measure is the machine measurement loom bench --bandwidth reports
// against too (engine.MeasureMachine): read bandwidth, the instruction
// peaks of the threads' cores as compute roofs, and Loom's own kernel
// rate; remembered per process.
func Measure(threads int) Machine { return engine.MeasureMachine(threads) }
