import AssociatedDomains
import Foundation
import SignedFilesIO

/// The signed apple-app-site-association reader (CMS through OpenSSL) and the approval table's file.
enum SignedFileTargets {
    /// TEST MATERIAL, published on purpose: a throwaway self-signed P-256 certificate for example.com (valid to 2126)
    /// and its private key, made with `openssl req -x509` for the seeds. It protects nothing.
    static let certificate = """
        -----BEGIN CERTIFICATE-----
        MIIBwjCCAWigAwIBAgIUTLwyngjR7KyGM30tAkn8WWmpQBgwCgYIKoZIzj0EAwIw
        FjEUMBIGA1UEAwwLZXhhbXBsZS5jb20wIBcNMjYxMTI1MDA0OTQ1WhgPMjEyNjEx
        MDEwMDQ5NDVaMBYxFDASBgNVBAMMC2V4YW1wbGUuY29tMFkwEwYHKoZIzj0CAQYI
        KoZIzj0DAQcDQgAEul4YJu18hOkE6ciOht588+Wsx6iTUFa6hefCAFu8rigFVcIj
        CCgkdPP+TlX2ndPc0vaCbDo3ZcSggxD29BaezqOBkTCBjjAdBgNVHQ4EFgQUoyoz
        8dwdwk9FAcndJsYxi6MEgOQwHwYDVR0jBBgwFoAUoyoz8dwdwk9FAcndJsYxi6ME
        gOQwDwYDVR0TAQH/BAUwAwEB/zAWBgNVHREEDzANggtleGFtcGxlLmNvbTATBgNV
        HSUEDDAKBggrBgEFBQcDATAOBgNVHQ8BAf8EBAMCB4AwCgYIKoZIzj0EAwIDSAAw
        RQIgCVDx+QimHdPY5c7oQr8UCWr2+iPCeDvEUO0QCLT/QcsCIQCneF+YBZjlz4Ow
        5ueOtUJbKxGV/4meeWANMvGRMxdIfg==
        -----END CERTIFICATE-----
        """
    static let privateKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgTWED+l2psNxy3qjR
        9FA0mYEIS/0Dc+6dwHR2oQMlI/ShRANCAAS6Xhgm7XyE6QTpyI6G3nzz5azHqJNQ
        VrqF58IAW7yuKAVVwiMIKCR08/5OVfad09zS9oJsOjdlxKCDEPb0Fp7O
        -----END PRIVATE KEY-----
        """

    /// A fixed time inside the certificate's validity, so that every run decides the same.
    private static let time = Date(timeIntervalSince1970: 1_830_000_000)
    private static let trust = TrustAnchors(systemStore: false, certificatesPEM: Array(certificate.utf8))

    private static func sign(_ content: String) -> [UInt8]? { sign(Array(content.utf8)) }

    private static func sign(_ content: [UInt8]) -> [UInt8]? {
        try? SignedFile.sign(
            content, certificatePEM: Array(certificate.utf8), privateKeyPEM: Array(privateKey.utf8))
    }

    static let signedFile: FuzzTarget = FuzzTarget(
        name: "signed-file",
        summary: "CMS SignedData verification for example.com: accepted content re-signs and verifies unchanged",
        seeds: {
            [
                sign(#"{"webcredentials": {"apps": ["ABCDE12345.com.example.app"]}}"#), sign(""),
                sign(#"{"applinks": {"details": [{"appIDs": ["ABCDE12345.com.example.app"], "components": []}]}}"#),
            ].compactMap { $0 }
        },
        run: { input in
            guard let verified = try? SignedFile.verify(input, domain: "example.com", trust: trust, at: time) else {
                return
            }
            expect(verified.signerNames.contains("example.com"), "accepted a signer without example.com")
            guard let again = sign(verified.content) else { return }
            let reread = try? SignedFile.verify(again, domain: "example.com", trust: trust, at: time)
            expect(reread?.content == verified.content, "re-signed content did not verify unchanged")
        })

    static let approvalTable: FuzzTarget = FuzzTarget(
        name: "approval-table",
        summary: "the approval table's JSON: an accepted table writes back to JSON that reads as the same table",
        seeds: {
            var table = ApprovalTable()
            let verdict = CheckVerdict(
                state: .approved, reason: "names it", url: "https://example.com/.well-known/apple-app-site-association",
                status: 200, signer: nil, file: Array(#"{"webcredentials": {"apps": []}}"#.utf8))
            if let entitlement = try? Entitlement("webcredentials:example.com:8443"),
                let app = try? AppID("ABCDE12345.com.example.app")
            {
                _ = try? table.record(
                    verdict, entitlement: entitlement, app: app, at: Date(timeIntervalSince1970: 1_800_000_000))
            }
            return [table.json(), ApprovalTable().json()]
        },
        run: { input in
            guard let table = try? ApprovalTable(json: input) else { return }
            let again = try? ApprovalTable(json: table.json())
            expect(again == table, "the table changed through its JSON")
        })
}
