package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
)

// profilePath is the file in dir that a phase's CPU profile goes to: the
// phase's name in lower case, each run of other characters than letters
// and digits a dash ("contract-ops (overlapped)" writes
// contract-ops-overlapped.pprof).
func profilePath(dir, phase string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(phase) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return filepath.Join(dir, b.String()+".pprof")
}

// startProfile starts a CPU profile of a timed phase: into w, or, when w is
// nil, into the phase's file in cfg.ProfileDir; with neither it does
// nothing. stop ends the profile and closes its file.
func startProfile(cfg Config, w io.Writer, phase string) (stop func() error, err error) {
	var f *os.File
	if w == nil {
		if cfg.ProfileDir == "" {
			return func() error { return nil }, nil
		}
		if f, err = os.Create(profilePath(cfg.ProfileDir, phase)); err != nil {
			return nil, fmt.Errorf("bench: %s: cpu profile: %w", phase, err)
		}
		w = f
	}
	if err := pprof.StartCPUProfile(w); err != nil {
		if f != nil {
			_ = f.Close()
		}
		return nil, fmt.Errorf("bench: %s: cpu profile: %w", phase, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if f != nil {
			return f.Close()
		}
		return nil
	}, nil
}
