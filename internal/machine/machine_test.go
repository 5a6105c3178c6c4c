package machine

import "testing"

// TestMeasureWith: a measurement on a meter's threads (loom bench
// --bandwidth's, which allocates no second set of matrices) has what
// Measure's has: the bandwidth, the kernel rate, a compute roof, the
// method and the CPU.
func TestMeasureWith(t *testing.T) {
	meter := NewMeter(1)
	defer meter.Close()
	m := MeasureWith(meter)
	t.Logf("%+v", m)
	if m.Threads != 1 || m.BandwidthGBs <= 0 || m.KernelGFLOPS <= 0 || m.PeakGFLOPS <= 0 || m.Method == "" || m.CPU != CPU().String() {
		t.Fatalf("MeasureWith = %+v", m)
	}
}
