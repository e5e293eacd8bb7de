import Basics
import COpenSSL
import Foundation

/// Why a signed file was refused, or could not be made. `code` is stable; `description` says what was wrong.
public struct SignedFileError: CodedError {
    /// A stable identifier for each kind of failure.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// The bytes are not a DER CMS ContentInfo.
        case malformed
        /// A CMS structure, but not SignedData (enveloped, digested, …).
        case notSignedData
        /// SignedData without the content inside it (a detached signature).
        case detached
        /// The signature or the content's digest does not verify, or the signer's certificate is not in the file.
        case signature
        /// Not exactly one signer.
        case signers
        /// The signer's certificate does not chain to a trusted root.
        case untrusted
        /// A certificate in the chain has expired or is not yet valid.
        case expired
        /// The chain is refused for another reason (not a TLS server certificate, a bad CA, …).
        case certificate
        /// The signer's certificate is not valid for the domain.
        case wrongDomain
        /// The trusted certificates given (`--ca`) could not be read.
        case trustAnchors
        /// The signing certificate or a chain certificate could not be read.
        case signingCertificate
        /// The private key could not be read (encrypted keys are refused), or does not match the certificate.
        case privateKey
        /// OpenSSL failed to make the signature.
        case signingFailed
    }

    public var code: Code
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}

/// Which certificate authorities a signed file's chain may end at.
public struct TrustAnchors: Sendable, Hashable {
    /// Whether the system's trust store counts (OpenSSL's default paths: `/etc/ssl/certs` on Debian, or
    /// `SSL_CERT_DIR` and `SSL_CERT_FILE`).
    public var systemStore: Bool
    /// Further authorities, as PEM certificates (a `--ca` file's contents).
    public var certificatesPEM: [UInt8]?

    public init(systemStore: Bool = true, certificatesPEM: [UInt8]? = nil) {
        self.systemStore = systemStore
        self.certificatesPEM = certificatesPEM
    }

    /// The system's trust store alone.
    public static let system = TrustAnchors()
}

/// A signed file that verified: its content and who signed it.
public struct VerifiedFile: Sendable, Hashable {
    /// The signed content, exactly as signed.
    public var content: [UInt8]
    /// The signer's subject, RFC 2253 (`CN=example.com,O=…`).
    public var signer: String
    /// The signer certificate's DNS names (subject alternative names).
    public var signerNames: [String]
}

/// CMS SignedData with the content inside (`application/pkcs7-mime`), as `openssl smime -sign -nodetach -outform DER`
/// makes it and as a signed `apple-app-site-association` file is served, verified and made with OpenSSL's libcrypto.
///
/// Verification is in three steps, each with its own error: the signature over the content (against the signer's
/// certificate carried in the file), the signer's chain to a trusted root as a TLS server certificate at the given
/// time, and the signer's certificate for the domain (`X509_check_host`, no partial wildcards).
public enum SignedFile {
    /// Whether `bytes` look like DER rather than text: a SEQUENCE tag. JSON never starts with 0x30.
    public static func looksLikeDER(_ bytes: [UInt8]) -> Bool { bytes.first == 0x30 }

    /// Verifies `der` for `domain` (a host name or IP address, without a port) and returns the signed content.
    /// `time` is when the certificates must be valid (now by default).
    public static func verify(
        _ der: [UInt8], domain: String, trust: TrustAnchors = .system, at time: Date? = nil
    ) throws(SignedFileError) -> VerifiedFile {
        ERR_clear_error()
        defer { ERR_clear_error() }
        let cms = try parse(der)
        defer { CMS_ContentInfo_free(cms) }

        // 1. The signature over the content, against the signer certificate the file carries.
        guard let out = BIO_new(BIO_s_mem()) else { throw SignedFileError(.signature, "out of memory") }
        defer { BIO_free(out) }
        guard CMS_verify(cms, nil, nil, nil, out, UInt32(CMS_NO_SIGNER_CERT_VERIFY | CMS_BINARY)) == 1 else {
            throw SignedFileError(.signature, "the signature does not verify: \(openSSLErrors())")
        }
        let content = bytes(of: out)
        guard let signers = CMS_get0_signers(cms) else {
            throw SignedFileError(.signers, "the file names no signer")
        }
        defer { passkey_sk_X509_free(signers) }
        let count = passkey_sk_X509_num(signers)
        guard count == 1, let leaf = passkey_sk_X509_value(signers, 0) else {
            throw SignedFileError(.signers, "the file has \(count) signers; one is expected")
        }
        let signer = subject(of: leaf)
        let names = dnsNames(of: leaf)

        // 2. The signer's chain, as a TLS server certificate.
        try verifyChain(leaf, cms: cms, trust: trust, at: time, signer: signer)

        // 3. The domain.
        guard matches(leaf, domain: domain) else {
            let listed = names.isEmpty ? "no DNS names" : "DNS names \(names.joined(separator: ", "))"
            throw SignedFileError(
                .wrongDomain,
                "the signing certificate (\(signer), \(listed)) is not valid for \(printable(domain))")
        }
        return VerifiedFile(content: content, signer: signer, signerNames: names)
    }

    /// Signs `content` with the certificate and its private key (PEM; the key unencrypted), carrying the chain's
    /// certificates (PEM, any number) for verifiers, and returns the DER CMS SignedData with the content inside.
    public static func sign(
        _ content: [UInt8], certificatePEM: [UInt8], privateKeyPEM: [UInt8], chainPEM: [UInt8]? = nil
    ) throws(SignedFileError) -> [UInt8] {
        ERR_clear_error()
        defer { ERR_clear_error() }
        let certificates = try readCertificates(certificatePEM, error: .signingCertificate, what: "the certificate")
        defer { passkey_sk_X509_pop_free(certificates) }
        guard let certificate = passkey_sk_X509_value(certificates, 0) else {
            throw SignedFileError(.signingCertificate, "the certificate file holds no certificate")
        }
        let key = withBIO(privateKeyPEM) { bio in bio.flatMap { passkey_PEM_read_bio_PrivateKey($0) } }
        guard let key else {
            throw SignedFileError(
                .privateKey, "the private key cannot be read (an encrypted key is refused): \(openSSLErrors())")
        }
        defer { EVP_PKEY_free(key) }
        guard X509_check_private_key(certificate, key) == 1 else {
            ERR_clear_error()
            throw SignedFileError(.privateKey, "the private key does not belong to the certificate")
        }
        // The chain: the certificate file's further certificates, then the chain file's.
        guard let chain = passkey_sk_X509_new() else { throw SignedFileError(.signingFailed, "out of memory") }
        defer { passkey_sk_X509_pop_free(chain) }
        var extra: [OpaquePointer] = []
        for index in 1..<max(1, passkey_sk_X509_num(certificates)) {
            if let each = passkey_sk_X509_value(certificates, index) { extra.append(each) }
        }
        var chainFile: OpaquePointer?
        if let chainPEM {
            chainFile = try readCertificates(chainPEM, error: .signingCertificate, what: "the chain")
        }
        defer { if let chainFile { passkey_sk_X509_pop_free(chainFile) } }
        for index in 0..<passkey_sk_X509_num(chainFile) {
            if let each = passkey_sk_X509_value(chainFile, index) { extra.append(each) }
        }
        for each in extra {
            guard X509_up_ref(each) == 1 else { throw SignedFileError(.signingFailed, "out of memory") }
            guard passkey_sk_X509_push(chain, each) > 0 else {
                X509_free(each)
                throw SignedFileError(.signingFailed, "out of memory")
            }
        }
        guard let data = BIO_new(BIO_s_mem()) else { throw SignedFileError(.signingFailed, "out of memory") }
        defer { BIO_free(data) }
        guard let out = BIO_new(BIO_s_mem()) else { throw SignedFileError(.signingFailed, "out of memory") }
        defer { BIO_free(out) }
        let written = content.withUnsafeBytes { BIO_write(data, $0.baseAddress, Int32($0.count)) }
        guard content.isEmpty || written == Int32(content.count) else {
            throw SignedFileError(.signingFailed, "out of memory")
        }
        guard let cms = CMS_sign(certificate, key, chain, data, UInt32(CMS_BINARY)) else {
            throw SignedFileError(.signingFailed, "CMS_sign failed: \(openSSLErrors())")
        }
        defer { CMS_ContentInfo_free(cms) }
        guard i2d_CMS_bio(out, cms) == 1 else {
            throw SignedFileError(.signingFailed, "writing the DER failed: \(openSSLErrors())")
        }
        return bytes(of: out)
    }

    // MARK: - Steps

    private static func parse(_ der: [UInt8]) throws(SignedFileError) -> OpaquePointer {
        guard !der.isEmpty else { throw SignedFileError(.malformed, "the file is empty") }
        let parsed: (OpaquePointer?, Int) = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let cms = d2i_CMS_ContentInfo(nil, &cursor, buffer.count)
            let used = cursor.map { $0 - buffer.baseAddress! } ?? 0
            return (cms, used)
        }
        guard let cms = parsed.0 else {
            throw SignedFileError(.malformed, "not a DER CMS structure: \(openSSLErrors())")
        }
        guard parsed.1 == der.count else {
            CMS_ContentInfo_free(cms)
            throw SignedFileError(.malformed, "\(der.count - parsed.1) bytes follow the CMS structure")
        }
        guard OBJ_obj2nid(CMS_get0_type(cms)) == NID_pkcs7_signed else {
            let type = OBJ_obj2nid(CMS_get0_type(cms))
            let name = OBJ_nid2sn(type).map { String(cString: $0) } ?? "an unknown type"
            CMS_ContentInfo_free(cms)
            throw SignedFileError(.notSignedData, "the CMS structure is \(name), not signedData")
        }
        guard CMS_is_detached(cms) == 0 else {
            CMS_ContentInfo_free(cms)
            throw SignedFileError(.detached, "the signature is detached: the file does not hold the signed content")
        }
        return cms
    }

    private static func verifyChain(
        _ leaf: OpaquePointer, cms: OpaquePointer, trust: TrustAnchors, at time: Date?, signer: String
    ) throws(SignedFileError) {
        guard let store = X509_STORE_new() else { throw SignedFileError(.certificate, "out of memory") }
        defer { X509_STORE_free(store) }
        // A certificate the user trusts ends the chain even when it is not a root (an intermediate given as --ca).
        _ = X509_STORE_set_flags(store, UInt(X509_V_FLAG_PARTIAL_CHAIN))
        if trust.systemStore, X509_STORE_set_default_paths(store) != 1 {
            throw SignedFileError(.trustAnchors, "the system trust store cannot be used: \(openSSLErrors())")
        }
        if let pem = trust.certificatesPEM {
            let anchors = try readCertificates(pem, error: .trustAnchors, what: "the trusted certificates")
            defer { passkey_sk_X509_pop_free(anchors) }
            for index in 0..<passkey_sk_X509_num(anchors) {
                guard X509_STORE_add_cert(store, passkey_sk_X509_value(anchors, index)) == 1 else {
                    throw SignedFileError(.trustAnchors, "a trusted certificate was refused: \(openSSLErrors())")
                }
            }
        }
        guard let context = X509_STORE_CTX_new() else { throw SignedFileError(.certificate, "out of memory") }
        defer { X509_STORE_CTX_free(context) }
        let untrusted = CMS_get1_certs(cms)
        defer { if let untrusted { passkey_sk_X509_pop_free(untrusted) } }
        guard X509_STORE_CTX_init(context, store, leaf, untrusted) == 1 else {
            throw SignedFileError(.certificate, "the chain cannot be checked: \(openSSLErrors())")
        }
        _ = X509_STORE_CTX_set_purpose(context, X509_PURPOSE_SSL_SERVER)
        if let time { X509_STORE_CTX_set_time(context, 0, time_t(time.timeIntervalSince1970.rounded(.down))) }
        guard X509_verify_cert(context) == 1 else {
            let error = X509_STORE_CTX_get_error(context)
            let depth = X509_STORE_CTX_get_error_depth(context)
            let reason = String(cString: X509_verify_cert_error_string(Int(error)))
            let which = depth == 0 ? "the signing certificate (\(signer))" : "the chain (depth \(depth))"
            ERR_clear_error()
            switch error {
            case X509_V_ERR_CERT_HAS_EXPIRED, X509_V_ERR_CERT_NOT_YET_VALID, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD,
                X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD:
                throw SignedFileError(.expired, "\(which): \(reason)")
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT,
                X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN,
                X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_CERT_UNTRUSTED:
                throw SignedFileError(.untrusted, "\(which) is not trusted: \(reason)")
            default:
                throw SignedFileError(.certificate, "\(which) is refused: \(reason)")
            }
        }
    }

    private static func matches(_ certificate: OpaquePointer, domain: String) -> Bool {
        var name = domain
        if name.hasPrefix("["), name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
        guard !name.isEmpty, !name.utf8.contains(0) else { return false }
        if X509_check_host(certificate, name, name.utf8.count, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS), nil)
            == 1
        {
            return true
        }
        // Not an IP address: X509_check_ip_asc answers -1 (and leaves an error on the queue).
        defer { ERR_clear_error() }
        return X509_check_ip_asc(certificate, name, 0) == 1
    }

    // MARK: - OpenSSL helpers

    /// Every PEM certificate in `pem`, in order: at least one, or `error`.
    private static func readCertificates(
        _ pem: [UInt8], error code: SignedFileError.Code, what: String
    ) throws(SignedFileError) -> OpaquePointer {
        guard let stack = passkey_sk_X509_new() else { throw SignedFileError(code, "out of memory") }
        let failure: SignedFileError? = withBIO(pem) { bio in
            guard let bio else { return SignedFileError(code, "out of memory") }
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                guard passkey_sk_X509_push(stack, certificate) > 0 else {
                    X509_free(certificate)
                    return SignedFileError(code, "out of memory")
                }
            }
            // The loop ends at the end of the input (PEM_R_NO_START_LINE) or at a damaged certificate.
            let last = ERR_peek_last_error()
            if ERR_GET_LIB(last) == ERR_LIB_PEM, ERR_GET_REASON(last) == PEM_R_NO_START_LINE {
                ERR_clear_error()
                return nil
            }
            return SignedFileError(code, "\(what) cannot be read: \(openSSLErrors())")
        }
        if let failure {
            passkey_sk_X509_pop_free(stack)
            throw failure
        }
        guard passkey_sk_X509_num(stack) > 0 else {
            passkey_sk_X509_pop_free(stack)
            throw SignedFileError(code, "\(what) holds no PEM certificate")
        }
        return stack
    }

    /// Runs `body` with a memory BIO holding a copy of `bytes`; nil when OpenSSL is out of memory.
    private static func withBIO<Result>(_ bytes: [UInt8], _ body: (OpaquePointer?) -> Result) -> Result {
        guard let bio = BIO_new(BIO_s_mem()) else { return body(nil) }
        defer { BIO_free(bio) }
        if !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { BIO_write(bio, $0.baseAddress, Int32(clamping: $0.count)) }
            guard written == Int32(clamping: bytes.count) else { return body(nil) }
        }
        return body(bio)
    }

    /// Everything written to a memory BIO.
    private static func bytes(of bio: OpaquePointer) -> [UInt8] {
        var data: UnsafeMutablePointer<CChar>?
        let count = passkey_BIO_get_mem_data(bio, &data)
        guard count > 0, let data else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: count) {
            Array(UnsafeBufferPointer(start: $0, count: count))
        }
    }

    private static func subject(of certificate: OpaquePointer) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "?" }
        defer { BIO_free(bio) }
        X509_NAME_print_ex(bio, X509_get_subject_name(certificate), 0, passkey_XN_FLAG_RFC2253())
        return printable(String(decoding: bytes(of: bio), as: UTF8.self))
    }

    private static func dnsNames(of certificate: OpaquePointer) -> [String] {
        guard let bio = BIO_new(BIO_s_mem()) else { return [] }
        defer { BIO_free(bio) }
        passkey_X509_print_dns_names(certificate, bio)
        ERR_clear_error()
        let text = printable(String(decoding: bytes(of: bio), as: UTF8.self))
        return text.isEmpty ? [] : text.components(separatedBy: ", ")
    }

    /// OpenSSL's error queue as one line, emptied: each error's reason, or its whole string when it has none.
    private static func openSSLErrors() -> String {
        var reasons: [String] = []
        while true {
            let error = ERR_get_error()
            if error == 0 { break }
            if let reason = ERR_reason_error_string(error) {
                reasons.append(String(cString: reason))
            } else {
                var buffer = [CChar](repeating: 0, count: 256)
                ERR_error_string_n(error, &buffer, buffer.count)
                reasons.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return reasons.isEmpty ? "no reason given" : reasons.joined(separator: "; ")
    }

    /// Text from a certificate or the user, with control characters shown as `?`, so that it is safe to print.
    private static func printable(_ text: String) -> String {
        String(
            String.UnicodeScalarView(text.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : $0 }))
    }
}
