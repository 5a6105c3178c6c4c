package explain

import "github.com/loom-inference/loom/internal/machine"

// Machine is the roofline's roofs: one measurement of the machine, shared
// with loom bench --bandwidth. In a report its PeakGFLOPS is the compute
// roof of the model's weights (Machine.For).
type Machine = machine.Machine

// Measure measures the machine on threads (remembered per process): read
// bandwidth, the instruction peaks of the threads' cores as compute roofs,
// and Loom's own kernel rate.
func Measure(threads int) Machine { return machine.Measure(threads) }
