package broker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// serverLog adapts nats-server's Logger to slog. Notices go to debug level,
// warnings and errors to their own levels. Fatal messages are also kept, so
// that StartEmbedded can report why the server failed to start; they never
// exit the process.
type serverLog struct {
	log *slog.Logger // nil: forward nothing

	mu    sync.Mutex
	fatal []string
}

func (l *serverLog) emit(level slog.Level, format string, args []any) {
	if l.log != nil {
		l.log.Log(context.Background(), level, fmt.Sprintf(format, args...), "component", "nats-server")
	}
}

// Noticef logs a notice at debug level.
func (l *serverLog) Noticef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }

// Warnf logs a warning.
func (l *serverLog) Warnf(format string, v ...any) { l.emit(slog.LevelWarn, format, v) }

// Errorf logs an error.
func (l *serverLog) Errorf(format string, v ...any) { l.emit(slog.LevelError, format, v) }

// Debugf logs a debug message.
func (l *serverLog) Debugf(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }

// Tracef drops trace messages; they are too verbose to forward.
func (l *serverLog) Tracef(string, ...any) {}

// Fatalf records a fatal error and logs it; it does not exit.
func (l *serverLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	l.fatal = append(l.fatal, fmt.Sprintf(format, v...))
	l.mu.Unlock()
	l.emit(slog.LevelError, format, v)
}

// firstFatal returns the first fatal message, or "" if there was none.
func (l *serverLog) firstFatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.fatal) == 0 {
		return ""
	}
	return l.fatal[0]
}
