package backoff

import (
	"context"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDelay(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		n    int
		want time.Duration
	}{
		{"try 1 is base", Policy{Base: time.Second, Max: time.Minute}, 1, time.Second},
		{"try 0 counts as 1", Policy{Base: time.Second, Max: time.Minute}, 0, time.Second},
		{"negative try counts as 1", Policy{Base: time.Second, Max: time.Minute}, -5, time.Second},
		{"try 2 doubles", Policy{Base: time.Second, Max: time.Minute}, 2, 2 * time.Second},
		{"try 4 doubles thrice", Policy{Base: time.Second, Max: time.Minute}, 4, 8 * time.Second},
		{"try 6 reaches the cap", Policy{Base: time.Second, Max: time.Minute}, 7, time.Minute},
		{"cap not a power of two", Policy{Base: 2 * time.Second, Max: 3 * time.Second}, 2, 3 * time.Second},
		{"base above cap is capped", Policy{Base: time.Hour, Max: time.Minute}, 1, time.Minute},
		{"huge n stays at the cap", Policy{Base: time.Second, Max: time.Minute}, math.MaxInt, time.Minute},
		{"no cap doubles", Policy{Base: time.Second}, 3, 4 * time.Second},
		{"no cap never overflows", Policy{Base: time.Second}, math.MaxInt, math.MaxInt64},
		{"no cap, 1ns base, 64 tries", Policy{Base: 1}, 64, math.MaxInt64},
		{"near-max cap never overflows", Policy{Base: 3, Max: math.MaxInt64 - 1}, 100, math.MaxInt64 - 1},
		{"no base is no delay", Policy{Max: time.Minute}, 5, 0},
		{"negative base is no delay", Policy{Base: -time.Second, Max: time.Minute}, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.Delay(tc.n)
			assert.Equal(t, tc.want, got)
			assert.GreaterOrEqual(t, got, time.Duration(0))
		})
	}
}

func TestDelayN(t *testing.T) {
	p := Policy{Base: time.Second, Max: time.Minute}
	assert.Equal(t, time.Second, p.DelayN(0))
	assert.Equal(t, 4*time.Second, p.DelayN(3))
	assert.Equal(t, time.Minute, p.DelayN(math.MaxUint64), "a count past MaxInt is not negative")
}

func TestDelayJitterBounds(t *testing.T) {
	tests := []struct {
		name   string
		p      Policy
		n      int
		lo, hi time.Duration
	}{
		{"try 1", Policy{Base: time.Second, Max: time.Minute, Jitter: true}, 1, 500 * time.Millisecond, time.Second},
		{"try 3", Policy{Base: time.Second, Max: time.Minute, Jitter: true}, 3, 2 * time.Second, 4 * time.Second},
		{"capped", Policy{Base: time.Second, Max: time.Minute, Jitter: true}, 40, 30 * time.Second, time.Minute},
		{"odd ns", Policy{Base: 3, Max: time.Minute, Jitter: true}, 1, 2, 3},
		{"no cap, huge n", Policy{Base: time.Second, Jitter: true}, math.MaxInt, math.MaxInt64 - math.MaxInt64/2, math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[time.Duration]bool{}
			for range 200 {
				d := tc.p.Delay(tc.n)
				assert.GreaterOrEqual(t, d, tc.lo)
				assert.LessOrEqual(t, d, tc.hi)
				seen[d] = true
			}
			if tc.hi-tc.lo > time.Millisecond {
				assert.Greater(t, len(seen), 1, "jitter varies the delay")
			}
		})
	}
}

func TestSleep(t *testing.T) {
	t.Run("waits the delay", func(t *testing.T) {
		start := time.Now()
		require.NoError(t, Sleep(context.Background(), 20*time.Millisecond))
		assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	})
	t.Run("no delay returns at once", func(t *testing.T) {
		require.NoError(t, Sleep(context.Background(), 0))
		require.NoError(t, Sleep(context.Background(), -time.Second))
	})
	t.Run("ended context wins", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled)
		require.ErrorIs(t, Sleep(ctx, 0), context.Canceled)
	})
	t.Run("context ending mid-wait stops it", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, Sleep(ctx, time.Hour), context.DeadlineExceeded)
	})
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, false},
		{"1", time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	} {
		got, ok := RetryAfter(tc.in, now)
		require.Equal(t, tc.ok, ok, "%q", tc.in)
		require.Equal(t, tc.want, got, "%q", tc.in)
	}
	huge, ok := RetryAfter("99999999999999999", now)
	require.True(t, ok)
	require.Positive(t, huge)
}
