/* transport_credentials.c - the channel credentials a transport's options
 * ask for: plaintext; TLS verified against a CA file or the system roots,
 * with a client certificate for mTLS; or TLS that accepts any server
 * certificate (insecure_skip_verify).
 *
 * Verified TLS uses grpc_ssl_credentials_create_ex. Its verify callback runs
 * only after OpenSSL has verified the chain and gRPC the host name, so it
 * cannot skip verification; skipping uses the TLS credentials API instead
 * (verify_server_cert off, a no-op verifier, no host check). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/grpc_security.h>

#include "base/log.h"
#include "files/file_read.h"
#include "transport/transport_internal.h"

#define MAX_PEM_BYTES (16 << 20)

/* PEM text of the files the options name; NULL where none is named. */
struct pem_files {
	char *ca, *cert, *key;
};

static int set(const char *s)
{
	return s && s[0];
}

/* Reads the PEM file at path into *pem (malloc'd); 0 or a negative errno. */
static int read_pem(const char *path, const char *what, char **pem, char *err, size_t errlen)
{
	size_t len;
	int rc = mr_file_read_all(path, MAX_PEM_BYTES, pem, &len);

	if (rc == -EFBIG)
		return mr_error(err, errlen, rc, "cannot read the %s file %s: larger than %d bytes", what,
				path, MAX_PEM_BYTES);
	if (rc != 0)
		return mr_error(err, errlen, rc, "cannot read the %s file %s: %s", what, path, strerror(-rc));
	if (!strstr(*pem, "-----BEGIN ")) {
		free(*pem);
		*pem = NULL;
		return mr_error(err, errlen, -EINVAL, "cannot read the %s file %s: no PEM data in it", what,
				path);
	}
	return 0;
}

static void free_pem(struct pem_files *p)
{
	free(p->ca);
	free(p->cert);
	if (p->key) {
		explicit_bzero(p->key, strlen(p->key));
		free(p->key);
	}
}

static int load_pem(const struct mr_transport_opts *o, struct pem_files *p, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	if (set(o->cert_path) != set(o->key_path)) {
		snprintf(err, errlen,
			 "invalid TLS options: a client certificate needs both cert_path "
			 "and key_path");
		return -EINVAL;
	}
	int rc = 0;

	if (set(o->ca_path) && !o->insecure_skip_verify)
		rc = read_pem(o->ca_path, "CA", &p->ca, err, errlen);
	if (rc == 0 && set(o->cert_path))
		rc = read_pem(o->cert_path, "certificate", &p->cert, err, errlen);
	if (rc == 0 && set(o->key_path))
		rc = read_pem(o->key_path, "key", &p->key, err, errlen);
	return rc;
}

static grpc_channel_credentials *verified(const struct pem_files *p)
{
	grpc_ssl_pem_key_cert_pair pair = { .private_key = p->key, .cert_chain = p->cert };

	return grpc_ssl_credentials_create_ex(p->ca, p->cert ? &pair : NULL, NULL, NULL);
}

static grpc_channel_credentials *unverified(const struct pem_files *p)
{
	grpc_tls_credentials_options *opts = grpc_tls_credentials_options_create();
	grpc_tls_certificate_verifier *verifier = grpc_tls_certificate_verifier_no_op_create();

	grpc_tls_credentials_options_set_verify_server_cert(opts, 0);
	grpc_tls_credentials_options_set_check_call_host(opts, 0);
	grpc_tls_credentials_options_set_certificate_verifier(opts, verifier);
	grpc_tls_certificate_verifier_release(verifier);
	if (p->cert) {
		grpc_tls_identity_pairs *pairs = grpc_tls_identity_pairs_create();
		grpc_tls_certificate_provider *provider;

		grpc_tls_identity_pairs_add_pair(pairs, p->key, p->cert);
		provider = grpc_tls_certificate_provider_static_data_create(NULL, pairs);
		grpc_tls_credentials_options_set_certificate_provider(opts, provider);
		grpc_tls_certificate_provider_release(provider);
		grpc_tls_credentials_options_watch_identity_key_cert_pairs(opts);
	}
	return grpc_tls_credentials_create(opts);
}

grpc_channel_credentials *mr_transport_credentials(const struct mr_transport_opts *o, char *err,
						   size_t errlen)
{
	grpc_channel_credentials *creds;
	struct pem_files pem;
	int rc;

	if (!o->tls)
		creds = grpc_insecure_credentials_create();
	else if ((rc = load_pem(o, &pem, err, errlen)) != 0) {
		free_pem(&pem);
		return mr_fail_null(rc);
	} else {
		creds = o->insecure_skip_verify ? unverified(&pem) : verified(&pem);
		free_pem(&pem);
	}
	if (!creds)
		return mr_fail_null(
			mr_error(err, errlen, -EINVAL, "cannot create gRPC credentials for %s", o->address));
	return creds;
}
