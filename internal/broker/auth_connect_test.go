package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"
)

// authServer runs a plain (no JetStream) server configured by edit and
// returns its client URL.
func authServer(t *testing.T, edit func(*server.Options)) string {
	t.Helper()
	skipShort(t)
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true}
	edit(opts)
	srv, err := server.NewServer(opts)
	require.NoError(t, err)
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	require.True(t, srv.ReadyForConnections(10*time.Second))
	return srv.ClientURL()
}

// connectWith connects to url with a's options.
func connectWith(url string, a AuthOptions) (*nats.Conn, error) {
	opts, err := a.Options()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Connect(ctx, url, "auth test", opts...)
}

func TestAuthOptionsConnect(t *testing.T) {
	t.Parallel()
	seed, pub := userSeed(t, t.TempDir())
	otherSeed, _ := userSeed(t, t.TempDir())
	certs := newTestCerts(t)
	tlsConf := func(verify, first bool) func(*server.Options) {
		return func(o *server.Options) {
			c, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: certs.serverCert, KeyFile: certs.serverKey, CaFile: certs.ca, Verify: verify})
			require.NoError(t, err)
			o.TLS, o.TLSVerify, o.TLSConfig, o.TLSTimeout, o.TLSHandshakeFirst = true, verify, c, 5, first
		}
	}
	for _, tc := range []struct {
		name       string
		server     func(*server.Options)
		good, bad  AuthOptions
		badErrLike string
	}{
		{"user and password", func(o *server.Options) { o.Users = []*server.User{{Username: "w", Password: "pw"}} },
			AuthOptions{User: "w", Password: "pw"}, AuthOptions{User: "w", Password: "nope"}, "authorization violation"},
		{"token", func(o *server.Options) { o.Authorization = "s3cret" },
			AuthOptions{Token: "s3cret"}, AuthOptions{Token: "nope"}, "authorization violation"},
		{"nkey", func(o *server.Options) { o.Nkeys = []*server.NkeyUser{{Nkey: pub}} },
			AuthOptions{NkeyFile: seed}, AuthOptions{NkeyFile: otherSeed}, "authorization violation"},
		{"tls with the server's ca", tlsConf(false, false),
			AuthOptions{TLSCA: certs.ca}, AuthOptions{}, "unknown authority"},
		{"mutual tls", tlsConf(true, false),
			AuthOptions{TLSCA: certs.ca, TLSCert: certs.clientCert, TLSKey: certs.clientKey}, AuthOptions{TLSCA: certs.ca}, "tls"},
		{"tls handshake first", tlsConf(false, true),
			AuthOptions{TLSCA: certs.ca, TLSFirst: true}, AuthOptions{TLSCA: certs.ca}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := authServer(t, tc.server)
			nc, err := connectWith(url, tc.good)
			require.NoError(t, err)
			require.NoError(t, nc.Flush())
			nc.Close()
			nc, err = connectWith(url, tc.bad)
			if nc != nil {
				nc.Close()
			}
			require.Error(t, err)
			require.Contains(t, strings.ToLower(err.Error()), tc.badErrLike)
		})
	}
}

// testCerts are PEM files of a test CA, a server certificate for 127.0.0.1
// and a client certificate, both signed by the CA.
type testCerts struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newTestCerts(t *testing.T) testCerts {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "drover test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage) (certPath, keyPath string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		require.NoError(t, err)
		keyDER, err := x509.MarshalECPrivateKey(key)
		require.NoError(t, err)
		return writePEM(t, dir, name+".pem", "CERTIFICATE", der), writePEM(t, dir, name+"-key.pem", "EC PRIVATE KEY", keyDER)
	}
	var c testCerts
	c.ca = writePEM(t, dir, "ca.pem", "CERTIFICATE", caDER)
	c.serverCert, c.serverKey = issue("server", 2, x509.ExtKeyUsageServerAuth)
	c.clientCert, c.clientKey = issue("client", 3, x509.ExtKeyUsageClientAuth)
	return c
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	return writeFile(t, dir, filepath.Base(name), string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})))
}
