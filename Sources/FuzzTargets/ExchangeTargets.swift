import Basics
import CTAP2
import CredentialExchange
import Crypto
import Foundation
import JSON

/// The credential exchange readers: CXF documents and CXP export responses, passphrase archives, and the Bitwarden
/// and KeePassXC files `passkey import` reads. Whatever a reader accepts must write back to what it read, and every
/// passkey it hands to the store must fit the store.
enum ExchangeTargets {
    private static let random = SeededBytes(seed: 0x45)

    private static func signingKey() -> P256.Signing.PrivateKey {
        while true {
            if let key = try? P256.Signing.PrivateKey(rawRepresentation: random.bytes(32)) { return key }
        }
    }

    private static func passkey(_ name: String) -> CXF.Passkey {
        CXF.Passkey(
            credentialID: random.bytes(16), rpID: "example.com", username: name, userDisplayName: name.capitalized,
            userHandle: Array(name.utf8), key: Array(signingKey().derRepresentation),
            fido2Extensions: CXF.FIDO2Extensions(credBlob: [1, 2, 3]))
    }

    private static func document() -> CXF.Header {
        let note = CXF.Credential.other(type: "note", .object([.init("type", .string("note"))]))
        return CXF.Header(
            exporterRpId: "fuzz.test", exporterDisplayName: "fuzz", timestamp: 1_700_000_000,
            accounts: [
                CXF.Account(
                    id: [1], username: "u", email: "e",
                    items: [
                        CXF.Item(id: [2], creationAt: 1, title: "a", credentials: [.passkey(passkey("alice")), note]),
                        CXF.Item(id: [3], title: "b", credentials: [.passkey(passkey("bob"))]),
                        CXF.Item(
                            id: [4], title: "c",
                            scope: .object([.init("urls", .array([.string("https://example.com/login")]))]),
                            credentials: [
                                .basicAuth(CXF.BasicAuth(username: "carol", password: "pw")), .note("n"),
                                .totp(
                                    CXF.TOTP(
                                        secret: random.bytes(20), parameters: .init(algorithm: .sha256, digits: 8),
                                        username: nil, issuer: "Example")),
                            ]),
                    ])
            ])
    }

    /// The checks every accepted import makes: sizes the store holds, BE and BS set.
    private static func checkImported(_ contents: ImportContents) {
        for imported in contents.passkeys {
            let credential = imported.credential
            expect((1...1023).contains(credential.id.count), "imported credential ID of \(credential.id.count) bytes")
            expect(credential.userHandle.count <= 64, "imported user handle of \(credential.userHandle.count) bytes")
            expect((credential.credentialBlob?.count ?? 0) <= 32, "imported credBlob over 32 bytes")
            expect(credential.backupEligible && credential.backupState, "imported passkey without BE and BS")
        }
        for password in contents.passwords {
            expect(!password.password.isEmpty, "an imported password is empty")
            expect((password.note?.utf8.count ?? 0) <= CXF.Header.maximumNoteLength, "an imported note is too long")
        }
        for code in contents.oneTimeCodes {
            expect(code.parameters.isValid, "an imported one-time code has digits or a period out of range")
            expect((1...OneTimeCode.maximumSecretLength).contains(code.secret.count), "a one-time secret's size")
        }
    }

    static let cxf: FuzzTarget = FuzzTarget(
        name: "cxf",
        summary: "CXF JSON and CXP ExportResponse JSON: accepted input re-encodes to JSON that reads back the same",
        seeds: {
            let key = random.keyAgreementKey()
            return [
                document().jsonBytes,
                (try? ExportResponse(sealing: document(), to: key.publicKey).jsonBytes) ?? [],
                Array(
                    #"{"version":{"major":1,"minor":0},"exporterRpId":"x","exporterDisplayName":"x","timestamp":0,"accounts":[{"id":"AA","username":"","email":"","items":[{"id":"AA","title":"t","credentials":[{}]}]}]}"#
                        .utf8),
            ]
        },
        run: { input in
            if let header = try? CXF.Header(jsonBytes: input) {
                let again = header.jsonBytes
                let reread = try? CXF.Header(jsonBytes: again)
                expect(reread?.jsonBytes == again, "a CXF document did not read back as it was written")
                if let contents = try? header.importContents(source: "fuzz", wasClearText: true) {
                    checkImported(contents)
                }
            }
            if let response = try? ExportResponse(jsonBytes: input) {
                let again = response.jsonBytes
                expect((try? ExportResponse(jsonBytes: again))?.jsonBytes == again, "an ExportResponse changed")
            }
        })

    static let archive: FuzzTarget = FuzzTarget(
        name: "passkey-archive",
        summary: "passkey archive JSON: accepted headers have bounded scrypt parameters and re-encode the same",
        seeds: {
            let sealed = try? PassphraseArchive(
                sealing: document(), passphrase: "fuzz",
                kdf: PassphraseArchive.KDF(rounds: 1 << 14, blockSize: 8, parallelism: 1))
            return [sealed?.jsonBytes ?? []]
        },
        run: { input in
            guard let archive = try? PassphraseArchive(jsonBytes: input) else { return }
            let kdf = archive.kdf
            expect(
                PassphraseArchive.KDF.problem(
                    rounds: kdf.rounds, blockSize: kdf.blockSize, parallelism: kdf.parallelism)
                    == nil && kdf.memoryByteCount <= 256 << 20, "an archive with unbounded scrypt parameters was read")
            let again = archive.jsonBytes
            expect((try? PassphraseArchive(jsonBytes: again))?.jsonBytes == again, "an archive changed when re-read")
        })

    static let importFile: FuzzTarget = FuzzTarget(
        name: "import-file",
        summary: "any file passkey import reads (Bitwarden, KeePassXC, CXF): accepted credentials fit the store",
        seeds: {
            let key = signingKey()
            let bitwarden = """
                {"encrypted":false,"items":[{"type":1,"name":"x","login":{"fido2Credentials":[{
                "credentialId":"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0","keyType":"public-key","keyAlgorithm":"ECDSA",
                "keyCurve":"P-256","keyValue":"\(Array(key.derRepresentation).base64URL)","rpId":"example.com",
                "userHandle":"dXNlcg","userName":"u","counter":"3","rpName":"E","userDisplayName":"U",
                "discoverable":"true","creationDate":"2024-03-05T10:11:12.345Z"}]}}]}
                """
            let keepass = """
                {"relyingParty":"example.com","url":"https://example.com","username":"u","credentialId":"AAECAw",
                "userHandle":"dXNlcg","privateKey":\(String(decoding: JSONEncoder.string(key.pemRepresentation), as: UTF8.self))}
                """
            let logins = """
                {"encrypted":false,"items":[{"type":1,"name":"Mail","notes":"n","creationDate":"2024-03-05T10:11:12Z",
                "login":{"username":"u","password":"p","totp":"otpauth://totp/Mail:u?secret=JBSWY3DPEHPK3PXP&digits=8",
                "uris":[{"match":null,"uri":"https://mail.example/login"}]}},
                {"type":1,"name":"Bare","login":{"username":"v","password":"q","totp":"JBSW Y3DP EHPK 3PXP",
                "uris":[{"uri":"bare.example"}]}},{"type":3,"name":"Card","card":{}}]}
                """
            let csv = """
                "Group","Title","Username","Password","URL","Notes","TOTP","Icon","Last Modified","Created"
                "Root","Mail","erin","pa""ss, word","https://mail.example/login","line one
                line two","otpauth://totp/Mail:erin?secret=JBSWY3DPEHPK3PXP&digits=8","0","","2024-03-05T10:11:12Z"
                "Root","Door","","","","1234","","0","",""
                """
            return [
                Array(bitwarden.utf8), Array(keepass.utf8), Array("[\(keepass)]".utf8), document().jsonBytes,
                Array(logins.utf8), Array(csv.utf8),
            ]
        },
        run: { input in
            guard case .clearText(let contents)? = try? ImportFile(bytes: input, now: Date(timeIntervalSince1970: 0))
            else { return }
            checkImported(contents)
        })
}

extension ExchangeTargets {
    static let otpauthURI: FuzzTarget = FuzzTarget(
        name: "otpauth-uri",
        summary: "an otpauth:// URI: refused, or read with parameters in range and written back to the same code",
        seeds: {
            [
                "otpauth://totp/ACME%20Co:john@example.com?secret=HXDMVJECJJWSRB3HWIZR4IFUGFTMXBOZ&issuer=ACME%20Co"
                    + "&algorithm=SHA1&digits=6&period=30",
                "otpauth://totp/a?secret=JBSWY3DPEHPK3PXP&algorithm=sha512&digits=8&period=60",
                "otpauth://hotp/a?secret=JBSWY3DPEHPK3PXP&counter=0", "otpauth://totp/a?secret=JBSWY3DP!",
            ].map { Array($0.utf8) }
        },
        run: { input in
            guard let text = String(validating: input, as: UTF8.self), let uri = try? OTPAuthURI(parsing: text)
            else { return }
            expect(uri.parameters.isValid && !uri.secret.isEmpty, "an accepted URI has parameters out of range")
            let again = try? OTPAuthURI(parsing: uri.uri)
            expect(
                again?.secret == uri.secret && again?.parameters == uri.parameters,
                "an otpauth URI did not read back as it was written")
        })
}

extension Array where Element == UInt8 {
    fileprivate var base64URL: String {
        Data(self).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(
            of: "/", with: "_"
        )
        .replacingOccurrences(of: "=", with: "")
    }
}

extension JSONEncoder {
    /// A JSON string literal for `text`.
    fileprivate static func string(_ text: String) -> [UInt8] { Array((try? JSONEncoder().encode(text)) ?? Data()) }
}
