package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestRedisTLS runs the sidecar on rediss:// against a redis-server that
// speaks only TLS, with a certificate from a test CA: the sidecar verifies
// the server against the CA Go's TLS trusts (SSL_CERT_FILE here), and
// refuses a server it cannot verify.
func TestRedisTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a TLS-only Redis with a test CA")
	}
	dir := t.TempDir()
	caFile, certFile, keyFile, pool := writeTestPKI(t, dir)
	port := freePort(t)
	redisServer(t, "--port", "0", "--tls-port", fmt.Sprint(port), "--dir", dir,
		"--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-cert-file", caFile,
		"--tls-auth-clients", "no")
	admin := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), Protocol: 2,
		TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	t.Cleanup(func() { admin.Close() })
	require.Eventually(t, func() bool { return admin.Ping(ctx()).Err() == nil }, 10*time.Second, 20*time.Millisecond)

	url := fmt.Sprintf("rediss://127.0.0.1:%d", port)
	t.Run("verified", func(t *testing.T) {
		t.Setenv("SSL_CERT_FILE", caFile)
		c := start(t, "--backend", url).client(t, 2)
		check(t, c, int64(1), "PK.PREPARE", "tls", "k", "v")
		check(t, c, int64(0), "PK.PREPARE", "tls", "k", "w")
		check(t, c, []any{"v", int64(-1)}, "PK.GETVALUE", "tls", "k")
		// the reservation is in that Redis, under the documented layout
		require.Equal(t, int64(1), admin.Exists(ctx(), "pk:{tls:k}").Val())
	})
	t.Run("unverified", func(t *testing.T) {
		t.Setenv("SSL_CERT_FILE", filepath.Join(dir, "no-such-ca.pem"))
		c := start(t, "--backend", url, "--backend-timeout", "500ms").client(t, 2)
		_, err := c.Do(ctx(), "PK.PREPARE", "tls", "k2", "v").Result()
		require.Error(t, err)
		require.True(t, strings.HasPrefix(err.Error(), "UNAVAILABLE "), err.Error())
		info, err := c.Info(ctx(), "backend").Result()
		require.NoError(t, err)
		require.Contains(t, info, "backend_ready:0\r\n")
		require.Contains(t, info, "certificate")
		require.Equal(t, int64(0), admin.Exists(ctx(), "pk:{tls:k2}").Val())
	})
}

// redisServer runs a redis-server of the test's own, one it may stop or
// kill, on 127.0.0.1 without persistence; args add to that. Cleanup kills it.
func redisServer(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not on PATH")
		}
		t.Skip("redis-server is not on PATH")
	}
	args = append([]string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)
	srv := exec.Command("redis-server", args...)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	return srv
}

// freePort asks the kernel for a free port.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// writeTestPKI writes a CA and a server certificate for 127.0.0.1 signed by
// it, as PEM files in dir, and returns their paths and the CA as a pool.
func writeTestPKI(t *testing.T, dir string) (caFile, certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "prepkey test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)

	write := func(name, typ string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600))
		return p
	}
	pool = x509.NewCertPool()
	pool.AddCert(ca)
	return write("ca.pem", "CERTIFICATE", caDER), write("server.pem", "CERTIFICATE", der),
		write("server.key", "EC PRIVATE KEY", keyDER), pool
}
