package broker

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrAuditWeakened is wrapped by the error Provision returns for an existing
// audit stream that allows deleting, purging, rolling up or expiring events,
// or has any limit that removes them.
var ErrAuditWeakened = errors.New("audit stream weakened")

// auditConfig is the append-only audit stream of the contract.
func (p *provisioner) auditConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              p.s.Names.AuditStream(),
		Subjects:          []string{p.s.Names.AuditWildcard()},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          p.s.Replicas,
		Duplicates:        p.s.DuplicateWindow,
		DenyDelete:        true,
		DenyPurge:         true,
		AllowRollup:       false,
		AllowMsgTTL:       false,
		MaxAge:            0,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgsPerSubject: -1,
	}
}

// auditStream creates the audit stream, or gets the existing one and checks
// it. It never changes an existing audit stream.
func (p *provisioner) auditStream(ctx context.Context) (jetstream.Stream, error) {
	st, err := createOrGetStream(ctx, p.js, p.auditConfig())
	if err != nil {
		return nil, err
	}
	if err := checkAudit(st.CachedInfo().Config); err != nil {
		return nil, err
	}
	return st, nil
}

// weakenedError names one setting that makes an audit stream weaker than
// the contract allows.
type weakenedError struct {
	stream, setting, value, allows string
}

func (e *weakenedError) Error() string {
	return fmt.Sprintf("audit stream %s: %s is %s; Drover refuses an audit stream that %s (recreate it, see docs/security.md)",
		e.stream, e.setting, e.value, e.allows)
}

func (e *weakenedError) Unwrap() error { return ErrAuditWeakened }

// CheckAudit returns an error, wrapping ErrAuditWeakened, naming every
// setting of an audit stream's config that lets events be removed or
// altered, or nil if there is none: what a worker refuses at start, checked
// again by running workers and by drover audit verify.
func CheckAudit(cfg jetstream.StreamConfig) error { return checkAudit(cfg) }

// checkAudit returns an error naming every setting of cfg that lets events
// be removed or altered, or nil if there is none.
func checkAudit(cfg jetstream.StreamConfig) error {
	var errs []error
	add := func(bad bool, setting string, value any, allows string) {
		if bad {
			errs = append(errs, &weakenedError{cfg.Name, setting, fmt.Sprint(value), allows})
		}
	}
	add(!cfg.DenyDelete, "deny_delete", cfg.DenyDelete, "allows deletion")
	add(!cfg.DenyPurge, "deny_purge", cfg.DenyPurge, "allows purging")
	add(cfg.AllowRollup, "allow_rollup", cfg.AllowRollup, "allows rollups, which erase earlier events")
	add(cfg.AllowMsgTTL, "allow_msg_ttl", cfg.AllowMsgTTL, "allows events to expire")
	add(cfg.MaxAge > 0, "max_age", cfg.MaxAge, "expires old events")
	add(cfg.MaxMsgs > 0, "max_msgs", cfg.MaxMsgs, "limits the number of events")
	add(cfg.MaxBytes > 0, "max_bytes", cfg.MaxBytes, "limits the size of the record")
	add(cfg.MaxMsgsPerSubject > 0, "max_msgs_per_subject", cfg.MaxMsgsPerSubject, "limits the events per subject")
	return errors.Join(errs...)
}
