package faultproxy

import (
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// echo starts a loopback server that writes back what it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer func() { _ = c.Close() }(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func start(t *testing.T) *Proxy {
	t.Helper()
	p, err := Start(echo(t))
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// roundTrip writes msg and reads its echo within d.
func roundTrip(c net.Conn, msg string, d time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, len(msg))
	_, err := io.ReadFull(c, buf)
	return string(buf), err
}

func TestForwards(t *testing.T) {
	t.Parallel()
	p := start(t)
	c := dial(t, p)
	got, err := roundTrip(c, "hello", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "hello", got)
	require.EqualValues(t, 5, p.Forwarded(Up))
	require.EqualValues(t, 5, p.Forwarded(Down))
}

func TestCutClosesAndRefusesUntilHeal(t *testing.T) {
	t.Parallel()
	p := start(t)
	c := dial(t, p)
	_, err := roundTrip(c, "a", 5*time.Second)
	require.NoError(t, err)
	p.Cut()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the cut connection is closed")
	refused := dial(t, p)
	_, err = roundTrip(refused, "b", 5*time.Second)
	require.Error(t, err, "a connection made during the cut is closed")
	require.NotErrorIs(t, err, os.ErrDeadlineExceeded, "closed, not hanging: %v", err)

	p.Heal()
	got, err := roundTrip(dial(t, p), "c", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "c", got)
}

func TestBlackholeHoldsBytesUntilHeal(t *testing.T) {
	t.Parallel()
	for _, dir := range []Direction{Up, Down, Both} {
		p := start(t)
		c := dial(t, p)
		_, err := roundTrip(c, "x", 5*time.Second)
		require.NoError(t, err)
		p.Blackhole(dir)
		_, err = roundTrip(c, "held", 300*time.Millisecond)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded, "direction %d: nothing comes back while blackholed", dir)
		require.Equal(t, 1, p.Conns(), "the connection stays open")
		p.Heal()
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 4)
		_, err = io.ReadFull(c, buf)
		require.NoError(t, err)
		require.Equal(t, "held", string(buf), "direction %d: the held bytes arrive after healing", dir)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	p := start(t)
	c := dial(t, p)
	p.Delay(100 * time.Millisecond)
	began := time.Now()
	_, err := roundTrip(c, "slow", 5*time.Second)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(began), 200*time.Millisecond, "delayed each way")
	p.Heal()
	_, err = roundTrip(c, "fast", 5*time.Second)
	require.NoError(t, err)
}

func TestDropRepliesForwardsRequestsThenCuts(t *testing.T) {
	t.Parallel()
	p := start(t)
	c := dial(t, p)
	p.DropReplies()
	_, err := roundTrip(c, "lost", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the reply is dropped")
	require.Eventually(t, func() bool { return p.Dropped() == 4 }, 5*time.Second, 5*time.Millisecond, "the request reached the server, whose reply was dropped")
	require.EqualValues(t, 4, p.Forwarded(Up))
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "healing cuts the connection that lost a reply")
	got, err := roundTrip(dial(t, p), "back", 5*time.Second)
	require.NoError(t, err)
	require.Equal(t, "back", got)
	require.Eventually(t, func() bool { return p.Conns() == 1 }, 5*time.Second, 5*time.Millisecond)
}

func TestDropRepliesAfterMarker(t *testing.T) {
	t.Parallel()
	p := start(t)
	c := dial(t, p)
	p.DropRepliesAfter([]byte("PUB"))
	got, err := roundTrip(c, "ping", 5*time.Second)
	require.NoError(t, err, "before the marker, replies flow")
	require.Equal(t, "ping", got)
	_, err = roundTrip(c, "PUB x", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the reply to the marked chunk is dropped")
	require.Eventually(t, func() bool { return p.Dropped() == 5 }, 5*time.Second, 5*time.Millisecond)
}

func TestBlackholeUpAfterMarker(t *testing.T) {
	t.Parallel()
	p := start(t)
	c := dial(t, p)
	p.BlackholeUpAfter([]byte("last"))
	got, err := roundTrip(c, "last", 5*time.Second)
	require.NoError(t, err, "the marked chunk is forwarded")
	require.Equal(t, "last", got)
	_, err = roundTrip(c, "ack", 300*time.Millisecond)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "what follows it is held")
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 3)
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err)
	require.Equal(t, "ack", string(buf))
}
