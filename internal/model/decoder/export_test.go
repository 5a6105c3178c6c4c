package decoder

// StepRows is the number of tokens the runner's last ubatch ended with
// (fewer than it began with when KeepWanted cut it).
func StepRows(r *Runner) int { return r.step.N }
