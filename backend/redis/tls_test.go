package redis

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tlsFiles are a CA, a server certificate it signs (for 127.0.0.1 and
// redis.test) and a client certificate it signs, as PEM files.
type tlsFiles struct{ ca, serverCert, serverKey, clientCert, clientKey, otherCA string }

// makeTLSFiles writes a test PKI into dir, with crypto/x509 (no openssl).
func makeTLSFiles(t *testing.T, dir string) tlsFiles {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		return k
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
		return p
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalECPrivateKey(k)
		require.NoError(t, err)
		return write(name, "EC PRIVATE KEY", der)
	}
	serial := int64(1)
	template := func(cn string) *x509.Certificate {
		serial++
		return &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	}
	newCA := func(name string) (*x509.Certificate, *ecdsa.PrivateKey, string) {
		k := newKey()
		tpl := template(name)
		tpl.IsCA, tpl.BasicConstraintsValid, tpl.KeyUsage = true, true, x509.KeyUsageCertSign
		der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &k.PublicKey, k)
		require.NoError(t, err)
		cert, err := x509.ParseCertificate(der)
		require.NoError(t, err)
		return cert, k, write(name+".crt", "CERTIFICATE", der)
	}
	ca, caKey, caFile := newCA("test-ca")
	_, _, otherCA := newCA("other-ca")
	leaf := func(name string, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (string, string) {
		k := newKey()
		tpl := template(name)
		tpl.KeyUsage, tpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{usage}
		tpl.DNSNames, tpl.IPAddresses = dns, ips
		der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &k.PublicKey, caKey)
		require.NoError(t, err)
		return write(name+".crt", "CERTIFICATE", der), writeKey(name+".key", k)
	}
	f := tlsFiles{ca: caFile, otherCA: otherCA}
	f.serverCert, f.serverKey = leaf("server", x509.ExtKeyUsageServerAuth, []string{"redis.test"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	f.clientCert, f.clientKey = leaf("client", x509.ExtKeyUsageClientAuth, nil, nil)
	return f
}

// TestTLSParams: rediss:// with a CA file, a client certificate (mTLS) and
// a server name, against a redis-server that serves TLS and requires
// client certificates (tls-auth-clients yes).
func TestTLSParams(t *testing.T) {
	f := makeTLSFiles(t, t.TempDir())
	tlsPort := freePort(t)
	startRedis(t, "--tls-port", fmt.Sprint(tlsPort), "--tls-cert-file", f.serverCert, "--tls-key-file", f.serverKey,
		"--tls-ca-cert-file", f.ca, "--tls-auth-clients", "yes")
	base := fmt.Sprintf("rediss://127.0.0.1:%d", tlsPort)
	mtls := fmt.Sprintf("tls-ca-file=%s&tls-cert-file=%s&tls-key-file=%s", f.ca, f.clientCert, f.clientKey)
	ping := func(url string) error {
		s, err := Open(context.Background(), url, Config{Timeout: 2 * time.Second})
		require.NoError(t, err)
		defer s.Close()
		return s.Ping(context.Background())
	}

	require.NoError(t, ping(base+"?"+mtls), "CA, client certificate and key")
	require.NoError(t, ping(base+"?"+mtls+"&tls-server-name=redis.test"), "a name the certificate carries")

	// No client certificate: the server refuses the handshake.
	err := ping(base + "?tls-ca-file=" + f.ca)
	require.Error(t, err, "mTLS without a client certificate")
	// A name the certificate does not carry: the client refuses the server.
	err = ping(base + "?" + mtls + "&tls-server-name=wrong.test")
	require.ErrorContains(t, err, "certificate is valid for redis.test, not wrong.test")
	// The system CAs (no tls-ca-file), or another CA, do not know the server's.
	err = ping(base + fmt.Sprintf("?tls-cert-file=%s&tls-key-file=%s", f.clientCert, f.clientKey))
	require.ErrorContains(t, err, "certificate signed by unknown authority")
	err = ping(base + fmt.Sprintf("?tls-ca-file=%s&tls-cert-file=%s&tls-key-file=%s", f.otherCA, f.clientCert, f.clientKey))
	require.ErrorContains(t, err, "certificate signed by unknown authority")
}

func TestTLSParamErrors(t *testing.T) {
	f := makeTLSFiles(t, t.TempDir())
	for url, msg := range map[string]string{
		"redis://h?tls-ca-file=" + f.ca:                                             `tls-ca-file needs a TLS URL (rediss://, rediss+sentinel://, rediss+cluster://)`,
		"rediss://h?tls-ca-file=/no/such":                                           `tls-ca-file: open /no/such: no such file or directory`,
		"rediss://h?tls-ca-file=" + f.clientKey:                                     `tls-ca-file: no PEM certificate in ` + f.clientKey,
		"rediss://h?tls-cert-file=" + f.clientCert:                                  `tls-cert-file and tls-key-file go together: give both or neither`,
		"rediss://h?tls-cert-file=" + f.clientCert + "&tls-key-file=" + f.serverKey: `tls-cert-file, tls-key-file: tls: private key does not match public key`,
		"rediss://h?tls-server-name=":                                               `tls-server-name is empty`,
		"rediss://h?tls-insecure=1":                                                 `unknown parameter "tls-insecure" (TLS takes tls-ca-file, tls-cert-file, tls-key-file, tls-server-name)`,
	} {
		_, err := parseURL(url)
		require.ErrorContains(t, err, msg, url)
	}
	for _, u := range []string{"rediss+sentinel://s1,s2/m?", "rediss+cluster://a,b?", "rediss://h?"} {
		got, err := parseURL(u + fmt.Sprintf("tls-ca-file=%s&tls-cert-file=%s&tls-key-file=%s&tls-server-name=redis.test", f.ca, f.clientCert, f.clientKey))
		require.NoError(t, err, u)
		require.NotNil(t, got.tls.RootCAs, u)
		require.Len(t, got.tls.Certificates, 1, u)
		require.Equal(t, "redis.test", got.tls.ServerName, u)
		opt := clientOption(got, time.Second)
		require.Same(t, got.tls, opt.TLSConfig, u)
		if got.topology == Sentinel {
			require.Same(t, got.tls, opt.Sentinel.TLSConfig, u) // the Sentinels too
		}
	}
}
