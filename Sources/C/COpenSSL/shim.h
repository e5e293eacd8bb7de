#include <openssl/bio.h>
#include <openssl/cms.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

// OpenSSL 3 spells STACK_OF(X509)'s functions as macros over type-checking inline functions, which Swift does not
// import; these are the few SignedFilesIO uses.

/// A new, empty stack of certificates, or NULL when out of memory.
static inline STACK_OF(X509) *passkey_sk_X509_new(void) { return sk_X509_new_null(); }
/// Pushes `certificate` (the stack takes the reference); returns 0 on failure.
static inline int passkey_sk_X509_push(STACK_OF(X509) *stack, X509 *certificate) {
    return sk_X509_push(stack, certificate);
}
static inline int passkey_sk_X509_num(const STACK_OF(X509) *stack) { return stack ? sk_X509_num(stack) : 0; }
static inline X509 *passkey_sk_X509_value(const STACK_OF(X509) *stack, int index) {
    return sk_X509_value(stack, index);
}
/// Frees the stack and every certificate in it (for CMS_get1_certs and stacks built with push).
static inline void passkey_sk_X509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }
/// Frees the stack only (for CMS_get0_signers, whose certificates belong to the CMS structure).
static inline void passkey_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }

/// BIO_get_mem_data is a macro over BIO_ctrl.
static inline long passkey_BIO_get_mem_data(BIO *bio, char **data) { return BIO_get_mem_data(bio, data); }

/// The password callback for private keys read without a password: refuses, so an encrypted key fails with an
/// error instead of OpenSSL asking on the terminal.
static inline int passkey_refuse_password(char *buffer, int size, int rwflag, void *user) {
    (void)buffer; (void)size; (void)rwflag; (void)user;
    return -1;
}

/// Reads a PEM private key, refusing encrypted ones (see passkey_refuse_password).
static inline EVP_PKEY *passkey_PEM_read_bio_PrivateKey(BIO *bio) {
    return PEM_read_bio_PrivateKey(bio, NULL, passkey_refuse_password, NULL);
}

/// Writes the certificate's DNS subject alternative names to `out`, separated by ", ".
static inline void passkey_X509_print_dns_names(X509 *certificate, BIO *out) {
    GENERAL_NAMES *names = X509_get_ext_d2i(certificate, NID_subject_alt_name, NULL, NULL);
    if (!names) return;
    int written = 0;
    for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
        const GENERAL_NAME *name = sk_GENERAL_NAME_value(names, i);
        if (name->type != GEN_DNS) continue;
        if (written++) BIO_puts(out, ", ");
        BIO_write(out, ASN1_STRING_get0_data(name->d.dNSName), ASN1_STRING_length(name->d.dNSName));
    }
    GENERAL_NAMES_free(names);
}

/// XN_FLAG_RFC2253 is a macro over several others, which Swift does not import.
static inline unsigned long passkey_XN_FLAG_RFC2253(void) { return XN_FLAG_RFC2253; }
